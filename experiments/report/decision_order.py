"""The order the report takes its decisions in (the rule each row is decided by is
experiments.report.verdict.decision): the comparison of each benchmark and length level and the decision its own
interval makes (experiments.report.verdict.compare), the learned router beside it
(experiments.report.router.evaluate), the arm decisions and the routers' claims tested together with one
family-wise error (experiments.report.verdict.family: Holm within each family, the level passing on once a family
is all kept), and the sentence a team can act on. Each stage returns a frozen result and changes none of the
earlier ones; the verdict row (experiments.report.verdict_row.VerdictRow) is their composition, made once they all
are. The page renders what this returns; it decides nothing itself."""

from __future__ import annotations

from dataclasses import replace

from experiments.report.pricing import Pricing, deployment_cost
from experiments.report.router.evaluate import RouterRow, route_p_value, route_why, router_row, settled
from experiments.report.runs import Run, levels_of
from experiments.report.settings import ReportSettings
from experiments.report.verdict.compare import verdict_row
from experiments.report.verdict.decision import ROUTE, Decision, OwnDecision
from experiments.report.verdict.family import Family, control_family
from experiments.report.verdict.row import ALL, Comparison
from experiments.report.verdict.sentence import Words, recommend
from experiments.report.verdict_row import VerdictRow


def learned_router(c: Comparison, runs: list[Run], pricing: Pricing, settings: ReportSettings) -> RouterRow | None:
    """A router learned over the row's two configs (None when the row lacks one, or its documents are too few)."""
    if c.lc is None or c.rag is None:
        return None
    lvl = None if c.level == ALL else c.level
    return router_row(c.benchmark, c.level, lvl, c.lc, c.rag, runs, settings,
                      lambda r: deployment_cost(r, pricing, settings, lvl),
                      lambda r: pricing.index_cost_per_doc(r) / settings.queries_per_doc)


def tested(stages: list[tuple[Comparison, OwnDecision, RouterRow | None]],
           settings: ReportSettings) -> list[tuple[Family, RouterRow | None]]:
    """Every row's family stage and its router as the family left it: the arm decisions and the router claims of
    the tested rows tested together (a router whose row decides nothing is not tested: `gated`); a row whose router
    claim stands decides `route` and keeps its single-arm decision as `arm_decision`."""
    claims = {i: r for i, (_, own, r) in enumerate(stages) if r is not None and own.tested}
    p_route = [route_p_value(r.result, settings.tolerance) for r in claims.values()]
    families, p_holm = control_family([(c, own) for c, own, _ in stages], settings, p_route)
    kept = {i: settled(r, p, h, settings.tolerance)
            for (i, r), p, h in zip(claims.items(), p_route, p_holm, strict=True)}
    out = []
    for i, ((_, _, router), family) in enumerate(zip(stages, families, strict=True)):
        router = kept.get(i, None if router is None else replace(router, gated=True))
        if router is not None and router.decided:
            family = replace(family, decision=Decision(ROUTE, route_why(router, settings.tolerance)),
                             arm_decision=family.decision)
        out.append((family, router))
    return out


def verdicts(runs: list[Run], pricing: Pricing, settings: ReportSettings, routers: bool = True) -> list[VerdictRow]:
    """One row per benchmark and length level, then one per benchmark over all levels; `routers`: with a
    learned router per row (False: the single-arm decision alone, as the simulations measure it)."""
    stages = []
    for bench in sorted({r.scope for r in runs}):
        mine = [r for r in runs if r.scope == bench]
        levels = levels_of(mine)
        for level in levels + ([ALL] if len(levels) > 1 else []):
            comparison, own = verdict_row(bench, level, mine, pricing, settings)
            stages.append((comparison, own, learned_router(comparison, mine, pricing, settings) if routers else None))
    rows = []
    for (comparison, own, _), (family, router) in zip(stages, tested(stages, settings), strict=True):
        words = Words(recommend(comparison, family, settings))
        rows.append(VerdictRow(comparison, own, family, router, words))
    return rows
