"""Score against the share of the full context sent: one panel per length level, x = a config's mean prompt
tokens divided by long context's at that level (long context at 1.0, the oracle retriever near 0), y = its score
with a 95% interval over documents. RAG's top-k and chunk sizes and long context then lie on one curve."""

from __future__ import annotations

import math
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from experiments import records as schema
from experiments.arms import ROLE_LONGCTX, ROLE_RAG
from experiments.report.plots.figures import place_point_labels, save_figure
from experiments.report.runs import Run, levels_of
from experiments.report.verdict.selection import longctx_candidates

Z95 = 1.96


@dataclass
class SharePoint:
    label: str
    role: str
    upper_bound: bool
    colour: str | None
    share: float  # mean prompt tokens / long context's
    score: float  # x100
    low: float
    high: float


def score_interval(run: Run, level: str) -> tuple[float, float, float] | None:
    """(score, low, high) x100: the mean over questions, its interval from the spread of document totals
    (questions of one document are correlated; a cluster-robust standard error)."""
    recs = [r for r in run.records_at(level) if schema.is_scored(r)]
    if not recs:
        return None
    n = len(recs)
    mean = sum(float(r["score"]) for r in recs) / n
    groups: dict[str, list[float]] = {}
    for r in recs:
        groups.setdefault(str(r.get("group") or r["id"]), []).append(float(r["score"]))
    g = len(groups)
    if g < 2:
        return 100 * mean, 100 * mean, 100 * mean
    var = g / (g - 1) * sum((sum(v) - len(v) * mean) ** 2 for v in groups.values()) / n ** 2
    half = Z95 * math.sqrt(var)
    return 100 * mean, 100 * max(0.0, mean - half), 100 * min(1.0, mean + half)


def share_points(runs: list[Run], level: str) -> list[SharePoint]:
    lcs = [r for r in longctx_candidates(runs) if r.mean_of("prompt_tokens", level)]
    if not lcs:
        return []
    lc = max(lcs, key=lambda r: r.score_at(level) or 0)
    full = lc.mean_of("prompt_tokens", level)
    if not full:  # (never: `lcs` keeps the runs with prompt tokens)
        return []
    out = []
    for r in runs:
        tokens, s = r.mean_of("prompt_tokens", level), score_interval(r, level)
        if tokens is None or s is None or not r.spec.context:
            continue
        out.append(SharePoint(r.label, r.spec.role, r.upper_bound, r.spec.colour, tokens / full, *s))
    return sorted(out, key=lambda p: p.share)


def score_vs_context_share(runs: list[Run], path, title: str = ""):
    levels = [lvl for lvl in levels_of(runs) if share_points(runs, lvl)]
    if not levels:
        return None
    fig, axes = plt.subplots(1, len(levels), figsize=(max(6.5, 4.6 * len(levels)), 4.6), squeeze=False)
    labels = []
    for ax, level in zip(axes[0], levels, strict=True):
        pts = share_points(runs, level)
        for p in pts:
            colour = "black" if p.upper_bound else p.colour or "tab:gray"
            ax.errorbar([p.share], [p.score], yerr=[[p.score - p.low], [p.high - p.score]], fmt="*" if p.upper_bound
                        else "o", color=colour, ms=9 if p.upper_bound else 6, capsize=3)
        curve = [p for p in pts if not p.upper_bound and p.role in (ROLE_LONGCTX, ROLE_RAG)]
        ax.plot([p.share for p in curve], [p.score for p in curve], color="gray", lw=0.8, ls=":")
        ax.set_xlim(0, max(1.05, max(p.share for p in pts) * 1.05))
        ax.set_xlabel("prompt tokens ÷ long context's")
        ax.set_ylabel("score (x100), 95% interval over documents")
        ax.set_title(f"level {level}{title}", fontsize=10)
        ax.grid(alpha=0.3)
        labels.append((ax, [(p.share, p.score, p.label) for p in pts]))
    fig.suptitle("Score against the share of the full context sent (★: oracle retriever)", fontsize=10)
    fig.tight_layout()
    for ax, points in labels:  # once laid out: beside their points, none over another
        place_point_labels(ax, points)
    return save_figure(fig, path)
