"""The what-if at one queries-per-document footing: long context with and without a prefix cache,
RAG's indexing from its measured index time, and which latency is which (issue 14 item 4)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from experiments.report.page.build import build_report
from experiments.report.settings import load_settings
from experiments.simulate.sweeps import write_run

PRICE = {"name": "cpu-2vcpu", "kind": "hourly", "usd_per_hour": 0.36, "devices": 2, "basis": "latency"}
RATE = 0.72 / 3600  # USD per second


def _rows(path: Path) -> dict[str, dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return {r["arm"]: r for r in csv.DictReader(f)}


def _base(i: int) -> dict:
    return {"id": f"s{i}", "benchmark": "b", "task": "t", "language": "en", "length_level": "1k", "group": f"d{i // 2}",
            "status": "ok", "score": 1.0, "prompt_tokens": 100, "completion_tokens": 5}


def test_what_if_with_and_without_prefix_cache_at_the_same_queries_per_doc(tmp_path):
    # long context: 4 documents x 2 questions; one 10 s prefill per document, 1 s of decode per answer
    lc = [{**_base(i), "arm": "longctx", "prefill_s": 10.0, "prefix_group_size": 2, "generation_s": 6.0,
           "retrieval_s": None, "latency_s": 12.0, "cost_usd": 6.0 * RATE} for i in range(8)]
    # RAG: 2 s generation + 0.5 s retrieval per answer, index build 2 s per document (measured)
    rag = [{**_base(i), "arm": "rag", "n_chunks": 10, "generation_s": 2.0, "retrieval_s": 0.5, "latency_s": 2.5,
            "cost_usd": 2.5 * RATE} for i in range(8)]
    write_run(tmp_path / "runs" / "lc", {"arm": "longctx", "benchmark": "b", "generator": "g"}, lc,
              extra_metrics={"price": PRICE})
    write_run(tmp_path / "runs" / "rag", {"arm": "rag", "benchmark": "b", "generator": "g", "retriever": "bm25",
                                          "chunk_size": 64, "top_k": 2, "order": "document"}, rag,
              extra_metrics={"price": PRICE, "index_seconds": 8.0, "index_builds": 4, "n_documents": 4})
    files = build_report([str(tmp_path / "runs")], tmp_path / "out", load_settings(queries_per_doc=5))
    rows = _rows(files["whatif.csv"])
    lc_row, rag_row = rows["longctx"], rows["rag"]
    # no prefix cache: every question pays the whole 10 s prefill + 1 s decode
    assert float(lc_row["cost_per_1000"]) == pytest.approx(1000 * 11 * RATE)
    # prefix cache shared by 5 questions: 10/5 + 1 s
    assert float(lc_row["cost_per_1000_prefix_cache"]) == pytest.approx(1000 * 3 * RATE)
    # RAG: the measured 2 s index build per document (BM25 included), spread over the same 5 questions
    assert float(rag_row["index_cost_per_doc"]) == pytest.approx(2 * RATE)
    assert float(rag_row["index_s_per_doc"]) == pytest.approx(2.0)
    assert float(rag_row["cost_per_1000"]) == pytest.approx(1000 * (2.5 + 2 / 5) * RATE)
    assert float(rag_row["cost_per_1000_prefix_cache"]) == pytest.approx(float(rag_row["cost_per_1000"]))
    # break-even: I / (n_lc - c) without a cache; with one RAG (2.5 s) costs more per answer than
    # decode (1 s) but indexes for less than a prefill: cheaper only below (10 - 2) / (2.5 - 1)
    assert float(rag_row["break_even"]) == pytest.approx(2 / (11 - 2.5))
    assert float(rag_row["break_even_prefix_cache"]) == pytest.approx(8 / 1.5)
    assert "cheaper only below 5.33" in rag_row["break_even_prefix_cache_note"]
    # which latency is which: what a user waits vs what an answer is charged
    assert (float(lc_row["latency_mean"]) == pytest.approx(12.0)
            and float(lc_row["charged_s_mean"]) == pytest.approx(6.0))
    assert (float(rag_row["latency_mean"]) == pytest.approx(2.5)
            and float(rag_row["charged_s_mean"]) == pytest.approx(2.5))
    md = files["report.md"].read_text()
    assert "cost per 1,000: no prefix cache" in md and "cost per 1,000: with prefix cache" in md
    assert "what one user waits" in md


def test_old_run_dirs_without_the_new_fields_still_give_a_what_if(tmp_path):
    """Runs from before generation_s / retrieval_s / prefill_s / index_seconds: latency_s was the
    charged generation time; both cost columns agree and indexing falls back to the token estimate."""
    old = [{k: v for k, v in {**_base(i), "latency_s": 3.0, "cost_usd": 3.0 * RATE}.items()} for i in range(8)]
    write_run(tmp_path / "runs" / "lc", {"arm": "longctx", "benchmark": "b", "generator": "g"},
              [{**r, "arm": "longctx"} for r in old], extra_metrics={"price": PRICE})
    write_run(tmp_path / "runs" / "rag", {"arm": "rag", "benchmark": "b", "generator": "g", "retriever": "minilm",
                                          "chunk_size": 100, "top_k": 2, "order": "document"},
              [{**r, "arm": "rag", "n_chunks": 50} for r in old], extra_metrics={"price": PRICE, "index_builds": 4})
    files = build_report([str(tmp_path / "runs")], tmp_path / "out", load_settings(queries_per_doc=2))
    rows = _rows(files["whatif.csv"])
    assert float(rows["longctx"]["cost_per_1000"]) == pytest.approx(1000 * 3 * RATE)
    assert float(rows["longctx"]["cost_per_1000_prefix_cache"]) == pytest.approx(1000 * 3 * RATE)
    assert float(rows["longctx"]["charged_s_mean"]) == pytest.approx(3.0)
    # 50 chunks x 100 tokens at the assumed 20,000 tokens/s: 0.25 s
    assert float(rows["rag"]["index_cost_per_doc"]) == pytest.approx(0.25 * RATE)
    assert rows["rag"]["index_s_per_doc"] == ""
