"""The subsection "Other arms" (under the verdict): floors, routers and controls per benchmark and level, beside long
context (rows: experiments.report.other_arms)."""

from __future__ import annotations


from experiments.report.other_arms import ArmBest, OtherArmsRow, other_arm_specs, other_arms
from experiments.report.page.cells import fmt, pct
from experiments.report.page.contents import Outline
from experiments.report.page.document import Document, Heading, Paragraph, Table
from experiments.report.page.report_summary import Facts, Summary

ANCHOR, TITLE = "other-arms", None

EXPLAINED = ("Closed book (no context) is the memorisation floor; Self-Route tries RAG and falls back to long context "
             "when the model declines; budget-matched long context gets the same token budget as a RAG config, "
             "separating \"less text\" from \"better text\".")


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
