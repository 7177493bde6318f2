"""The cost ratio's interval and the cost tie (experiments/report/verdict/cost_ratio.py), and the pricing details of
issue 50: break-evens with their significant digits, retrieval on the throughput basis, records whose server hid
what its prefix cache served.

Simulated runs priced at a probe's rates: RAG ÷ long context's cost carries the spread of the probe's bootstrap
draws into verdict.csv, summary.json and the first screen; a spread that holds 1 is a cost tie, which the decision
reads as neither arm cheaper."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from eval.metrics.confidence import cluster_t
from experiments.report.page.build import build_report
from experiments.report.settings import load_settings
from experiments.report.verdict.compare import row_decision
from experiments.report.verdict.row import Comparison
from experiments.simulate.sweeps import write_run
from llm.work_model import FEATURES, WorkModel, answer_features

PRICE = {"name": "cpu-2vcpu", "kind": "hourly", "usd_per_hour": 0.08925, "devices": 1, "basis": "cpu", "vcpus": 2}
RATES = np.array([3.6e-3, 1.0e-3, 0.11, 0.06, 0.02, 0.025, 0.01])  # SmolLM2-like, seconds per unit of FEATURES


def _records(arm: str, prompt: int, docs: int = 8, q: int = 3, doc: int | None = None) -> list[dict]:
    out = []
    for d in range(docs):
        for j in range(q):
            rec = {"id": f"s{d}-{j}", "benchmark": "b", "task": "t", "language": "en", "length_level": "1k",
                   "group": f"d{d}", "arm": arm, "config_hash": arm, "status": "ok", "answers": ["x"],
                   "score": float((d + j) % 3 != 0) if arm == "longctx" else float((d + 2 * j) % 3 != 0),
                   "prompt_tokens": prompt + 5 * j, "completion_tokens": 12, "decode_batch": q, "decode_steps": 11,
                   "context_tokens": doc or prompt - 40, "retrieval_cpu_s": 0.0 if doc else 0.01}
            if doc:
                rec.update(prefix_group_size=q, prefill_cpu_s=1.0, prefill_s=1.0)
            rec["cpu_s"] = rec["generation_s"] = rec["latency_s"] = float(answer_features(rec) @ RATES)
            rec["cost_usd"] = rec["cpu_s"] / PRICE["vcpus"] * PRICE["usd_per_hour"] / 3600
            out.append(rec)
    return out


def _write(root, draws: np.ndarray, rag_prompt: int = 80) -> None:
    work = WorkModel(tuple(RATES), 30, 0.99, 0.05, "a probe", tuple(tuple(d) for d in draws)).to_dict()
    metrics = {"price": PRICE, "work_rates": work}
    write_run(root / "lc", {"arm": "longctx", "benchmark": "b", "generator": "g"},
              _records("longctx", 1100, doc=1060), extra_metrics=metrics)
    knobs = {"arm": "rag", "benchmark": "b", "generator": "g", "retriever": "bm25", "chunk_size": 128, "top_k": 2,
             "order": "document"}
    write_run(root / "rag", knobs, [{**r, "n_chunks": 10} for r in _records("rag", rag_prompt)],
              extra_metrics=metrics)


def _draws(spread: float, seed: int = 0) -> np.ndarray:
    """200 draws of the rates, each rate scaled by its own lognormal factor."""
    return RATES * np.random.default_rng(seed).lognormal(0.0, spread, size=(200, len(FEATURES)))


def _report(tmp_path, name: str, draws: np.ndarray, rag_prompt: int = 80):
    _write(tmp_path / name, draws, rag_prompt)
    files = build_report([str(tmp_path / name)], tmp_path / f"{name}-out", load_settings())
    with open(files["verdict.csv"], newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    summary = json.loads((tmp_path / f"{name}-out" / "summary.json").read_text())
    return rows, summary, files["report.md"].read_text()


def test_the_cost_ratio_carries_the_probes_interval(tmp_path):
    rows, summary, md = _report(tmp_path, "narrow", _draws(0.1))
    for row in rows:
        low, point, high = (float(row[k]) for k in ("cost_ratio_low", "cost_ratio", "cost_ratio_high"))
        assert low < point < high < 1 and row["cost_tie"] == "False", row
    first = summary["vrows"][0]["comparison"]
    assert first["cost_ratio_low"] < first["cost_ratio"] < first["cost_ratio_high"]
    assert f"[{float(rows[0]['cost_ratio_low']):.2f}-{float(rows[0]['cost_ratio_high']):.2f}]" in md
    assert "its interval: where another probe of this setup would put it, 95% of the time" in md
    # no spread in the draws: the interval is the point
    rows, _, _ = _report(tmp_path, "exact", np.tile(RATES, (200, 1)))
    assert all(float(r["cost_ratio_low"]) == pytest.approx(float(r["cost_ratio_high"]), rel=1e-3) for r in rows)


def test_a_cost_tie_says_so_on_the_first_screen_and_neither_arm_is_cheaper(tmp_path):
    """RAG's prompts cost about what long context's share of its document does at the report's 10 queries per
    document (the point near 1), and the probe's draws spread widely: the interval holds 1, the row is a cost tie
    everywhere the ratio is shown."""
    rows, summary, md = _report(tmp_path, "tie", _draws(0.6), rag_prompt=180)
    row = rows[0]
    low, high = float(row["cost_ratio_low"]), float(row["cost_ratio_high"])
    assert low < 1 < high and row["cost_tie"] == "True"
    answer = next(line for line in md.splitlines() if line.startswith(f"| b | {row['level']} |"))  # the first table
    assert "cost tie" in answer and f"[{low:.2f}-{high:.2f}]" in answer, answer
    print(answer)  # the first screen's row, for the record
    assert "a cost tie:" in row["recommendation"] and "and cheaper" not in row["recommendation"]


def test_a_tie_tests_only_the_claims_that_need_no_cheaper_arm():
    """A difference of about +0.25 points over 12 documents, surely within the 2-point tolerance, not surely above 0:
    with RAG cheaper it is `rag` (no worse and cheaper); with the cost a tie the same interval decides nothing."""
    settings = load_settings()
    diffs = [0.5 + 1.5 * ((i * 7) % 5 - 2) for i in range(12)]
    estimate = cluster_t(diffs, [f"d{i}" for i in range(12)])
    tie = Comparison("b", "all", cost_ratio=0.93, cost_ratio_low=0.81, cost_ratio_high=1.08, token_ratio=0.3)
    cheaper = Comparison("b", "all", cost_ratio=0.93, cost_ratio_low=0.85, cost_ratio_high=0.99, token_ratio=0.3)
    assert tie.cost_tie and tie.rag_cheaper is None and tie.cost_words == "cost tie"
    assert cheaper.rag_cheaper is True and cheaper.cost_words == "RAG cheaper"
    assert row_decision(estimate, 12, False, cheaper.rag_cheaper, (0.5, 0.5), settings)[0].kind == "rag"
    decision, tested = row_decision(estimate, 12, False, tie.rag_cheaper, (0.5, 0.5), settings)
    assert decision.kind == "inconclusive" and tested
    assert "neither arm is known to be the cheaper one" in decision.why and "unknown" not in decision.why
    assert Comparison("b", "all").cost_words == "cost unknown"


def test_exact_prices_have_the_point_for_an_interval_and_say_so(tmp_path):
    from dataclasses import replace

    from experiments.report.page.cells import cost_ratio_cell
    from experiments.report.settings import Price

    _write(tmp_path / "runs", _draws(0.1))
    settings = replace(load_settings(), price=Price({"kind": "per_token", "name": "p", "input_usd_per_million": 2.5,
                                                     "output_usd_per_million": 10.0}, from_command_line=True))
    files = build_report([str(tmp_path / "runs")], tmp_path / "out", settings)
    with open(files["verdict.csv"], newline="", encoding="utf-8") as f:
        row = list(csv.DictReader(f))[0]
    assert row["cost_ratio_low"] == row["cost_ratio"] == row["cost_ratio_high"] != ""
    md = files["report.md"].read_text()
    assert "no interval: exact token counts at published prices (the interval is the point)" in md
    assert cost_ratio_cell(0.54, 0.54, 0.54) == "0.54x" and cost_ratio_cell(None, None, None) == "-"
    assert cost_ratio_cell(0.98, 0.85, 1.12) == "0.98x [0.85-1.12] cost tie"


def test_break_evens_keep_their_significant_digits():
    from experiments.report.page.sections.whatif import break_even, break_even_cached, queries

    assert break_even(0.003, 1.0, 3.0) == (pytest.approx(0.0015), "0.0015")
    assert [queries(q) for q in (0.0015, 0.4213, 3.74, 12.345, 1234.5)] == ["0.0015", "0.421", "3.74", "12.3",
                                                                              "1,234"]
    assert break_even_cached(1.0, 3.0, (2.5, 1.0, 4.0))[1] == "cheaper only below 0.75"


def test_the_throughput_basis_charges_the_measured_retrieval():
    from llm.cost import build_cost_model

    price = build_cost_model({"kind": "hourly", "usd_per_hour": 3.6, "basis": "throughput",
                              "prefill_tokens_per_s": 1000, "decode_tokens_per_s": 100})
    rec = {"prompt_tokens": 1000, "completion_tokens": 100, "retrieval_s": 0.5}
    tokens = price.cost(1000, 100, 0.0)
    assert tokens == pytest.approx(2.0 * 3.6 / 3600) and price.retrieval_cost(rec) == pytest.approx(0.5 * 3.6 / 3600)
    assert build_cost_model({"kind": "hourly", "usd_per_hour": 3.6}).retrieval_cost(rec) == 0.0  # in its seconds


def test_records_that_hide_what_a_servers_cache_served_are_not_fitted_nor_rescaled():
    """A server without cached-token details (no `cached_prompt_tokens`, no CPU time): the run warns once under a
    price of time, and the report fits no token rates on such records nor rescales their long-context cost with q."""
    from pathlib import Path

    from experiments.report.pricing import Pricing
    from experiments.report.runs import Run
    from experiments.report.settings import Price, ReportSettings
    from llm.cost import build_cost_model, cache_state_known, cache_state_note

    price = {"kind": "hourly", "name": "gpu", "usd_per_hour": 3.6, "basis": "latency"}
    lc, rag = [], []
    for i in range(8):
        base = {"id": f"q{i}", "benchmark": "b", "task": "t", "language": "en", "length_level": "1k",
                "group": f"d{i // 4}", "status": "ok", "score": 1.0, "retrieval_s": None}
        lc.append({**base, "arm": "longctx", "prompt_tokens": 2040, "completion_tokens": 20, "context_tokens": 2000,
                   "generation_s": 2.04 + 0.4, "latency_s": 1.0})  # 1,000 prefill tokens/s, 50 decoded
        rag.append({**base, "arm": "rag", "prompt_tokens": 300 + 200 * i, "completion_tokens": 20 + 5 * i,
                    "context_tokens": 260, "n_chunks": 4, "generation_s": (300 + 200 * i) / 1e3 + (20 + 5 * i) / 50,
                    "latency_s": 0.3})
    assert not cache_state_known(lc[0]) and cache_state_known({**lc[0], "cached_prompt_tokens": 0})
    note = cache_state_note(build_cost_model(price), lc + rag)
    assert note is not None and note.startswith("16 of 16 answers came from a server that reported no cached-token")
    assert cache_state_note(build_cost_model({**price, "basis": "cpu", "vcpus": 2}), lc) is None
    runs = [Run(Path("lc"), {"knobs": {"arm": "longctx", "benchmark": "b", "generator": "g"}, "price": price}, lc),
            Run(Path("rag"), {"knobs": {"arm": "rag", "benchmark": "b", "generator": "g", "retriever": "bm25",
                                        "chunk_size": 64, "top_k": 4}, "price": price}, rag)]
    pricing = Pricing(ReportSettings(price=Price(dict(price), from_command_line=False)), runs)
    assert pricing.token_time is None  # nothing fitted on records that hide their cache
    assert pricing.answer_cost_at(lc[0], 20, True, shared_prefix=True) == pytest.approx(pricing.answer_cost(lc[0]))
    known = [{**r, "cached_prompt_tokens": 0} for r in lc + rag]
    runs_known = [Run(Path("lc"), runs[0].metrics, known[:8]), Run(Path("rag"), runs[1].metrics, known[8:])]
    assert Pricing(ReportSettings(price=Price(dict(price), from_command_line=False)), runs_known).token_time
