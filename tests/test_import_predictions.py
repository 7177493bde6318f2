"""Bring your own predictions (issue 18, item 3): files from elsewhere become run directories the report
reads; ids are checked across arms, never guessed; LaRA's released prediction files import by question."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.importers.predictions import build_parser, run_import
from experiments.records import read_records
from experiments.report.page.build import build_report
from experiments.report.settings import load_settings
from tests.conftest import ROOT, SHARED_DATA
from tests.test_lara import BOOK, make_clone

ANSWER = "the silver lantern"


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _two_arms(n_docs: int = 8, per_doc: int = 2) -> list[dict]:
    """RAG answers every question right; long context only the first question of each document, and says
    the same as RAG there."""
    rows = []
    for d in range(n_docs):
        for q in range(per_doc):
            sid = f"q{d}-{q}"
            base = {"id": sid, "answers": [ANSWER], "group": f"doc{d}", "level": "8k" if d % 2 else "32k",
                    "model": "m1"}
            rows.append({**base, "arm": "rag", "config": "my rag", "prediction": "The silver lantern.",
                         "prompt_tokens": 900, "latency_s": 0.5})
            rows.append({**base, "arm": "longctx", "config": "my long context",
                         "prediction": "The silver lantern." if q == 0 else "a brass bell"})
    return rows


def _agreement_rows(md: str) -> dict[str, str]:
    """The report's agreement table, row by level."""
    table = md.split("### Agreement: long context vs best RAG", 1)[1].split("\n\n")[1]
    return {line.split(" | ")[1]: line for line in table.splitlines()[2:]}


def _import(*argv: str) -> dict:
    return run_import(build_parser().parse_args([*argv, "--no-progress"]))


def test_generic_jsonl_two_arms_import_and_report(tmp_path):
    path = _write(tmp_path / "preds.jsonl", _two_arms())
    summary = _import("--format", "jsonl", "--path", str(path), "--metric", "qa_f1", "--out", str(tmp_path / "runs"))
    assert summary["predictions"] == 32 and summary["ids"] == 16 and summary["configs"] == 2
    dirs = {Path(d).name: Path(d) for d in summary["run_dirs"]}
    assert len(dirs) == 2
    rag = next(d for n, d in dirs.items() if "rag" in n)
    records = read_records(rag / "records.jsonl")
    assert len(records) == 16 and {r["status"] for r in records.values()} == {"ok"}
    one = records["q3-1"]
    assert one["score"] == 1.0 and one["group"] == "doc3" and one["length_level"] == "8k"
    assert one["prompt_tokens"] == 900 and "completion_tokens" not in one and one["cost_usd"] is None
    lc = read_records(next(d for n, d in dirs.items() if "longctx" in n) / "records.jsonl")
    assert lc["q3-1"]["score"] == 0.0 and "prompt_tokens" not in lc["q3-1"]

    files = build_report([str(tmp_path / "runs")], tmp_path / "report", load_settings())
    verdict = {r["level"]: r for r in csv.DictReader(files["verdict.csv"].open())}
    assert verdict["all"]["rag_config"] == "my rag" and verdict["all"]["longctx_config"] == "my long context"
    assert float(verdict["all"]["diff_rag_minus_longctx"]) == pytest.approx(50.0) and verdict["all"]["n_groups"] == "8"
    md = files["report.md"].read_text()
    assert "Imported predictions" in md and "scored with `qa_f1`" in md
    # the agreement matrix: 8 both right (and the same answer), 8 only RAG right; per level too
    # (a non-zero outcome count links to those questions in the viewer; the same-answer share does not)
    agreement = _agreement_rows(md)
    assert ("| 16 | [8 (50%)](questions.html#bench=imported&cell=both_right) | 0 (0%) "
            "| [8 (50%)](questions.html#bench=imported&cell=only_rag) | 0 (0%) | 8 (50%) |") in agreement["all"]
    assert ("| 8 | [4 (50%)](questions.html#bench=imported&level=32k&cell=both_right) | 0 (0%) "
            "| [4 (50%)](questions.html#bench=imported&level=32k&cell=only_rag) | 0 (0%) | 4 (50%) |"
            ) in agreement["32k"]
    assert (tmp_path / "report" / "questions.html").exists()
    rows = {r["level"]: r for r in csv.DictReader(files["agreement.csv"].open())}
    assert set(rows) == {"all", "8k", "32k"}
    assert (rows["all"]["n_shared"], rows["all"]["only_rag_right"],
            rows["all"]["same_answer_share"]) == ("16", "8", "0.5")


def test_ids_are_checked_across_arms(tmp_path):
    rows = _two_arms()
    rows = [r for r in rows if not (r["arm"] == "longctx" and r["id"] in ("q0-0", "q1-1"))]
    path = _write(tmp_path / "preds.jsonl", rows)
    with pytest.raises(ValueError, match=r"longctx / 'my long context' lacks 2 of the ids others have "
                                         r"\(e.g. q0-0, q1-1\)"):
        _import("--format", "jsonl", "--path", str(path), "--metric", "qa_f1", "--out", str(tmp_path / "a"))
    assert not (tmp_path / "a").exists()  # nothing half-written
    summary = _import("--format", "jsonl", "--path", str(path), "--metric", "qa_f1", "--out", str(tmp_path / "b"),
                      "--allow-mismatch")
    assert summary["ids"] == 14 and summary["dropped"] == 2
    metrics = json.loads((Path(summary["run_dirs"][0]) / "metrics.json").read_text())
    assert metrics["imported_from"]["dropped"] == 2 and metrics["n"] == 14
    # a duplicate id within one config is an error naming both lines
    dup = _write(tmp_path / "dup.jsonl", _two_arms()[:2] + _two_arms()[:1])
    with pytest.raises(ValueError, match=r"dup.jsonl:3: id 'q0-0' again for arm rag.*first at .*dup.jsonl:1"):
        _import("--format", "jsonl", "--path", str(dup), "--metric", "qa_f1", "--out", str(tmp_path / "c"))


@pytest.mark.parametrize("line, message", [
    ("not json", r"bad.jsonl:2: not a JSON line"),
    (json.dumps({"id": "x", "arm": "hybrid", "config": "c", "prediction": "p", "answers": ["a"]}),
     r"bad.jsonl:2: field `arm`"),
    (json.dumps({"id": "x", "arm": "rag", "config": "c", "prediction": "p"}), r"bad.jsonl:2: field `answers`"),
    (json.dumps({"id": "x", "arm": "rag", "config": "c", "prediction": 3, "answers": ["a"]}),
     r"bad.jsonl:2: field `prediction`"),
    (json.dumps({"id": "x", "arm": "rag", "config": "c", "prediction": "p", "answers": ["a"], "latency_s": -1}),
     r"bad.jsonl:2: field `latency_s`"),
])
def test_bad_lines_name_file_line_and_field(tmp_path, line, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(_two_arms()[0]) + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        _import("--format", "jsonl", "--path", str(path), "--metric", "qa_f1", "--out", str(tmp_path / "o"))


@pytest.mark.skipif(not (SHARED_DATA / "loogle").exists(), reason="../shared/data/loogle absent")
def test_the_benchmark_supplies_answers_groups_and_metric(tmp_path):
    from eval.benchmarks import load_benchmark

    samples = load_benchmark({"name": "loogle", "path": str(SHARED_DATA / "loogle"), "tasks": ["shortdep_qa"],
                              "limit": 6}).samples
    rows = [{"id": s.id, "arm": arm, "config": arm, "prediction": s.answers[0] if arm == "rag" else "no idea"}
            for s in samples for arm in ("rag", "longctx")]
    path = _write(tmp_path / "p.jsonl", rows)
    summary = _import("--format", "jsonl", "--path", str(path), "--benchmark", "loogle", "--benchmark-path",
                      str(SHARED_DATA / "loogle"), "--out", str(tmp_path / "runs"))
    rag = read_records(next(Path(d) for d in summary["run_dirs"] if d.endswith("rag")) / "records.jsonl")
    first = rag[samples[0].id]
    assert (first["group"] == samples[0].group and first["task"] == "shortdep_qa"
            and first["answers"] == samples[0].answers and first["question"] == samples[0].question)
    assert first["score"] > 0.9 and "bleu1" in first["scores"]  # LooGLE's own metric family
    bad = _write(tmp_path / "bad.jsonl", [{**rows[0], "id": "loogle/nope"}])
    with pytest.raises(ValueError, match=r"bad.jsonl:1: id 'loogle/nope' is not a sample of benchmark loogle"):
        _import("--format", "jsonl", "--path", str(bad), "--benchmark", "loogle", "--benchmark-path",
                str(SHARED_DATA / "loogle"), "--out", str(tmp_path / "x"))


# ------------------------------------------------------------------ LaRA's released prediction files
def _released(clone: Path, model: str, predict) -> None:
    """Prediction files in the release's layout: every query line, with `prediction` from `predict`."""
    folder = clone / "evaluation" / "prediction" / model
    folder.mkdir(parents=True)
    for query in sorted((clone / "datasets" / "query").glob("*.jsonl")):
        rows = [json.loads(x) for x in query.read_text(encoding="utf-8").splitlines()]
        for kind in ("full", "rag"):
            out = [{k: r[k] for k in ("type", "level", "file", "question")} | {
                "prediction": predict(kind, r), "ground_truth": r["answer"]} for r in rows]
            (folder / f"{kind}_preds_{model}_{query.name}").write_text(
                "\n".join(json.dumps(o, ensure_ascii=False) for o in out), encoding="utf-8")


def test_lara_released_predictions_import_and_agree(tmp_path):
    clone = make_clone(tmp_path / "LaRA")

    def predict(kind, row):
        if kind == "full" and row["level"] == "comp":
            return False  # the release's failed API call
        if kind == "rag" and row["level"] == "hallu":
            return "I cannot find that in the text."  # a refusal
        return row["answer"]

    _released(clone, "tiny-model", predict)
    summary = _import("--format", "lara", "--path", str(clone), "--model", "tiny-model",
                      "--out", str(tmp_path / "runs"))
    assert summary["ids"] == 18 and summary["configs"] == 2 and summary["unmatched"] == 0
    runs = {Path(d).name: read_records(Path(d) / "records.jsonl") for d in summary["run_dirs"]}
    full = next(v for k, v in runs.items() if "longctx" in k)
    rag = next(v for k, v in runs.items() if k.endswith("rag"))
    assert (full["lara/32k_book_comp/0"]["status"] == "failed"
            and "model call failed" in full["lara/32k_book_comp/0"]["reason"])
    assert full["lara/32k_book_location/1"]["group"] == f"lara/32k/book/{BOOK}"
    # the question's text, from the release's files: a router reads its wording
    assert all(r["question"].strip() for run in runs.values() for r in run.values())
    assert rag["lara/128k_paper_hallu/0"]["score"] == 1.0  # lara_auto credits the refusal
    assert (full["lara/128k_paper_location/0"]["score"] == 1.0
            and full["lara/128k_paper_location/0"]["length_level"] == "128k")
    files = build_report([str(tmp_path / "runs")], tmp_path / "report", load_settings())
    md = files["report.md"].read_text()
    # 18 ids, the 4 comparison questions failed in long context: 14 shared, all right on both arms (the refusals
    # credited); the same answer except the 4 hallucination questions (gold answer vs a refusal in other words)
    assert ("| 14 | [14 (100%)](questions.html#bench=lara&cell=both_right) | 0 (0%) | 0 (0%) | 0 (0%) | 10 (71%) |"
            in _agreement_rows(md)["all"])
    assert "scored with `lara_auto`" in md


def test_lara_predictions_that_match_no_question_are_reported(tmp_path):
    clone = make_clone(tmp_path / "LaRA")
    _released(clone, "m", lambda kind, row: row["answer"])
    path = clone / "evaluation" / "prediction" / "m" / "rag_preds_m_32k_book_hallu.jsonl"
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    rows[0]["question"] = "A question the query files do not have?"
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    with pytest.raises(ValueError, match=r"1 LaRA predictions match no question.*rag_preds_m_32k_book_hallu.jsonl:1"):
        _import("--format", "lara", "--path", str(clone), "--model", "m", "--out", str(tmp_path / "a"))
    # left out on request: then that id is missing from the rag config and, with it, from both
    summary = _import("--format", "lara", "--path", str(clone), "--model", "m", "--out", str(tmp_path / "b"),
                      "--allow-mismatch")
    assert summary["unmatched"] == 1 and summary["dropped"] == 1 and summary["ids"] == 17
    with pytest.raises(ValueError, match="no such prediction folder; models here: m"):
        _import("--format", "lara", "--path", str(clone), "--model", "gpt-5", "--out", str(tmp_path / "c"))


def test_the_command_line(tmp_path, capsys):
    """`python -m experiments.import` as a user runs it; its error path through the same `main(argv)` in-process."""
    from experiments.importers.predictions import main

    path = _write(tmp_path / "preds.jsonl", _two_arms(2, 1))
    res = subprocess.run([sys.executable, "-m", "experiments.import", "--format", "jsonl", "--path", str(path),
                          "--metric", "qa_f1", "--out", str(tmp_path / "runs")], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "imported 4 predictions (2 ids x 2 configs" in res.stdout and "python -m experiments.report" in res.stdout
    capsys.readouterr()
    code = main(["--format", "jsonl", "--path", str(tmp_path / "no"), "--metric", "qa_f1",
                 "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and "no such predictions file" in err
