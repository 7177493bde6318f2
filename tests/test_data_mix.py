"""One question set per report: a corpus run records the fingerprint of its documents and questions, the decide
command names its sweep folder after both, and the report refuses to pool runs whose fingerprints differ unless
asked (then its first screen names the mix)."""

from __future__ import annotations

import json

import pytest

from eval.benchmarks import load_benchmark
from experiments.decide import sweep_folder
from experiments.report.page.build import build_report
from experiments.report.settings import load_settings
from experiments.simulate.sweeps import write_run

QUESTIONS = [{"id": f"q{i}", "question": f"What is fact {i}?", "answers": [f"value {i}"], "documents": ["a.txt"]}
             for i in range(4)]


def _corpus(tmp_path, rows):
    docs = tmp_path / "docs"
    docs.mkdir(exist_ok=True)
    (docs / "a.txt").write_text("".join(f"Fact {i} is value {i}.\n" for i in range(6)), encoding="utf-8")
    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return docs, questions


def test_the_fingerprint_and_the_sweep_folder_follow_the_questions_bytes(tmp_path):
    docs, questions = _corpus(tmp_path, QUESTIONS)
    cfg = {"name": "corpus", "path": str(docs), "questions": str(questions), "cache_dir": None}
    before, folder_before = load_benchmark(cfg).notes["data fingerprint"], sweep_folder(str(docs), str(questions))
    assert folder_before == sweep_folder(str(docs), str(questions))  # the same data, the same folder: resumable
    _corpus(tmp_path, [*QUESTIONS[:3], {**QUESTIONS[3], "answers": ["value 5"]}])  # one answer edited
    after = load_benchmark(cfg).notes["data fingerprint"]
    assert after["documents"] == before["documents"] and after["questions"] != before["questions"]
    folder_after = sweep_folder(str(docs), str(questions))
    assert folder_after != folder_before and folder_after.parent == folder_before.parent
    assert folder_after.name.endswith(f"_d{after['documents']}_q{after['questions']}")
    # the folder is handed to Hydra as an override: its grammar must read it, spaces and odd characters included
    from hydra.core.override_parser.overrides_parser import OverridesParser

    odd_docs = tmp_path / "my docs (v1)~x"
    odd_docs.mkdir()
    (odd_docs / "a.txt").write_text("text", encoding="utf-8")
    for folder in (folder_after, sweep_folder(str(odd_docs), str(questions))):
        [parsed] = OverridesParser.create().parse_overrides([f"hydra.sweep.dir={folder}"])
        assert parsed.value() == str(folder)


def _sweep(root, questions_hash, scores):
    """A long-context and a RAG run of one corpus (their config hashes the same whatever the questions file)."""
    for arm, knobs, chash in (("longctx", {}, "lc0"), ("rag", {"retriever": "bm25", "chunk_size": 64, "top_k": 2},
                                                              "rag0")):
        recs = [{"id": f"q{i}", "benchmark": "corpus", "task": "qa", "language": "en", "length_level": "0-8k",
                 "status": "ok", "group": f"doc{i}", "arm": arm, "score": s, "prompt_tokens": 900 if arm == "longctx"
                 else 200, "completion_tokens": 5, "latency_s": 1.0} for i, s in enumerate(scores[arm])]
        write_run(root / arm, {"arm": arm, "benchmark": "corpus", "generator": "sim", **knobs}, recs,
                  extra_metrics={"config_hash": chash,
                                 "data_fingerprint": {"documents": "d0c5d0c5", "questions": questions_hash}})


def test_runs_over_two_question_sets_are_refused_naming_the_folders_then_pooled_when_asked(tmp_path):
    first, second = tmp_path / "sweep~qaaaa", tmp_path / "sweep~qbbbb"
    _sweep(first, "aaaa1111", {"longctx": [1, 0, 1, 0, 1, 0], "rag": [1, 1, 1, 0, 1, 0]})
    _sweep(second, "bbbb2222", {"longctx": [0, 0, 1, 0, 1, 1, 1, 1], "rag": [0, 1, 1, 1, 1, 1, 1, 1]})
    with pytest.raises(ValueError, match="2 different sets of documents or questions") as refused:
        build_report([str(tmp_path)], tmp_path / "report", load_settings())
    assert str(first) in str(refused.value) and str(second) in str(refused.value)
    assert "questions aaaa1111" in str(refused.value) and "--pool-data" in str(refused.value)

    files = build_report([str(tmp_path)], tmp_path / "report", load_settings(), pool_data=True)
    md = files["report.md"].read_text()
    screen = md[:md.index("## ")] if "## " in md else md
    assert "Pooled 2 different sets of documents or questions" in screen
    assert f"{first}: documents d0c5d0c5, questions aaaa1111 (2 run(s))" in screen
    assert f"{second}: documents d0c5d0c5, questions bbbb2222 (2 run(s))" in screen
    summary = files["configs.csv"].read_text()
    assert ",8," in summary or ",8\n" in summary  # each config point pooled: 8 questions (q0..q7), not 6 or 14


def test_one_question_set_reports_as_before(tmp_path):
    _sweep(tmp_path / "only", "aaaa1111", {"longctx": [1, 0, 1, 0], "rag": [1, 1, 1, 0]})
    md = build_report([str(tmp_path)], tmp_path / "report", load_settings())["report.md"].read_text()
    assert "Pooled" not in md
