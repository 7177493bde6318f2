"""Answers a team can write as it means them (issue 54): in a corpus questions file an answer may list
alternatives, any of which counts (`"answers": [["twice", "2"]]`), the outer list still meaning "all of these";
checked at load like other answers (a clear error naming file, line and field), and read alike by what scores,
checks and shows answers."""

from __future__ import annotations

import json

import pytest

from eval.answers import answer_groups, answer_texts, has_alternatives, shown
from eval.benchmarks import load_benchmark
from eval.corpus.answer_checks import IN_QUESTION, NEVER_MATCHES, answer_problems
from eval.data_files import DataError
from eval.evidence_text import answer_in_text
from eval.metrics import reads_alternatives, score

LOOPS = "# Loops\n\nThe body of this loop runs twice before the counter reaches its limit.\n"
GIT = "# git clean\n\nUse `git clean -x` to remove ignored files too; `git clean -X` removes only ignored files.\n"


def _corpus(tmp_path, rows, name="q.jsonl", text=None):
    docs = tmp_path / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    (docs / "loops.md").write_text(LOOPS, encoding="utf-8")
    (docs / "git.md").write_text(GIT, encoding="utf-8")
    questions = tmp_path / name
    questions.write_text(text if text is not None else "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return {"name": "corpus", "path": str(docs), "questions": str(questions), "cache_dir": None}


ROWS = [
    {"id": "loops", "question": "How many times does the body run?", "answers": [["twice", "2"]],
     "documents": ["loops.md"]},
    {"id": "both", "question": "How many times, and what repeats?", "answers": [["twice", "2"], "loop"],
     "documents": ["loops.md"]},
    {"id": "option", "question": "Which option removes only ignored files?", "answers": ["-X"],
     "documents": ["git.md"]},
    {"id": "one", "question": "How often?", "answers": [["twice"]], "documents": ["loops.md"]},
]


def test_a_questions_file_with_alternatives_loads_and_scores_as_it_means(tmp_path):
    samples = {s.id: s for s in load_benchmark(_corpus(tmp_path, ROWS)).samples}
    assert samples["loops"].answers == [["twice", "2"]] and samples["one"].answers == ["twice"]
    assert {s.metric for s in samples.values()} == {"contains_tokens"}

    def right(qid: str, reply: str) -> float:
        return score(samples[qid].metric, reply, samples[qid].reference())["score"]

    assert right("loops", "The answer is: 2") == 1.0 and right("loops", "It runs twice.") == 1.0
    assert right("loops", "It runs three times.") == 0.0
    assert right("both", "The loop runs 2 times.") == 1.0 and right("both", "It runs 2 times.") == 0.0
    assert right("option", "use -x to remove") == 0.0 and right("option", "Use git clean -X.") == 1.0


def test_a_csv_cell_holds_alternatives_as_json(tmp_path):
    text = 'id,question,answers,documents\nloops,How many times?,"[[""twice"", ""2""], ""loop""]",loops.md\n'
    [sample] = load_benchmark(_corpus(tmp_path, [], "q.csv", text)).samples
    assert sample.answers == [["twice", "2"], "loop"]


@pytest.mark.parametrize("answers, message", [
    ([["twice", {"n": 2}]], "entry 1 lists alternatives, which must be text: got dict"),
    (["loop", []], "entry 2 is an empty list of alternatives"),
    ([["twice", ["2"]]], "entry 1 lists alternatives, which must be text: got list"),
    ([True], "entry 1 must be text or a list of alternatives"),
])
def test_a_bad_answer_entry_is_refused_naming_file_line_and_field(tmp_path, answers, message):
    rows = [ROWS[2], {**ROWS[0], "answers": answers}]
    with pytest.raises(DataError) as err:
        load_benchmark(_corpus(tmp_path, rows))
    assert err.value.source.endswith("q.jsonl") and err.value.line == 2 and err.value.field == "answers"
    assert message in str(err.value)


def test_alternatives_under_a_metric_that_reads_plain_texts_are_refused(tmp_path):
    assert reads_alternatives("contains_tokens") and reads_alternatives("contains_all")
    assert not reads_alternatives("qa_f1")
    with pytest.raises(DataError, match=r"q\.jsonl:1: field 'answers': lists alternatives .*'qa_f1'.*contains_tokens"):
        load_benchmark({**_corpus(tmp_path, ROWS), "metric": "qa_f1"})
    plain = [ROWS[2]]  # no alternatives: any metric may still be named
    assert len(load_benchmark({**_corpus(tmp_path / "plain", plain), "metric": "qa_f1"}).samples) == 1


def test_each_alternative_is_checked_at_load_as_an_answer_of_its_own():
    problems = answer_problems("q", "Is it twice?", [["the", "twice"], "2"], "contains_tokens", "en", [])
    assert [(p.answer, p.problem) for p in problems] == [("the", NEVER_MATCHES), ("twice", IN_QUESTION)]


def test_what_reads_answers_reads_alternatives():
    answers = [["twice", "2"], "loop", "  "]
    assert answer_groups(answers) == [["twice", "2"], ["loop"]] and has_alternatives(answers)
    assert answer_texts(answers) == ["twice", "2", "loop"] and not has_alternatives(["a", ["b"]])
    assert [shown(a) for a in answers[:2]] == ["twice or 2", "loop"]
    assert answer_in_text([["twice", "2"]], "the body runs 2 times") is True  # "answer in the context"
    assert answer_in_text([["twice", "2"]], "the body runs once") is False
    assert score("refusal", "2", _ref([["unanswerable", "2"]]))["score"] == 1.0


def _ref(answers):
    from eval.sample import Reference

    return Reference(answers=answers, language="en")
