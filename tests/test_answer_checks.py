"""Answers checked when a corpus's questions load: an answer that can never match, one the question holds, and a
bare number its document's numbering holds are named in a warning and among the run's losses (the report's
"Lost before scoring"); `benchmark.strict_answers=true` refuses them."""

from __future__ import annotations

import json
import logging

import pytest

from eval.benchmarks import load_benchmark
from eval.corpus.answer_checks import IN_QUESTION, NEVER_MATCHES, NUMBERING, answer_problems, numbering_numbers

MANUAL = """<html><head><title>Files</title></head><body><main>
<h1>4. Reading Files<a class="headerlink" href="#x">¶</a></h1>
<h2>4.8.2. Modes</h2>
<p>The mode 'a' opens the file for appending. A whence value of 2 uses the end of the file.</p>
<p>A file holds at most 10 records.</p>
</main></body></html>"""

QUESTIONS = [
    {"id": "ok", "question": "Which mode appends?", "answers": ["'a'"], "documents": ["files.html"]},
    {"id": "article", "question": "Which article?", "answers": ["the"], "documents": ["files.html"]},
    {"id": "echo", "question": "Does the mode 'a' append?", "answers": ["'a'"], "documents": ["files.html"]},
    {"id": "chapter", "question": "Which chapter is about files?", "answers": ["4"], "documents": ["files.html"]},
    {"id": "records", "question": "How many records at most?", "answers": ["10"], "documents": ["files.html"]},
]


def _corpus(tmp_path, rows=QUESTIONS):
    docs = tmp_path / "docs"
    docs.mkdir(parents=True)
    (docs / "files.html").write_text(MANUAL, encoding="utf-8")
    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return {"name": "corpus", "path": str(docs), "questions": str(questions), "cache_dir": None}


def test_each_kind_of_bad_answer_is_named_in_a_warning_and_among_the_losses(tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        result = load_benchmark(_corpus(tmp_path))
    assert len(result.samples) == len(QUESTIONS)  # named, not dropped
    [loss] = [x for x in result.losses if "the metric may score wrongly" in x["kind"]]
    assert loss["count"] == 3
    assert loss["names"] == [f"article: 'the' {NEVER_MATCHES}", f"echo: \"'a'\" {IN_QUESTION}",
                             f"chapter: '4' {NUMBERING}"]
    warned = [r.getMessage() for r in caplog.records if "the metric may score wrongly" in r.getMessage()]
    assert len(warned) == 1 and "article" in warned[0] and "echo" in warned[0] and "chapter" in warned[0]


def test_strict_answers_refuses_the_questions_file_naming_the_answers(tmp_path):
    with pytest.raises(ValueError, match=r"q\.jsonl: 3 answer\(s\) that the metric may score wrongly.*article.*echo"):
        load_benchmark({**_corpus(tmp_path), "strict_answers": True})
    clean = [q for q in QUESTIONS if q["id"] in ("ok", "records")]
    assert len(load_benchmark({**_corpus(tmp_path / "clean", clean), "strict_answers": True}).samples) == 2


def test_the_check_follows_the_metric_the_run_scores_with(tmp_path):
    # contains_all drops the quotes and then the article: 'a' can never match there
    result = load_benchmark({**_corpus(tmp_path), "metric": "contains_all"})
    [loss] = [x for x in result.losses if "the metric may score wrongly" in x["kind"]]
    assert f"ok: \"'a'\" {NEVER_MATCHES}" in loss["names"]


def test_numbering_is_read_from_line_leading_section_and_list_numbers_only():
    text = "4.8.2. Modes\n2. An item\nThere are 10 of them.\n  12 Title\n3.5 is a number in a sentence here"
    assert numbering_numbers(text) == {"4", "8", "2", "12", "3", "5"}
    assert answer_problems("q", "How many?", ["10"], "contains_tokens", "en", [text]) == []
    assert [p.problem for p in answer_problems("q", "How many?", ["08"], "contains_tokens", "en", [text])] == [
        NUMBERING]
    assert answer_problems("q", "Judge it", ["the"], "evidence_judge", "en", [text]) == []  # judges are not checked
