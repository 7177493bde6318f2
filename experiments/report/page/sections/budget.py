"""The subsection "Same token budget" (under the verdict): each budget-matched long-context run (long context cut to
a RAG config's token budget) against the best RAG config with that budget, "better text" vs "less text": its rows
and their rendering."""

from __future__ import annotations

from dataclasses import dataclass

from experiments.report.page.cells import fmt
from experiments.report.page.contents import Outline
from experiments.report.page.document import Document, Heading, Paragraph, Table
from experiments.report.page.report_summary import Facts, Summary
from experiments.report.runs import Run
from experiments.report.settings import ReportSettings
from experiments.report.verdict.selection import (
    best_config,
    groups_of,
    longctx_candidates,
    paired_difference,
    rag_candidates,
)

ANCHOR, TITLE = "budget", None

HEAD = ["benchmark", "budget tokens", "RAG", "score", "budget-matched long context", "score",
        "Δ RAG−budget LC [95% CI]", "n", "full long context"]
EXPLAINED = (
    "Long context cut to a RAG config's token budget (its spec's: top_k x chunk_size for plain RAG) against "
    "that RAG config. Full long "
    "context minus the budget-matched run is what the extra text is worth; RAG minus the budget-matched run is "
    "what choosing the text (retrieval) is worth at equal length.")


@dataclass
class BudgetPair:
    """A RAG config and long context cut to the same token budget: "better text" vs "less text"."""
    benchmark: str
    budget: int | None  # (set on every budget-matched run)
    rag: Run
    rag_score: float | None  # (the runs here have scores)
    budget_lc: Run
    budget_lc_score: float | None
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


def rows(f: Facts) -> list[BudgetPair]:
    return budget_pairs(f.runs, f.settings)


def render(doc: Document, s: Summary, outline: Outline) -> None:
    mine: list[BudgetPair] = s.sections[ANCHOR]
    if mine:
        doc.add(Heading(3, "Same token budget: better text or less text?"), Paragraph(EXPLAINED),
                Table(HEAD, [_cells(p) for p in mine]))


def _cells(p: BudgetPair) -> list[str]:
    return [p.benchmark, str(p.budget), p.rag.label, fmt(p.rag_score, 1), p.budget_lc.label, fmt(p.budget_lc_score, 1),
            "-" if p.diff is None or p.ci is None else f"{p.diff:+.1f} [{p.ci[0]:+.1f}, {p.ci[1]:+.1f}]",
            str(p.n_shared),
            fmt(p.full_lc_score, 1)]
