"""Checking the plan by simulation: sweeps with a known truth read through the report's own reader and
verdict, and the share of them each decision takes (tests/test_plan.py, perf/plan_check.py)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from experiments.report.decision_order import verdicts
from experiments.report.loading import load_runs
from experiments.report.pricing import Pricing
from experiments.report.settings import ReportSettings
from experiments.report.verdict.decision import INCONCLUSIVE, LONGCTX, NO_DECISION, RAG
from experiments.simulate.sweeps import known_truth_sweep


def simulated_rows(where: Path, truth: float, n_documents: int, settings: ReportSettings, seed: int,
                   **sweep_kwargs: Any) -> list[Any]:
    """Verdict rows of one simulated sweep (1 long-context, 1 RAG config: nothing chosen) with true
    RAG - long context `truth` (accuracy, 0..1), read through the report's own reader."""
    known_truth_sweep(where, truth, n_rag_configs=1, n_docs=n_documents, seed=seed, **sweep_kwargs)
    runs = load_runs([where]).runs
    return verdicts(runs, Pricing(settings, runs), settings, routers=False)


def decided_share(root: Path, truth: float, n_documents: int, n_sweeps: int, settings: ReportSettings,
                  seed: int = 0, **sweep_kwargs: Any) -> dict[str, float]:
    """Share of `n_sweeps` simulated sweeps of `n_documents` documents decided each way (fresh seeds)."""
    counts = {RAG: 0, LONGCTX: 0, INCONCLUSIVE: 0, NO_DECISION: 0}
    for i in range(n_sweeps):
        where = Path(root) / f"plan_check_{seed}_{i}"
        row = simulated_rows(where, truth, n_documents, settings, seed=seed * 100_003 + i, **sweep_kwargs)[0]
        counts[row.decision.kind if row.decision else INCONCLUSIVE] += 1
        shutil.rmtree(where)
    return {k: v / n_sweeps for k, v in counts.items()}
