"""Report plots (PNG, labelled, readable in print)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from experiments.aggregate import _level_key  # noqa: E402
from experiments.runs import Run  # noqa: E402

ARM_COLOURS = {"longctx": "tab:red", "rag": "tab:blue", "closedbook": "tab:gray"}


def score_vs_tokens(runs: list[Run], path: Path) -> Path:
    """One point per config: mean prompt tokens (x, log) against score; Pareto front drawn."""
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=120)
    pts = [(r.metrics.get("prompt_tokens_mean"), r.metrics.get("score"), r) for r in runs]
    pts = [(x, y, r) for x, y, r in pts if x is not None and y is not None]
    for arm in sorted({r.knobs.get("arm") for _, _, r in pts}):
        xs = [x for x, _, r in pts if r.knobs.get("arm") == arm]
        ys = [y for _, y, r in pts if r.knobs.get("arm") == arm]
        ax.scatter(xs, ys, s=50, label=arm, color=ARM_COLOURS.get(arm), zorder=3)
    for x, y, r in pts:
        ax.annotate(r.label, (x, y), textcoords="offset points", xytext=(5, 4), fontsize=7)
    front, best = [], float("-inf")
    for x, y, _ in sorted(pts, key=lambda p: (p[0], -p[1])):
        if y > best:
            front.append((x, y))
            best = y
    if len(front) > 1:
        ax.step([x for x, _ in front], [y for _, y in front], where="post", color="black", lw=1, ls="--",
                label="Pareto front", zorder=2)
    ax.set_xscale("log")
    ax.set_xlabel("mean prompt tokens per question (log scale)")
    ax.set_ylabel("score (x100)")
    ax.set_title("Score against prompt size, one point per config")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def score_by_level(runs: list[Run], path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=120)
    levels = sorted({lvl for r in runs for lvl in r.metrics.get("score_by_length_level", {})}, key=_level_key)
    for r in runs:
        by = r.metrics.get("score_by_length_level", {})
        xs = [i for i, lvl in enumerate(levels) if by.get(lvl) is not None]
        ax.plot(xs, [by[levels[i]] for i in xs], marker="o", label=r.label,
                color=ARM_COLOURS.get(r.knobs.get("arm")) if r.knobs.get("arm") == "longctx" else None,
                ls="-" if r.knobs.get("arm") == "longctx" else "--")
    ax.set_xticks(range(len(levels)), levels)
    ax.set_xlabel("length level")
    ax.set_ylabel("score (x100)")
    ax.set_title("Score by length level")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
