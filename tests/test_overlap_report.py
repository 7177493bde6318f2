"""The report's split of each config's score and evidence recall by lexical-overlap bucket and by whether the
evidence lies on PDF pages (experiments/report/page/sections/overlap.py), and the records that carry what it splits
by."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments import records as schema
from experiments.report.page.sections.overlap import split_rows, spread
from experiments.report.runs import Run


def _record(i: int, overlap: float | None, score: float, recall: float, pages: list[str] | None = None) -> dict:
    rec = {"id": f"q{i}", "benchmark": "corpus", "task": "locate", "language": "en", "length_level": "all",
           "group": f"d{i % 3}", "arm": "rag", "status": schema.OK, "score": score,
           "evidence_recall": {"1": recall / 2, "5": recall, "10": recall}}
    if overlap is not None:
        rec["lexical_overlap"] = overlap
    if pages:
        rec["evidence_pages"] = pages
    return rec


def _run(records: list[dict], **knobs) -> Run:
    return Run(Path("/nowhere"), {"knobs": {"arm": "rag", "benchmark": "corpus", "label": "bm25 c256 k4", **knobs}},
               records=records)


def test_each_bucket_holds_its_questions_scores_and_recall_at_5():
    # low overlap: wrong and unfound; high overlap: right and found; mid: half
    recs = ([_record(i, 0.1, 0.0, 0.0) for i in range(4)] + [_record(10 + i, 0.45, 1.0 if i % 2 else 0.0, 0.5)
            for i in range(2)] + [_record(20 + i, 0.9, 1.0, 1.0, ["a.pdf p2"]) for i in range(3)])
    rows = {(r.split, r.part): r for r in split_rows([_run(recs)])}
    low, mid, high = rows["overlap", "low"], rows["overlap", "mid"], rows["overlap", "high"]
    assert (low.n, low.score, low.recall) == (4, 0.0, 0.0)
    assert (mid.n, mid.score, mid.recall) == (2, 50.0, 0.5)
    assert (high.n, high.score, high.recall, high.recall_at) == (3, 100.0, 1.0, 5)
    pdf, other = rows["evidence", "PDF pages"], rows["evidence", "elsewhere"]
    assert (pdf.n, pdf.recall) == (3, 1.0) and other.n == 6
    assert spread(list(rows.values())) == {"bm25 c256 k4": 1.0}


def test_runs_without_overlap_or_pages_give_no_rows_and_a_missing_bucket_has_no_figures():
    assert split_rows([_run([_record(1, None, 1.0, 1.0)])]) == []
    rows = split_rows([_run([_record(1, 0.95, 1.0, 1.0)])])
    low = next(r for r in rows if r.part == "low")
    assert (low.n, low.score, low.recall) == (0, None, None)
    assert spread(rows) == {}  # no low bucket to compare with


def test_the_record_carries_the_sample_overlap_and_the_contract_knows_the_key():
    from eval.sample import PromptTemplate, Sample

    sample = Sample(id="q1", benchmark="corpus", task="locate", language="en", length_level="all", context="x",
                    question="Who?", answers=["A"], template=PromptTemplate("{context}{question}"),
                    metric="contains_all", metadata={"lexical_overlap": 0.25, "evidence_pages": ["a.pdf p2"]})
    base = schema.base_record(sample, "rag", "abc")
    assert base["lexical_overlap"] == pytest.approx(0.25) and "lexical_overlap" in schema.RECORD_KEYS
    assert base["evidence_pages"] == ["a.pdf p2"] and "evidence_pages" in schema.RECORD_KEYS
    sample.metadata.pop("lexical_overlap")
    assert "lexical_overlap" not in schema.base_record(sample, "rag", "abc")


def test_the_report_shows_the_split_writes_overlap_csv_and_notes_question_groups(tmp_path):
    import csv

    from experiments.report.page.build import build_report
    from experiments.report.settings import load_settings
    from experiments.simulate.sweeps import write_run

    def recs(arm: str, right_high: bool) -> list[dict]:
        out = []
        for i in range(8):
            high = i % 2 == 0
            rec = _record(i, 0.9 if high else 0.1, float(high == right_high or arm == "longctx"), float(high),
                          ["f.pdf p1"] if i < 2 else None)
            rec.update(arm=arm, group=f"question:q{i}" if i == 7 else f"doc{i // 2}.pdf", answers=["x"],
                       prediction="x", scores={"score": rec["score"]}, prompt_tokens=10, completion_tokens=2,
                       latency_s=0.1)
            if arm == "longctx":
                rec.pop("evidence_recall")
            out.append(rec)
        return out

    lc_knobs = {"arm": "longctx", "benchmark": "corpus", "generator": "m"}
    write_run(tmp_path / "sweep" / "lc", lc_knobs, recs("longctx", True))
    write_run(tmp_path / "sweep" / "rag", {"arm": "rag", "benchmark": "corpus", "generator": "m", "retriever": "bm25",
                                           "chunk_size": 128, "top_k": 4}, recs("rag", True))
    files = build_report([str(tmp_path / "sweep")], tmp_path / "report", load_settings())
    rows = list(csv.DictReader(files["overlap.csv"].open()))
    rag_low = next(r for r in rows if r["config"].startswith("rag") and r["part"] == "low")
    rag_high = next(r for r in rows if r["config"].startswith("rag") and r["part"] == "high")
    assert (rag_low["n"], float(rag_low["score"]), float(rag_low["recall"])) == ("4", 0.0, 0.0)
    assert (float(rag_high["score"]), float(rag_high["recall"])) == (100.0, 1.0)
    assert {r["part"] for r in rows if r["split"] == "evidence"} == {"PDF pages", "elsewhere"}
    md = files["report.md"].read_text()
    section = md.split("### By lexical overlap and where the evidence lies")[1]
    assert "Recall gap high − low overlap: largest for rag" in section and "(+1.00)" in section
    assert "corpus: 1 of 8 questions have no evidence inside a document" in section
