"""Same token budget: each RAG config against long context cut to the same number of prompt tokens
("better text" vs "less text")."""

from __future__ import annotations

from dataclasses import dataclass

from experiments.report.runs import Run
from experiments.report.settings import ReportSettings
from experiments.report.verdict.selection import (best_config, groups_of, longctx_candidates, paired_difference,
                                                  rag_candidates)


@dataclass
class BudgetPair:
    """A RAG config and long context cut to the same token budget: "better text" vs "less text"."""
    benchmark: str
    budget: int
    rag: Run
    rag_score: float
    budget_lc: Run
    budget_lc_score: float
    full_lc_score: float | None
    n_shared: int
    diff: float | None  # RAG - budget-matched long context, points
    ci: tuple[float, float] | None



def budget_pairs(runs: list[Run], settings: ReportSettings) -> list[BudgetPair]:
    """Each budget-matched long-context run against the best RAG config with that budget
    (the token budget its spec states: top_k x chunk_size, or the RAG arm's own)."""
    pairs = []
    for bench in sorted({r.scope for r in runs}):
        mine = [r for r in runs if r.scope == bench]
        full, full_score = best_config(longctx_candidates(mine), None)
        for blc in sorted((r for r in mine if r.budget_matched and r.scores()), key=lambda r: r.token_budget or 0):
            budget = blc.token_budget
            same = [r for r in rag_candidates(mine) if r.token_budget == budget]
            rag, rag_score = best_config(same, None)
            if rag is None:
                continue
            shared, est = paired_difference(rag, blc, None, None, groups_of([rag, blc], None))
            diff = ci = None
            if est is not None:
                diff, ci = est.value, est.interval(0.95)
            pairs.append(BudgetPair(bench, budget, rag, rag_score, blc, blc.score_at(), full_score, len(shared),
                                    diff, ci))
    return pairs
