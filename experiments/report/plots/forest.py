"""The verdict as a forest plot: one line per verdict row (benchmark · level), the difference RAG
minus long context with its 95% interval, the tolerance band around 0 shaded, and the row's
decision in the marker's colour and shape.

Why a picture beside the answer table: whether an interval crosses 0 or the tolerance band, which
is what the decision reads, is seen at a glance on a common axis, and rows compare with each other
(a level whose interval is far wider than the others' needs more documents). A row without an
interval (one document: its bootstrap cannot vary) is drawn as a hollow point and says so; a row
without a difference is left out, and the caller names it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.artist import Artist
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from experiments.arms import ROLE_LONGCTX, ROLE_RAG, specs
from experiments.report.verdict.decision import INCONCLUSIVE, LONGCTX, NO_DECISION, RAG, ROUTE

DPI = 120


@dataclass(frozen=True)
class ForestRow:
    label: str  # "benchmark · level"
    diff: float | None  # RAG - long context, points
    ci: tuple[float, float] | None  # None: no interval (e.g. one document)
    decision: str  # a decision kind (experiments.report.verdict.decision), "" when none
    note: str = ""  # shown beside a point without an interval


def _role_colour(role: str) -> str:
    return next((s.colour for s in specs() if s.role == role and s.colour), "black")


def decision_styles() -> dict[str, dict[str, Any]]:
    """Marker per decision: RAG's and long context's arm colours, triangles pointing to their side."""
    return {RAG: {"marker": ">", "color": _role_colour(ROLE_RAG), "label": RAG},
            LONGCTX: {"marker": "<", "color": _role_colour(ROLE_LONGCTX), "label": LONGCTX},
            ROUTE: {"marker": "*", "color": "tab:purple", "label": "route (a router beats both)"},
            INCONCLUSIVE: {"marker": "D", "color": "dimgray", "label": "inconclusive"},
            NO_DECISION: {"marker": "X", "color": "black", "label": "no_decision"},
            "": {"marker": "o", "color": "black", "label": "no decision made"}}


def _limits(rows: list[ForestRow], tolerance: float) -> tuple[float, float]:
    values = [tolerance, -tolerance, 0.0]
    for r in rows:
        values += list(r.ci) if r.ci else [r.diff] if r.diff is not None else []
    lo, hi = min(values), max(values)
    pad = max(1.0, 0.08 * (hi - lo))
    return lo - pad, hi + pad


def forest_plot(rows: list[ForestRow], tolerance: float, path: Path) -> Path | None:
    """Write the forest plot of the rows that have a difference; None when none has one."""
    drawn = [r for r in rows if r.diff is not None]
    if not drawn:
        return None
    styles = decision_styles()
    fig, ax = plt.subplots(figsize=(7.0, 1.0 + 0.3 * len(drawn)))
    if tolerance > 0:
        ax.axvspan(-tolerance, tolerance, color="#d9e6f2", zorder=0)
    ax.axvline(0, color="black", lw=0.9, zorder=1)
    lo, hi = _limits(drawn, tolerance)
    for y, r in enumerate(reversed(drawn)):
        style = styles.get(r.decision, styles[""])
        diff = r.diff
        if diff is None:  # (never: `drawn` has a difference)
            continue
        if r.ci:
            ax.hlines(y, r.ci[0], r.ci[1], color=style["color"], lw=2.2, zorder=2)
            ax.scatter([diff], [y], marker=style["marker"], s=80, color=style["color"], zorder=3)
        else:
            ax.scatter([diff], [y], marker=style["marker"], s=80, facecolors="white", edgecolors=style["color"],
                       linewidths=1.5, zorder=3)
            right_half = diff > (lo + hi) / 2  # write the note towards the middle, clear of the legend
            ax.annotate(r.note or "no interval", (diff, y), textcoords="offset points",
                        xytext=(-8 if right_half else 8, -3), ha="right" if right_half else "left", fontsize=8)
    ax.set_yticks(range(len(drawn)), [r.label for r in reversed(drawn)])
    ax.set_ylim(-0.7, len(drawn) - 0.3)
    ax.set_xlim(lo, hi)
    ax.set_xlabel("Δ RAG − long context, points (x100): right of 0, RAG scores higher")
    ax.grid(axis="x", alpha=0.3)
    kinds = [k for k in styles if any(r.decision == k for r in drawn)]
    handles: list[Artist] = [Line2D([], [], ls="", marker=styles[k]["marker"], color=styles[k]["color"], markersize=8,
                      label=styles[k]["label"]) for k in kinds]
    if tolerance > 0:
        handles.append(Patch(color="#d9e6f2", label=f"±{tolerance:g} points (tolerance)"))
    ax.legend(handles=handles, fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    ax.set_title("Verdict: Δ with its 95% interval, marker = decision", fontsize=10)
    fig.savefig(path, dpi=DPI, bbox_inches="tight", pil_kwargs={"compress_level": 3})
    plt.close(fig)
    return path
