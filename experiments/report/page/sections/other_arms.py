"""The subsection "Other arms" (under the verdict): beside long context, the other arms (floors, routers, controls)
and budget-matched long context, each its best run at a verdict row's benchmark and level."""

from __future__ import annotations

from dataclasses import dataclass

from experiments.arms import ROLE_LONGCTX, ROLE_OTHER, ArmSpec, specs
from experiments.report.page.cells import fmt, pct
from experiments.report.page.contents import Outline
from experiments.report.page.document import Document, Heading, Paragraph, Table
from experiments.report.page.report_summary import Facts, Summary
from experiments.report.runs import Run
from experiments.report.verdict.row import ALL
from experiments.report.verdict_row import VerdictRow

ANCHOR, TITLE = "other-arms", None

EXPLAINED = ("Closed book (no context) is the memorisation floor; Self-Route tries RAG and falls back to long context "
             "when the model declines; budget-matched long context gets the same token budget as a RAG config, "
             "separating \"less text\" from \"better text\".")


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


def other_arm_specs() -> list[type[ArmSpec]]:
    """The arms that are neither long context nor RAG, in registry order (the columns of `other_arms`)."""
    return [s for s in specs() if s.role == ROLE_OTHER]


def _best_of(runs: list[Run], level: str | None) -> ArmBest | None:
    cands = [(score, r) for r in runs if (score := r.score_at(level)) is not None]
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
            out.append(OtherArmsRow(v.benchmark, v.level, v.comparison.lc_score, best,
                                    v.oracle.score if v.oracle else None))
    return out


def rows(f: Facts) -> list[OtherArmsRow]:
    return other_arms(f.vrows, f.runs)


def render(doc: Document, s: Summary, outline: Outline) -> None:
    table = [_cells(o) for o in s.sections[ANCHOR]]
    if table:
        doc.add(Heading(3, "Other arms"), Paragraph(EXPLAINED),
                Table(["benchmark", "level", "long context", *(spec.display() for spec in other_arm_specs()),
                       "budget-matched long context", "oracle router"], table))


def _cells(o: OtherArmsRow) -> list[str]:
    return [o.benchmark, o.level, fmt(o.lc_score, 1), *(_arm_best(b) for b in o.best), fmt(o.oracle_score, 1)]


def _arm_best(best: ArmBest | None) -> str:
    """An other-arms cell: the score and config of an arm's best run (a routing arm's share routed to long context)."""
    if best is None:
        return "-"
    routed = "" if best.longctx_share is None else f", {pct(best.longctx_share)} to long context"
    return f"{best.score:.1f} ({best.run.label}{routed})"
