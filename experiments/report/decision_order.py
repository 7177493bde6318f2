"""The order the report takes its decisions in (the rule each row is decided by is
experiments.report.verdict.decision): the verdict row of each benchmark and length level
(experiments.report.verdict.compare), the learned router beside it (experiments.report.router.evaluate),
the arm decisions and the routers' claims tested together with one family-wise error
(experiments.report.verdict.family: Holm within each family, the level passing on once a family is all
kept), and the sentence a team can act on. The
page renders what this returns; it decides nothing itself."""

from __future__ import annotations

from experiments.report.pricing import Pricing, deployment_cost
from experiments.report.router.evaluate import RouteClaim, router_row
from experiments.report.runs import Run, levels_of
from experiments.report.settings import ReportSettings
from experiments.report.verdict.family import control_family
from experiments.report.verdict.compare import verdict_row
from experiments.report.verdict.row import ALL, VerdictRow
from experiments.report.verdict.sentence import recommend


def with_router(row: VerdictRow, runs: list[Run], pricing: Pricing, settings: ReportSettings) -> None:
    """Learn a router over the row's two configs (None when the row lacks one, or its documents are too few)."""
    if row.lc is None or row.rag is None:
        return
    lvl = None if row.level == ALL else row.level
    row.router = router_row(row.benchmark, row.level, lvl, row.lc, row.rag, runs, settings,
                            lambda r: deployment_cost(r, pricing, settings, lvl),
                            lambda r: pricing.index_cost_per_doc(r) / settings.queries_per_doc)


def verdicts(runs: list[Run], pricing: Pricing, settings: ReportSettings, routers: bool = True) -> list[VerdictRow]:
    """One row per benchmark and length level, then one per benchmark over all levels; `routers`: with a
    learned router per row (False: the single-arm decision alone, as the simulations measure it)."""
    rows = []
    for bench in sorted({r.scope for r in runs}):
        mine = [r for r in runs if r.scope == bench]
        levels = levels_of(mine)
        for level in levels + ([ALL] if len(levels) > 1 else []):
            row = verdict_row(bench, level, mine, pricing, settings)
            if routers:
                with_router(row, mine, pricing, settings)
            rows.append(row)
    claims = [RouteClaim(row, settings.tolerance) for row in rows if row.router is not None and row.tested]
    for row in rows:
        if row.router is not None and not row.tested:
            row.router.gated = True  # its row decides nothing: nor does its router
    control_family(rows, settings, claims)
    for row in rows:
        row.recommendation = recommend(row, settings)
    return rows
