"""Report plots (PNG, labelled axes, legends, readable in print). Each takes the runs of one
benchmark and returns the file it wrote, or None when the runs hold nothing to draw."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from statistics import mean
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.lines import Line2D

from experiments import records as schema
from experiments.arms import ROLE_LONGCTX, ROLE_RAG, spec_of_run, specs
from experiments.report.runs import Run, levels_of

# series that are not an arm; an arm's colour and name come from its spec
KIND_COLOURS = {"budget": "tab:orange", "oracle": "black"}
KIND_NAMES = {"budget": "budget-matched long context", "oracle": "oracle router"}
MAX_POINT_LABELS = 24
DPI = 120
# legends at 9 pt: 15 px at DPI 120, about 13 px where the page shows a figure shrunk to its width (the top-k
# figure); 7 or 8 pt read as small print in a 1400-px window
LEGEND_SIZE = 9


def _kind(run: Run) -> str:
    return "budget" if run.budget_matched else run.arm


def _colour(kind: str) -> str | None:
    return KIND_COLOURS[kind] if kind in KIND_COLOURS else spec_of_run(kind).colour


def _name(kind: str) -> str:
    return KIND_NAMES[kind] if kind in KIND_NAMES else spec_of_run(kind).title or kind


def _role_colour(role: str) -> str | None:
    return next((s.colour for s in specs() if s.role == role), None)


def save_figure(fig, path: Path, tight: bool = False) -> Path:
    """Write the figure (`tight`: cropped to what it draws, a legend outside the axes included) and close it."""
    fig.tight_layout()
    # zlib's default 6 costs more time than bytes saved
    fig.savefig(path, dpi=DPI, bbox_inches="tight" if tight else None, pil_kwargs={"compress_level": 3})
    plt.close(fig)
    return path


# Where a point's label may go, in points from the point, tried in turn: right above, right below, left above,
# left below, then a line further up or down on each side
LABEL_OFFSETS = [(5, 4), (5, -11), (-5, 4), (-5, -11), (5, 14), (5, -21), (-5, 14), (-5, -21)]
POINT_LABEL_SIZE = 8


def place_point_labels(ax, points: list[tuple[float, float, str]]) -> list[str]:
    """Label each point beside it, at the first of LABEL_OFFSETS where the label stays inside the axes and
    overlaps neither a label placed before it nor the legend. Call it once the figure is laid out (its axes keep
    their size from here on). Returns the labels that found no free place (left off the plot)."""
    fig = ax.figure
    fig.canvas.draw()  # resolves the legend's "best" place and the axes' final extent
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    taken = [ax.get_legend().get_window_extent(renderer)] if ax.get_legend() else []
    left_off = []
    for x, y, text in points:
        for dx, dy in LABEL_OFFSETS:
            label = ax.annotate(text, (x, y), textcoords="offset points", xytext=(dx, dy), fontsize=POINT_LABEL_SIZE,
                                ha="left" if dx > 0 else "right")
            box = label.get_window_extent(renderer)
            inside = frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
            if inside and not any(box.overlaps(other) for other in taken):
                taken.append(box)
                break
            label.remove()
        else:
            left_off.append(text)
    return left_off


def pareto_front(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Points no other point beats on both fewer tokens and a higher score, by increasing tokens."""
    front, best = [], float("-inf")
    for x, y in sorted(points, key=lambda p: (p[0], -p[1])):
        if y > best:
            front.append((x, y))
            best = y
    return front


def score_vs_tokens(runs: list[Run], path: Path, oracle: tuple[float, float] | None = None,
                    title: str = "") -> Path | None:
    """One point per config: mean prompt tokens (x, log) against score; Pareto front drawn."""
    pts = [(x, y, r) for r in runs
           if (x := r.mean_of("prompt_tokens")) is not None and (y := r.score_at()) is not None and x > 0]
    if not pts:
        return None
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    for kind in sorted({_kind(r) for _, _, r in pts}):
        xs = [x for x, _, r in pts if _kind(r) == kind]
        ys = [y for _, y, r in pts if _kind(r) == kind]
        ax.scatter(xs, ys, s=46, label=_name(kind), color=_colour(kind), zorder=3,
                   edgecolors="white", linewidths=0.6)
    front = pareto_front([(x, y) for x, y, _ in pts])
    on_front = set(front)
    if len(front) > 1:
        ax.step([x for x, _ in front], [y for _, y in front], where="post", color="black", lw=1.2, ls="--",
                label="Pareto front", zorder=2)
    ax.scatter([x for x, _ in front], [y for _, y in front], s=120, facecolors="none", edgecolors="black", zorder=4)
    if oracle and oracle[0] and oracle[0] > 0:
        ax.scatter([oracle[0]], [oracle[1]], marker="*", s=180, color=_colour("oracle"), label="oracle router",
                   zorder=5)
    ax.set_xscale("log")
    ax.set_xlabel("mean prompt tokens per question (log scale)")
    ax.set_ylabel("score (x100)")
    ax.set_title(f"Score against prompt size, one point per config{title}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=LEGEND_SIZE, loc="best")
    fig.tight_layout()
    # every point when few, else the front's points and the best long context; the front's first
    labelled = [(x, y, r.label) for x, y, r in sorted(pts, key=lambda p: ((p[0], p[1]) not in on_front, p[0]))
                if len(pts) <= MAX_POINT_LABELS or (x, y) in on_front
                or r.spec.role == ROLE_LONGCTX and not r.budget_matched]
    left_off = place_point_labels(ax, labelled)
    if left_off:  # said under the axes, where no label is
        ax.set_xlabel(f"{ax.get_xlabel()}; {len(left_off)} point label(s) left off for room: see the config table")
    return save_figure(fig, path)


def score_by_level(runs: list[Run], path: Path, title: str = "") -> Path | None:
    """Score by length level: every config thin, the best config of each arm bold and labelled."""
    levels = levels_of(runs)
    scored = [r for r in runs if r.score_at() is not None]
    if not levels or not scored:
        return None
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    best: dict[str, Run] = {}
    for r in scored:
        k = _kind(r)
        if k not in best or (r.score_at() or 0) > (best[k].score_at() or 0):  # (scored: neither is None)
            best[k] = r
    handles = []
    for r in scored:
        at = [(i, y) for i, lvl in enumerate(levels) if (y := r.score_at(lvl)) is not None]
        xs, ys = [i for i, _ in at], [y for _, y in at]
        k = _kind(r)
        bold = best[k] is r
        (line,) = ax.plot(xs, ys, marker="o" if bold else ".", color=_colour(k), lw=2.2 if bold else 0.8,
                          alpha=1.0 if bold else 0.35,
                          ls="-" if k == "budget" or spec_of_run(k).role == ROLE_LONGCTX else "--",
                          zorder=3 if bold else 2,
                          label=f"{_name(k)}: {r.label}" if bold else None)
        if bold:
            handles.append(line)
    ax.set_xticks(range(len(levels)), levels)
    ax.set_xlabel("length level (context length of the benchmark)")
    ax.set_ylabel("score (x100)")
    ax.set_title(f"Score by length level (bold: best config of each arm){title}")
    ax.grid(alpha=0.3)
    ax.legend(handles=handles, fontsize=LEGEND_SIZE, loc="best")
    return save_figure(fig, path)


RECALL_NAMES = {"evidence_recall": "evidence recall", "doc_recall": "document recall"}


def recall_curves(runs: list[Run], path: Path, title: str = "") -> Path | None:
    """Recall@n per retriever and chunk size (pooled over the configs that share them): of gold
    spans (solid) and, for benchmarks whose evidence is whole documents, of gold documents (dashed)."""
    pooled: dict[tuple[str, str], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        curve = run.spec.curve(run.knobs)
        if not run.spec.indexed or curve is None:
            continue
        for rec in run.records:
            if not schema.has_context(rec):
                continue
            for key in schema.RECALL_KEYS:
                for n, v in (rec.get(key) or {}).items():
                    if v is not None:
                        pooled[(key, curve.series)][int(n)].append(v)
    pooled = {k: v for k, v in pooled.items() if v}
    if not pooled:
        return None
    kinds = sorted({key for key, _ in pooled}, key=schema.RECALL_KEYS.index)
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    for key, series in sorted(pooled, key=lambda ks: (schema.RECALL_KEYS.index(ks[0]), ks[1])):
        points = pooled[(key, series)]
        ns = sorted(points)
        label = series if len(kinds) == 1 else f"{series} ({RECALL_NAMES[key]})"
        ax.plot(ns, [mean(points[n]) for n in ns], marker="o", linestyle="-" if key == "evidence_recall" else "--",
                label=label)
    ax.set_xscale("log")
    all_ns = sorted({n for d in pooled.values() for n in d})
    ax.set_xticks(all_ns, [str(n) for n in all_ns])
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("n (top-n retrieved chunks)")
    what = " / ".join(RECALL_NAMES[k] for k in kinds)
    ax.set_ylabel(f"{what}@n" + (" (share of gold documents)" if kinds == ["doc_recall"] else ""))
    ax.set_title(f"{what[0].upper() + what[1:]}@n per retriever and chunk size{title}")
    ax.grid(alpha=0.3)
    ax.legend(title="retriever, chunk size (tokens)", fontsize=LEGEND_SIZE, title_fontsize=LEGEND_SIZE)
    return save_figure(fig, path)


ORDER_STYLES = {"document": "-", "score": "--"}


def topk_tradeoff(runs: list[Run], path: Path, longctx_score: float | None = None, title: str = "") -> Path | None:
    """Score vs top-k beside evidence-in-prompt vs top-k: colour per retriever and chunk size,
    line style per chunk order (solid: document order, dashed: score order)."""
    series, sort_order = _topk_series(runs)
    if not series:
        return None
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8))
    colour_keys = sorted({k for k, _ in series}, key=lambda k: (sort_order[k], k))
    cmap = plt.get_cmap("tab10" if len(colour_keys) <= 10 else "tab20")
    colours = {k: cmap(i % cmap.N) for i, k in enumerate(colour_keys)}
    # gold spans where the benchmark has them, else gold documents (Loong): never the two mixed
    share = "evidence_in_prompt" if any(_retrieved_mean(r) is not None for d in series.values() for r in d.values()) \
        else "docs_in_prompt"
    for (key, order) in sorted(series):
        runs_by_k = series[(key, order)]
        ks = sorted(runs_by_k)
        style = dict(color=colours[key], ls=ORDER_STYLES.get(order, ":"), lw=1.6, markersize=4)
        score_ks = [k for k in ks if runs_by_k[k].score_at() is not None]
        if score_ks:
            left.plot(score_ks, [runs_by_k[k].score_at() for k in score_ks], marker="o", **style)
        rec_ks = [k for k in ks if _retrieved_mean(runs_by_k[k], share) is not None]
        right.plot(rec_ks, [_retrieved_mean(runs_by_k[k], share) for k in rec_ks], marker="s", **style)
    if longctx_score is not None:
        left.axhline(longctx_score, color=_role_colour(ROLE_LONGCTX), ls=":", lw=2)
    all_ks = sorted({k for d in series.values() for k in d})
    for ax in (left, right):
        ax.set_xticks(all_ks, [str(k) for k in all_ks])
        ax.set_xlabel("top-k (chunks in the prompt)")
        ax.grid(alpha=0.3)
    left.set_ylabel("score (x100)")
    left.set_title("Score vs top-k")
    gold = "evidence" if share == "evidence_in_prompt" else "documents"
    right.set_ylabel(f"gold {gold} in the prompt (share)")
    right.set_ylim(-0.02, 1.02)
    right.set_title(f"Gold {gold} in the prompt vs top-k")
    handles = _topk_legend(colours, colour_keys, sorted({o for _, o in series}), longctx_score is not None)
    # below the two plots, not beside them: the figure keeps its width, so the page shows it (and its legend) unshrunk
    fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(len(handles), 4),
               fontsize=LEGEND_SIZE, title="retriever, chunk size", title_fontsize=LEGEND_SIZE)
    fig.suptitle(f"More chunks: recall keeps rising, score need not{title}", fontsize=10)
    return save_figure(fig, path, tight=True)


def _topk_series(runs: list[Run]) -> tuple[dict[tuple[str, str], dict[int, Run]], dict[str, tuple]]:
    """The RAG runs by curve (series, variant) and top-k, and each series' sort key."""
    series: dict[tuple[str, str], dict[int, Run]] = defaultdict(dict)
    sort_order: dict[str, tuple] = {}
    for r in runs:
        curve = r.spec.curve(r.knobs) if r.spec.role == ROLE_RAG else None
        if curve is not None and curve.x is not None:
            series[(curve.series, curve.variant)][curve.x] = r
            sort_order[curve.series] = curve.order
    return series, sort_order


def _topk_legend(colours: dict[str, Any], colour_keys: list[str], orders: list[str], longctx: bool) -> list[Line2D]:
    """A line per series colour, per chunk order (unless all are in document order), and long context's."""
    handles = [Line2D([], [], color=colours[k], lw=2, label=k) for k in colour_keys]
    if len(orders) > 1 or orders != ["document"]:
        handles += [Line2D([], [], color="black", ls=ORDER_STYLES.get(o, ":"), label=f"order: {o}") for o in orders]
    if longctx:
        handles.append(Line2D([], [], color=_role_colour(ROLE_LONGCTX), ls=":", lw=2, label="best long context"))
    return handles


def _retrieved_mean(run: Run, key: str = "evidence_in_prompt") -> float | None:
    vals = [r[key] for r in run.records if schema.has_context(r) and r.get(key) is not None]
    return mean(vals) if vals else None


DEPTH_BINS = 5


def score_by_depth(runs: list[Run], path: Path, title: str = "") -> Path | None:
    """Score by evidence depth (0 = start of the context, 1 = end) for the best config of each arm."""
    best: dict[str, Run] = {}
    for r in runs:
        if r.score_at() is None or not any(x.get("depth") is not None for x in r.records):
            continue
        k = _kind(r)
        if k not in best or (r.score_at() or 0) > (best[k].score_at() or 0):  # (scored: neither is None)
            best[k] = r
    if not best:
        return None
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    centres = [(i + 0.5) / DEPTH_BINS for i in range(DEPTH_BINS)]
    markers = "osD^vP"
    for j, k in enumerate(sorted(best)):
        bins: dict[int, list[float]] = defaultdict(list)
        for rec in best[k].records:
            if rec.get("depth") is None or not schema.is_scored(rec):
                continue
            bins[min(int(float(rec["depth"]) * DEPTH_BINS), DEPTH_BINS - 1)].append(rec["score"])
        xs = [i for i in range(DEPTH_BINS) if bins[i]]
        shift = (j - (len(best) - 1) / 2) * 0.012  # arms with equal scores stay visible side by side
        ax.plot([centres[i] + shift for i in xs], [100 * mean(bins[i]) for i in xs], marker=markers[j % len(markers)],
                color=_colour(k), alpha=0.9, label=f"{_name(k)}: {best[k].label}")
    ax.set_xlim(0, 1)
    ax.set_xticks([i / DEPTH_BINS for i in range(DEPTH_BINS + 1)])
    ax.set_xlabel("evidence depth in the context (0 = start, 1 = end), binned")
    ax.set_ylabel("score (x100)")
    ax.set_title(f"Score by evidence depth (best config of each arm){title}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=LEGEND_SIZE, loc="best")
    return save_figure(fig, path)


def agreement_matrix(both_right: int, only_lc: int, only_rag: int, both_wrong: int, path: Path,
                     title: str = "") -> Path:
    """2x2 matrix: long context right/wrong x best RAG right/wrong, counts and shares."""
    n = max(both_right + only_lc + only_rag + both_wrong, 1)
    cells = [[both_right, only_rag], [only_lc, both_wrong]]  # rows: RAG right/wrong; columns: long context
    fig, ax = plt.subplots(figsize=(4.8, 4.0))
    ax.imshow([[c / n for c in row] for row in cells], cmap="Blues", vmin=0, vmax=1)
    for i in range(2):
        for j in range(2):
            share = cells[i][j] / n
            ax.text(j, i, f"{cells[i][j]}\n({100 * share:.0f}%)", ha="center", va="center", fontsize=11,
                    color="white" if share > 0.6 else "black")
    ax.set_xticks([0, 1], ["right", "wrong"])
    ax.set_yticks([0, 1], ["right", "wrong"])
    ax.set_xlabel("long context")
    ax.set_ylabel("best RAG")
    ax.set_title(f"Per-question agreement{title}", fontsize=10)
    ax.legend(handles=[Line2D([], [], ls="", label=f"n = {n} shared questions")], loc="upper center",
              bbox_to_anchor=(0.5, -0.18), fontsize=LEGEND_SIZE, frameon=False)
    return save_figure(fig, path)
