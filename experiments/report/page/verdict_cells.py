"""A verdict row's name, its Δ with the interval the page shows and the size of the report's family, shared by the
first screen, the verdict section and the forest plot (experiments.report.page.drawing)."""

from __future__ import annotations

from experiments.report.page.cells import cost_ratio_cell
from experiments.report.plots.forest import ForestRow
from experiments.report.verdict.decision import percent
from experiments.report.verdict.row import on_scale
from experiments.report.verdict_row import VerdictRow

FOREST_FILE = "verdict_forest.png"


def cost_cell(v: VerdictRow) -> str:
    """The row's cost ratio with its interval (`cost_ratio_cell`)."""
    c = v.comparison
    return cost_ratio_cell(c.cost_ratio, c.cost_ratio_low, c.cost_ratio_high)


def family_size(vrows: list[VerdictRow]) -> int:
    """The decisions in the report's family (0 without any)."""
    return max((v.family.size for v in vrows), default=0)


def row_name(v: VerdictRow) -> str:
    return f"{v.benchmark} · {v.level}"


def no_interval_reason(v: VerdictRow) -> str | None:
    """Why a row has no interval to show; None when it has one."""
    if v.lc is None:
        return "no scored long-context run"
    if v.rag is None:
        return "no scored RAG run"
    if v.diff is None:
        return "no sample scored by both arms"
    if v.n_groups < 2 or v.ci is None:
        return (f"Δ is {v.diff:+.1f} over one document ({v.comparison.n_shared} questions): nothing varies between "
                "documents, so there is no interval and no decision")
    return None


def shown_interval(v: VerdictRow) -> tuple[float, float] | None:
    """The interval the first screen shows: the family-adjusted one for a tested row, else the 95% one; cut to
    the differences the score can take (`on_scale`)."""
    ci = v.family.ci if v.family.ci is not None else v.ci
    return None if ci is None else on_scale(ci)


def at_bound(v: VerdictRow) -> str | None:
    """"both arms at the floor" (or ceiling) where the row has no decision for that reason; else None."""
    bound = v.decision.bound if v.decision else None
    return f"both arms at the {bound}" if bound else None


def delta_cell(v: VerdictRow) -> str:
    """"+3.1 [-1.2, +7.4] 97.5%" for a tested row (the interval at the level its decision was tested at), "+3.1
    [-9.0, +15.2] untested" for a row that decides nothing (its nominal 95% interval, which at few documents or
    with configs chosen on the same samples does not hold 95%), "-" when the row has no interval, and in words
    where both arms sit at the floor or ceiling (an interval there, often [+0.0, +0.0], says nothing)."""
    if at_bound(v):
        return f"{v.diff:+.1f}, {at_bound(v)}" if v.diff is not None else str(at_bound(v))
    shown = shown_interval(v)
    if no_interval_reason(v) is not None or shown is None:  # (a row with a reason to show none has none)
        return "-"
    lo, hi = shown
    level = percent(v.family.confidence) if v.family.ci is not None and v.family.confidence else "untested"
    return f"{v.diff:+.1f} [{lo:+.1f}, {hi:+.1f}] {level}"


def forest_rows(vrows: list[VerdictRow]) -> list[ForestRow]:
    """The forest plot's rows: each verdict row's Δ and the interval the first screen shows."""
    points = []
    for v in vrows:
        one_doc = v.diff is not None and (v.ci is None or v.n_groups < 2)
        note = "no interval: one document" if one_doc else (at_bound(v) or "")
        points.append(ForestRow(row_name(v), v.diff, None if one_doc or at_bound(v) else shown_interval(v),
                              v.decision.kind if v.decision else "", note))
    return points
