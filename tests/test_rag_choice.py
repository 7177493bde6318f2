"""The verdict's RAG choice: the cheapest RAG config within the tolerance of the best RAG config of the same
documents, never a config that scores below one it could have chosen; and a level where both arms sit at the
floor says so in words on the first screen, not with a zero-width interval."""

from __future__ import annotations

import numpy as np

from experiments.report.page.build import build_report
from experiments.report.settings import load_settings
from experiments.report.verdict.crossfit import Candidates
from experiments.simulate.sweeps import write_run

DOCS = [f"doc{d}" for d in range(8)]
IDS = [f"{d}-q{i}" for d in DOCS for i in range(4)]


def _scores(right: set[int]) -> dict[str, float]:
    return {s: float(k in right) for k, s in enumerate(IDS)}


def _table(lc: dict[str, float], rags: list[dict[str, float]], tolerance: float = 2.0) -> Candidates:
    """RAG configs listed cheapest first (cost key and tokens grow with the index)."""
    return Candidates([lc], rags, [8000.0], [200.0 * (i + 1) for i in range(len(rags))],
                      [(float(i + 1), 200.0 * (i + 1)) for i in range(len(rags))],
                      {s: s.split("-")[0] for s in IDS}, DOCS, tolerance)


def _choose(table: Candidates) -> tuple[int, int, bool]:
    lc, rag, within = table.choose(np.arange(len(DOCS)), np.ones((1, len(DOCS))))
    return int(lc[0]), int(rag[0]), bool(within[0])


def test_with_long_context_at_zero_the_choice_is_not_the_cheap_config_that_also_scores_zero():
    nothing, quarter = _scores(set()), _scores(set(range(0, len(IDS), 4)))  # 0 and 25 points
    assert _choose(_table(nothing, [nothing, quarter])) == (0, 1, True)  # before: (0, 0, True), the 0-point config


def test_the_cheapest_config_within_the_tolerance_of_the_best_rag_config_is_chosen():
    best = _scores(set(range(16)))  # 50 points
    one_less = _scores(set(range(15)))  # 46.9: more than 2 points below the best
    assert _choose(_table(_scores(set(range(8))), [one_less, best])) == (0, 1, True)
    assert _choose(_table(_scores(set(range(8))), [one_less, best], tolerance=4.0)) == (0, 0, True)
    # whatever long context scores: RAG's choice is among RAG's own near-best configs, flagged against long context
    assert _choose(_table(_scores(set(range(30))), [one_less, best])) == (0, 1, False)


def _floor_runs(root):
    base = {"benchmark": "corpus", "task": "qa", "language": "en", "length_level": "8k-32k", "status": "ok",
            "completion_tokens": 5, "latency_s": 1.0}
    recs = [{**base, "id": s, "group": s.split("-")[0], "score": 0.0} for s in IDS]
    write_run(root / "lc", {"arm": "longctx", "benchmark": "corpus", "generator": "sim"},
              [{**r, "arm": "longctx", "prompt_tokens": 9000} for r in recs])
    write_run(root / "rag", {"arm": "rag", "benchmark": "corpus", "generator": "sim", "retriever": "bm25",
                             "chunk_size": 192, "top_k": 2, "order": "document"},
              [{**r, "arm": "rag", "prompt_tokens": 400} for r in recs])


def test_a_level_at_the_floor_says_so_in_words_not_with_a_zero_width_interval(tmp_path):
    _floor_runs(tmp_path / "runs")
    md = build_report([str(tmp_path / "runs")], tmp_path / "report", load_settings())["report.md"].read_text()
    rows = [line for line in md.splitlines() if line.startswith("| corpus | 8k-32k | **no_decision**")]
    assert len(rows) == 2  # the first screen's row and section 1's
    assert all("+0.0, both arms at the floor" in row and "[+0.0, +0.0]" not in row for row in rows)
    assert "with both arms at the floor: no interval says anything there" in rows[1]
