"""Beside the verdict: the other arms (floors, routers, controls) and budget-matched long context, each
its best run at a verdict row's level, as the verdict section's "Other arms" table shows them."""

from __future__ import annotations

from dataclasses import dataclass

from experiments.arms import ROLE_LONGCTX, ROLE_OTHER, ArmSpec, specs
from experiments.report.runs import Run
from experiments.report.verdict.row import ALL, VerdictRow


@dataclass
class ArmBest:
    """The best-scoring run of one arm at a verdict row's level."""
    score: float
    run: Run
    longctx_share: float | None  # a routing arm's share of answers that took the long-context route


@dataclass
class OtherArmsRow:
    """Beside a verdict row: the best run of each other arm (floors, routers, controls), then of
    budget-matched long context; None where there is none."""
    benchmark: str
    level: str
    lc_score: float | None
    best: list[ArmBest | None]
    oracle_score: float | None


def other_arm_specs() -> list[ArmSpec]:
    """The arms that are neither long context nor RAG, in registry order (the columns of `other_arms`)."""
    return [s for s in specs() if s.role == ROLE_OTHER]


def _best_of(runs: list[Run], level: str | None) -> ArmBest | None:
    cands = [(r.score_at(level), r) for r in runs if r.score_at(level) is not None]
    if not cands:
        return None
    score, run = max(cands, key=lambda sr: sr[0])
    routes = [x["route"] for x in run.answered(level) if x.get("route")]  # a routing arm's records
    return ArmBest(score, run, routes.count(ROLE_LONGCTX) / len(routes) if routes else None)


def other_arms(rows: list[VerdictRow], runs: list[Run]) -> list[OtherArmsRow]:
    """Per verdict row with any: the best run of each of `other_arm_specs()` and of budget-matched long context."""
    arms = other_arm_specs()
    out = []
    for v in rows:
        lvl = None if v.level == ALL else v.level
        mine = [r for r in runs if r.scope == v.benchmark]
        best = [_best_of([r for r in mine if r.arm == s.name], lvl) for s in arms]
        best.append(_best_of([r for r in mine if r.budget_matched], lvl))
        if any(b is not None for b in best):
            out.append(OtherArmsRow(v.benchmark, v.level, v.lc_score, best, v.oracle.score if v.oracle else None))
    return out
