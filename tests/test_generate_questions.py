"""Question generation (testset/): the keep / drop rules, each exercised with known replies
through the project's OpenAI-compatible server (a scripted model behind it stands in for a paid remote one),
resuming after a failure, clear errors, and one run of the real embedded SmolLM2 through its config."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from eval.align import align
from eval.benchmarks import load_benchmark
from eval.corpus.parsers import ParsedDocument
from eval.corpus.questions import language_of
from eval.metrics.text import normalize_en, tokens
from llm.server import OpenAICompatServer
from testset.checks import REASONS, first_json_object
from testset.cli import main
from testset.plan import DEPTHS, TYPES, plan
from testset.prompts import EXAMPLES, prompt_hash, task_prompt
from testsupport.scripted import ScriptedModel

# -- a scripted model behind the real server ------------------------------------------------------------
GOOD = {"question": "Which engineer designed the bridge over the Elbe at Dornstadt?", "answer": "Karl Weber",
        "quote": "It was designed by the engineer Karl Weber."}
DOCS = {  # file -> (text, the model's reply to a prompt showing that text)
    "good.txt": ("Report on Dornstadt. The bridge over the Elbe at Dornstadt was finished in 1892. It was designed "
                 "by the engineer Karl Weber. Its three arches are built of red sandstone.",
                 "Sure! Here is the JSON you asked for:\n```json\n" + json.dumps(GOOD) + "\n```"),
    "dup.md": ("# Dornburg\n\nThe old bridge over the Elbe at Dornburg was designed by the engineer Karl Weber as "
               "well. It carries the railway.",
               json.dumps({"question": "Which engineer designed the old bridge over the Elbe at Dornburg?",
                           "answer": "Karl Weber", "quote": "The old bridge over the Elbe at Dornburg was designed "
                                                            "by the engineer Karl Weber as well."})),
    "unaligned.txt": ("The harbour of Kestrel Bay handles grain and timber. Ships arrive from Norway each spring.",
                      json.dumps({"question": "What does the harbour of Kestrel Bay export to Spain?",
                                  "answer": "olive oil", "quote": "The harbour exports olive oil to Spain every "
                                                                  "winter."})),
    "notinquote.txt": ("The Lindqvist library opened in 1931. Its reading room seats two hundred readers.",
                       json.dumps({"question": "When did the Lindqvist library open its doors?", "answer": "1931",
                                   "quote": "Its reading room seats two hundred readers."})),
    "wronglang.txt": ("The Marrow Valley railway carried coal from the mines to the coast for sixty years.",
                      json.dumps({"question": "马罗谷铁路运送什么货物到海岸？", "answer": "coal",
                                  "quote": "The Marrow Valley railway carried coal from the mines to the coast"},
                                 ensure_ascii=False)),
    "preamble.txt": ("The Osprey lighthouse was built on a granite rock. Its lamp burns paraffin.",
                     "Sure, here are some questions about the text:\n1. What was the Osprey lighthouse built on?\n"
                     "2. What does its lamp burn?"),
    "giveaway.txt": ("The Quarry museum shows fossils of fish found in the slate.",
                     json.dumps({"question": "What fossils of fish does the Quarry museum show?",
                                 "answer": "fossils of fish", "quote": "The Quarry museum shows fossils of fish"})),
    "badfields.txt": ("Pellworm is an island in the North Sea with a round church tower.",
                      json.dumps({"question": "Which island in the North Sea has a round church tower?",
                                  "quote": "Pellworm is an island in the North Sea"})),
    "copied.txt": ("The Tamsin mill grinds oats for the village.",  # the reply copies the prompt's worked example
                   json.dumps(EXAMPLES["en"]["locate"])),
    "capital.txt": ("Paris is the capital of France. The city lies on the Seine.",
                    json.dumps({"question": "Which city is the capital of France?", "answer": "Paris",
                                "quote": "Paris is the capital of France."})),
}
EXPECTED_DROPS = {"copied_example": 1, "duplicate": 1, "quote_not_found": 1, "answer_not_in_quote": 1,
                  "wrong_language": 1, "not_json": 1, "answer_in_question": 1, "bad_fields": 1,
                  "answerable_closed_book": 1}
UNANSWERABLE_DOCS = {
    "weber.txt": ("Karl Weber designed the Elbe bridge at Dornstadt. The bridge has three arches of red sandstone.",
                  json.dumps({"question": "In which year was Karl Weber born?", "entity": "Karl Weber",
                              "guess": "1850"})),
    "holm.txt": ("Greta Holm founded the Holm bakery in Visby. The bakery sells rye bread.",
                 json.dumps({"question": "Where did Greta Holm learn baking?", "entity": "Greta Holm",
                             "guess": "Visby"})),
    "arden.txt": ("Castle Arden stands on a hill above the river Test.",
                  json.dumps({"question": "When was Napoleon crowned?", "entity": "Napoleon", "guess": "1804"})),
}
CHINESE_DOCS = {
    "qingshi.txt": ("青石桥位于清河镇，建于1756年。它由工匠李明设计。桥下的河水终年不冻。",
                    json.dumps({"question": "清河镇的青石桥是谁设计的？", "answer": "李明",
                                "quote": "它由工匠李明设计。"}, ensure_ascii=False)),
}
FILLER = " The courtyard is paved with old stones and a well stands in the middle of it." * 2
COMPARE_DOCS = {
    "towers.txt": ("The north tower of Castle Arden is 40 metres tall." + FILLER
                   + " The south tower of Castle Arden is 25 metres tall.",
                   json.dumps({"question": "Which tower of Castle Arden is taller, the north or the south one?",
                               "answer": "north tower",
                               "quote": ["The north tower of Castle Arden is 40 metres tall.",
                                         "The south tower of Castle Arden is 25 metres tall."]})),
    "gates.txt": ("The east gate of Fort Kell was built in 1710." + FILLER + " The west gate of Fort Kell was built "
                  "in 1750.",
                  json.dumps({"question": "When was the east gate of Fort Kell built, and by whom?",
                              "answer": "1710", "quote": ["The east gate of Fort Kell was built in 1710."]})),
}


class DocumentScript(ScriptedModel):
    """The scripted model (testsupport/scripted.py) answering each generation prompt with the reply scripted for
    the document text it shows, and a closed-book question with "Paris." for France and "I do not know." for
    anything else. `fail` makes a request for that document's text fail (the server answers HTTP 400)."""

    def __init__(self, docs: dict[str, tuple[str, str]]):
        super().__init__(model_id="scripted")
        self.docs = docs
        self.fail: str | None = None

    def reply(self, prompt) -> str:
        user = prompt.user
        if user.startswith("Answer the question in a few words."):
            return "Paris." if "capital of France" in user else "I do not know."
        shown = re.findall(r'"""(.*?)"""', user, flags=re.S)[-1]
        for name, (text, reply) in self.docs.items():
            if shown.strip() in text:
                if name == self.fail:
                    raise ValueError(f"scripted failure on {name}")
                return reply
        raise AssertionError(f"no scripted reply for {shown[:60]!r}")


def _folder(path: Path, docs: dict[str, tuple[str, str]]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    for name, (text, _) in docs.items():
        (path / name).write_text(text, encoding="utf-8")
    return path


def _generator_yaml(path: Path, server) -> Path:
    path.write_text("backend: openai\nmodel: scripted\nbase_url: " + server.url + "\napi_key_env: null\n"
                    "tokenizer: bundled:smollm2\ncontext_window: 8192\nstream: false\nmax_retries: 0\n"
                    "timeout_s: 30\nmax_concurrency: 1\n", encoding="utf-8")
    return path


def _generate(docs: Path, out: Path, generator: str | Path, *extra: str) -> int:
    return main(["--docs", str(docs), "--out", str(out), "--generator", str(generator), "--yes", "--no-progress",
                 "--cache-dir", str(out.parent / "cache"), *extra])


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _load(docs: Path, questions: Path):
    return load_benchmark({"name": "corpus", "path": str(docs), "questions": str(questions)})


@pytest.fixture(scope="module")
def scripted(tmp_path_factory):
    """The project's server over a scripted model, and a generator config (a YAML file) pointing at it."""
    model = DocumentScript({**DOCS, **UNANSWERABLE_DOCS, **COMPARE_DOCS, **CHINESE_DOCS})
    with OpenAICompatServer(model) as server:
        yield model, server, _generator_yaml(tmp_path_factory.mktemp("conf") / "scripted.yaml", server)


@pytest.fixture(scope="module")
def locate_run(scripted, tmp_path_factory):
    """One run of `locate` items, one per document (--n is the number of documents), dropping closed-book answers."""
    model, server, conf = scripted
    base = tmp_path_factory.mktemp("locate")
    docs, out = _folder(base / "docs", DOCS), base / "out" / "questions.jsonl"
    before = len(model.prompts)
    code = _generate(docs, out, conf, "--n", str(len(DOCS)), "--types", "locate", "--drop-closed-book")
    return code, docs, out, model.prompts[before:]


def test_each_keep_rule_drops_its_scripted_reply_and_counts_it(locate_run, capsys):
    code, _, out, _ = locate_run
    assert code == 0
    summary = json.loads(out.with_suffix(".summary.json").read_text())
    assert summary["kept"] == 1 and summary["planned"] == len(DOCS)
    assert {r: c for r, c in summary["dropped"].items() if c} == EXPECTED_DROPS
    assert summary["kept"] + summary["dropped_total"] == summary["planned"]
    (row,) = _rows(out)
    # the preamble before the JSON does not matter; of the two near-duplicates, the one asked first is kept
    assert row["answers"] == ["Karl Weber"] and row["documents"][0] in ("good.txt", "dup.md")
    assert row["question"] in (GOOD["question"], json.loads(DOCS["dup.md"][1])["question"])


def test_a_kept_item_carries_its_evidence_provenance_and_overlap(locate_run):
    _, docs, out, prompts = locate_run
    (row,) = _rows(out)
    text = (docs / row["documents"][0]).read_text()
    (evidence,) = row["evidence"]
    assert evidence in text and "Karl Weber" in evidence  # the document's own text at the aligned span
    prov = row["provenance"]
    assert prov["generator"] == "scripted" and prov["backend"] == "openai" and prov["seed"] == 0
    assert prov["source"]["document"] == row["documents"][0] and prov["source"]["depth"] in DEPTHS
    assert 0 <= prov["source"]["start"] < prov["source"]["end"] <= len(text)
    sent = [p for p in prompts if row["question"] not in p.user and not p.user.startswith("Answer the question")]
    assert prov["prompt_hash"] in {prompt_hash(p.system, p.user) for p in sent}
    assert prov["closed_book_answer"] == "I do not know."
    assert row["type"] == row["task"] == "locate" and 0 < row["lexical_overlap"] <= 1
    assert row["overlap_bucket"] in ("low", "mid", "high")


def test_the_questions_file_and_its_review_csv_load_as_benchmark_corpus(locate_run):
    _, docs, out, _ = locate_run
    (row,) = _rows(out)
    for questions in (out, out.with_suffix(".csv")):
        result = _load(docs, questions)
        (sample,) = result.samples
        assert sample.id == row["id"] and sample.answers == ["Karl Weber"] and sample.task == "locate"
        (span,) = sample.evidence
        assert span.quality == 1.0 and sample.context[span.start:span.end] == row["evidence"][0]
    header = out.with_suffix(".csv").read_text(encoding="utf-8").splitlines()[0].split(",")
    assert "approve" in header and "question" in header


def test_a_rerun_asks_nothing_again_and_writes_the_same_file(scripted, locate_run):
    model, _, conf = scripted
    code, docs, out, _ = locate_run
    first = out.read_text()
    before = len(model.prompts)
    assert _generate(docs, out, conf, "--n", str(len(DOCS)), "--types", "locate", "--drop-closed-book") == 0
    assert len(model.prompts) == before  # every reply came from the response cache
    assert out.read_text() == first
    assert json.loads(out.with_suffix(".summary.json").read_text())["calls"]["answered_by_backend"] == 0


def test_unanswerable_items_are_about_the_document_and_their_answer_is_not_in_it(scripted, tmp_path):
    _, _, conf = scripted
    docs, out = _folder(tmp_path / "docs", UNANSWERABLE_DOCS), tmp_path / "out" / "q.jsonl"
    assert _generate(docs, out, conf, "--n", "3", "--types", "unanswerable", "--drop-closed-book") == 0
    summary = json.loads(out.with_suffix(".summary.json").read_text())
    assert {r: c for r, c in summary["dropped"].items() if c} == {"unanswerable_answer_in_document": 1,
                                                                  "unanswerable_off_document": 1}
    (row,) = _rows(out)
    assert row["question"] == "In which year was Karl Weber born?" and row["answers"] == ["unanswerable"]
    assert row["evidence"] == [] and row["provenance"]["guess"] == ["1850"]
    assert "closed_book_answer" not in row["provenance"]  # an unanswerable item is not asked closed-book
    assert summary["calls"]["asked"] == 3
    for questions in (out, out.with_suffix(".csv")):
        (sample,) = _load(docs, questions).samples
        assert sample.answers == ["unanswerable"] and sample.evidence == [] and sample.task == "unanswerable"


def test_a_compare_item_needs_a_quote_from_each_of_its_two_passages(scripted, tmp_path):
    _, _, conf = scripted
    docs, out = _folder(tmp_path / "docs", COMPARE_DOCS), tmp_path / "out" / "q.jsonl"
    assert _generate(docs, out, conf, "--n", "2", "--types", "compare", "--passage-chars", "200") == 0
    summary = json.loads(out.with_suffix(".summary.json").read_text())
    assert {r: c for r, c in summary["dropped"].items() if c} == {"compare_one_passage": 1}
    (row,) = _rows(out)
    assert row["documents"] == ["towers.txt"] and len(row["evidence"]) == 2
    first, second = row["provenance"]["passages"]
    assert first["end"] <= second["start"]
    (sample,) = _load(docs, out).samples
    assert len(sample.evidence) == 2 and all(s.quality == 1.0 for s in sample.evidence)


def test_a_chinese_document_is_asked_in_chinese_and_checked_with_chinese_words(scripted, tmp_path):
    model, _, conf = scripted
    docs, out = _folder(tmp_path / "docs", CHINESE_DOCS), tmp_path / "out" / "q.jsonl"
    before = len(model.prompts)
    assert _generate(docs, out, conf, "--n", "1", "--types", "locate") == 0
    (prompt,) = model.prompts[before:]
    assert "JSON" in prompt.system and "问题" in prompt.system and '文字: """青石桥' in prompt.user
    (row,) = _rows(out)
    assert row["language"] == "zh" and row["answers"] == ["李明"] and row["evidence"] == ["它由工匠李明设计。"]
    assert 0 < row["lexical_overlap"] < 1  # 设计 is in the quote; 清河镇 and 青石桥 are not
    (sample,) = _load(docs, out).samples
    assert sample.language == "zh" and sample.evidence[0].quality == 1.0


def test_a_failing_generator_stops_with_a_clear_error_and_the_rerun_asks_only_the_rest(scripted, tmp_path,
                                                                                         capsys):
    model, _, conf = scripted
    good = {k: DOCS[k] for k in ("good.txt", "unaligned.txt", "notinquote.txt", "capital.txt")}
    docs, out = _folder(tmp_path / "docs", good), tmp_path / "out" / "q.jsonl"
    plan_order = [t.document for t in plan([ParsedDocument(n, t) for n, (t, _) in good.items()], 4, ["locate"], 0)]
    model.fail = plan_order[2]  # the third request fails
    before = len(model.prompts)
    try:
        assert _generate(docs, out, conf, "--n", "4", "--types", "locate") == 1
    finally:
        model.fail = None
    err = capsys.readouterr().err
    assert "error: the generator 'scripted' (openai) failed on item 2" in err and "run the same command again" in err
    written = _rows(out)
    assert len(model.prompts) - before == 3
    assert json.loads(out.with_suffix(".summary.json").read_text())["interrupted"] is True
    asked = len(model.prompts)
    assert _generate(docs, out, conf, "--n", "4", "--types", "locate") == 0
    assert len(model.prompts) - asked == 2  # the failed item and the one never asked; the first two were cached
    rows = _rows(out)
    assert rows[:len(written)] == written and {r["documents"][0] for r in rows} == {"good.txt", "capital.txt"}


def test_the_estimate_is_printed_before_any_call(scripted, tmp_path, capsys):
    _, _, conf = scripted
    docs, out = _folder(tmp_path / "docs", {"good.txt": DOCS["good.txt"]}), tmp_path / "out" / "q.jsonl"
    assert _generate(docs, out, conf, "--n", "3", "--types", "locate,reason", "--drop-closed-book") == 0
    err = capsys.readouterr().err
    assert "estimate: 3 generation calls (0 already cached, 3 to ask) + up to 3 closed-book calls" in err
    assert "kept " in err and "dropped: " in err


@pytest.mark.parametrize("setup, args, message", [
    ("empty", [], "no document could be read"),
    ("unsupported", [], "unknown extension '.xyz'"),
    ("missing", [], "is not a folder"),
    ("good", ["--generator", "no_such_model"], "not a name in conf/generator/"),
    ("good", ["--generator", "none"], "generates nothing"),
    ("good", ["--types", "locate,essay"], "unknown ['essay']"),
    ("good", ["--out", "questions.txt"], "must end in .jsonl"),
])
def test_bad_input_is_a_one_line_error(tmp_path, capsys, setup, args, message):
    docs = tmp_path / "docs"
    if setup != "missing":
        docs.mkdir()
    if setup == "unsupported":
        (docs / "notes.xyz").write_text("text")
    if setup == "good":
        (docs / "a.txt").write_text(DOCS["good.txt"][0])
    argv = ["--docs", str(docs), "--out", str(tmp_path / "q.jsonl"), "--yes", "--cache-dir", str(tmp_path / "c")]
    if "--out" in args:
        argv = argv[:2] + argv[4:]
    assert main(argv + args) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") or "\nerror: " in err
    assert message in err


def test_first_json_object_reads_json_and_never_free_text():
    assert first_json_object('Sure! {"question": "Q?", "answer": "A"} and {"other": 1}') == {"question": "Q?",
                                                                                            "answer": "A"}
    assert first_json_object('```json\n{"a": {"b": [1, 2]}}\n```') == {"a": {"b": [1, 2]}}
    assert first_json_object('{not json} then {"a": "}"}') == {"a": "}"}
    assert first_json_object("Question: What is it?\nAnswer: a bridge") is None
    assert first_json_object('{"question": "cut off') is None
    assert first_json_object("[1, 2]") is None


def _long_docs() -> list[ParsedDocument]:
    return [ParsedDocument(f"d{i}.txt", " ".join(f"Sentence {j} of document {i} is here." for j in range(400)))
            for i in range(3)]


def test_plan_is_seeded_and_spreads_over_documents_depths_and_types():
    docs = _long_docs()
    tasks = plan(docs, 24, TYPES, seed=0)
    assert [t.passages for t in tasks] == [t.passages for t in plan(docs, 24, TYPES, seed=0)]
    assert [t.passages for t in tasks] != [t.passages for t in plan(docs, 24, TYPES, seed=1)]
    assert {t.type: sum(x.type == t.type for x in tasks) for t in tasks} == {t: 6 for t in TYPES}
    for doc in docs:
        mine = [t for t in tasks if t.document == doc.doc_id]
        assert len(mine) == 8
        assert {p.depth for t in mine for p in t.passages} == set(DEPTHS)
    every = [p for t in tasks for p in t.passages]
    assert len(set(every)) == len(every)  # no passage asked about twice
    by_doc = {d.doc_id: d for d in docs}
    for t in tasks:
        assert len(t.passages) == (2 if t.type == "compare" else 1)
        for p in t.passages:
            text = by_doc[p.document].text
            assert p.start == 0 or text[p.start - 1] == " "  # starts at a sentence, not inside a word
            third = len(text) // 3
            assert DEPTHS.index(p.depth) == min(2, p.start // third)


def test_the_prompt_shows_the_passage_an_example_and_asks_for_json():
    docs = _long_docs()
    by_doc = {d.doc_id: d for d in docs}
    for t in plan(docs, 4, TYPES, seed=0):
        system, user = task_prompt(t, by_doc, "en")
        assert "JSON" in system and user.endswith("JSON:")
        for p in t.passages:
            assert by_doc[p.document].text[p.start:p.end].strip() in user
        example = json.loads(user.split("JSON: ", 1)[1].split("\n")[0])
        assert set(example) == ({"question", "entity", "guess"} if t.type == "unanswerable"
                                else {"question", "answer", "quote"})


# -- the real embedded model, through conf/generator/smollm2.yaml --------------------------------------------
@pytest.fixture(scope="module")
def smollm2_run(tmp_path_factory):
    """SmolLM2 asked for 4 items (one of each type) over two short documents, closed-book answers dropped."""
    base = tmp_path_factory.mktemp("smollm2")
    docs = _folder(base / "docs", {"bridge.txt": (DOCS["good.txt"][0] + " " + DOCS["capital.txt"][0], ""),
                                   "harbour.txt": (DOCS["unaligned.txt"][0] + " " + DOCS["notinquote.txt"][0], "")})
    out = base / "out" / "q.jsonl"
    # one torch thread: on a shared CPU, two threads per process oversubscribe the cores (10x slower decoding)
    code = _generate(docs, out, "smollm2", "--set", "threads=1", "--n", "4", "--drop-closed-book",
                     "--max-new-tokens", "96")
    return code, docs, out


@pytest.mark.integration  # SmolLM2 writes 4 items and answers them closed-book: ~40 s on 2 cores
def test_smollm2_every_item_is_kept_by_the_rules_or_counted_under_a_reason(smollm2_run):
    code, docs, out = smollm2_run
    assert code == 0
    summary = json.loads(out.with_suffix(".summary.json").read_text())
    assert set(summary["dropped"]) == set(REASONS)
    assert summary["kept"] + summary["dropped_total"] == summary["planned"] == 4
    assert summary["planned_by_type"] == {t: 1 for t in TYPES}
    assert summary["generator"] == "bundled:smollm2" and summary["calls"]["asked"] >= 4
    rows = _rows(out)
    assert len(rows) == summary["kept"]
    seen: list[set[str]] = []
    for row in rows:
        text = (docs / row["documents"][0]).read_text()
        assert language_of(row["question"]) == language_of(text) == "en"
        if row["type"] == "unanswerable":
            assert row["answers"] == ["unanswerable"] and row["evidence"] == []
        else:
            for quote in row["evidence"]:
                assert align(quote, text).quality >= 0.8
            assert normalize_en(row["answers"][0]) in normalize_en(" ".join(row["evidence"]))
        words = set(tokens(row["question"], "en"))
        assert all(len(words & s) / len(words | s) < 0.7 for s in seen)
        seen.append(words)
    if rows:
        assert len(_load(docs, out).samples) == len(rows)
