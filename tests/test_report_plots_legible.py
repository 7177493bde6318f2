"""The report's plots read at 1400 px: no point label drawn over another (or over the legend), and legends in
type a reader can read where the page shows the figure (its width capped by the page's: the PNG is shrunk).

Every figure the report draws for a simulated sweep with many configs close together (the case that put two
config labels on top of each other in "Score against prompt size") is caught as it is saved, laid out as saved,
and measured: each text's bounding box in the figure's pixels, each legend's font size in pixels on the page."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

import pytest

from experiments.report.plots import context_share, figures
from experiments.report.plots.forest import ForestRow, forest_plot
from experiments.report.runs import find_runs
from experiments.simulate.sweeps import make_sweep

# the widest a figure shows on the page at a 1400-px window: the body's 1360 px less a <figure>'s 40-px margins
PAGE_IMAGE_PX = 1280
MIN_LEGEND_PX = 12  # the report's table text is 13.8 px and its body text 16 px


def _measure(fig) -> dict:
    """The figure as it will be saved: its point labels' boxes, its legends' boxes and font sizes, its width."""
    fig.tight_layout()
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend()] + list(fig.legends)
    texts = [t for ax in fig.axes for t in ax.texts if t.get_visible() and t.get_text()]
    return {"labels": [(t.get_text(), t.get_window_extent(renderer)) for t in texts],
            "legends": [(lg.get_window_extent(renderer), [t.get_fontsize() for t in lg.get_texts()]) for lg in legends]}


@pytest.fixture
def saved(monkeypatch):
    """Every figure saved while the test runs: {file name: its measurements}."""
    seen: dict[str, dict] = {}
    real = figures.save_figure

    def measure_then_save(fig, path: Path, *how, **how_kw) -> Path:
        seen[Path(path).name] = _measure(fig)
        return real(fig, path, *how, **how_kw)

    monkeypatch.setattr(figures, "save_figure", measure_then_save)
    monkeypatch.setattr(context_share, "save_figure", measure_then_save)
    return seen


@pytest.fixture(scope="module")
def crowded_runs(tmp_path_factory):
    """Long context and 16 RAG configs (2 retrievers x 2 chunk sizes x 4 top-k) whose points lie close together."""
    root = tmp_path_factory.mktemp("crowded")
    make_sweep(root, per_level=6, chunk_sizes=(128, 256), top_ks=(1, 2, 3, 4), generator="sim")
    return find_runs([root], with_records=True)


def _legend_px_on_page(fontsize_pt: float, png_width_px: float) -> float:
    return fontsize_pt * figures.DPI / 72 * min(1.0, PAGE_IMAGE_PX / png_width_px)


def test_report_figures_have_no_label_over_another_and_legible_legends(crowded_runs, saved, tmp_path):
    best_lc = max(r.score_at() for r in crowded_runs if r.arm == "longctx")
    made = [figures.score_vs_tokens(crowded_runs, tmp_path / "tokens.png", (900.0, best_lc)),
            figures.score_by_level(crowded_runs, tmp_path / "level.png"),
            figures.recall_curves(crowded_runs, tmp_path / "recall.png"),
            figures.topk_tradeoff(crowded_runs, tmp_path / "topk.png", best_lc),
            figures.score_by_depth(crowded_runs, tmp_path / "depth.png"),
            context_share.score_vs_context_share(crowded_runs, tmp_path / "share.png"),
            figures.agreement_matrix(10, 4, 3, 5, tmp_path / "agreement.png")]
    assert all(made) and set(saved) == {p.name for p in made}
    labels = saved["tokens.png"]["labels"]
    assert len(labels) >= 10, "the crowded plot labels its points"
    for name, fig in saved.items():
        for (a, box_a), (b, box_b) in combinations(fig["labels"], 2):
            assert not box_a.overlaps(box_b), f"{name}: {a!r} drawn over {b!r}"
        for text, box in fig["labels"]:
            for legend, _ in fig["legends"]:
                assert not box.overlaps(legend), f"{name}: {text!r} drawn over the legend"
    from PIL import Image

    for path in made:
        width = Image.open(path).size[0]
        for _, sizes in saved[path.name]["legends"]:
            for size in sizes:
                px = _legend_px_on_page(size, width)
                assert px >= MIN_LEGEND_PX, f"{path.name}: legend text {px:.1f} px on the page ({size} pt, {width} px)"


def test_the_forest_plot_legend_reads_on_the_first_screen(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt
    from PIL import Image

    rows = [ForestRow(f"bench{i} · {lvl}", 3.0 * i - 5, (3.0 * i - 9, 3.0 * i - 1), "inconclusive")
            for i in range(3) for lvl in ("1k", "8k")]
    shown = {}
    real_savefig = plt.Figure.savefig

    def keep(fig, *args, **kwargs):
        legend = fig.axes[0].get_legend()
        shown["sizes"] = [t.get_fontsize() for t in legend.get_texts()]
        return real_savefig(fig, *args, **kwargs)

    monkeypatch.setattr(plt.Figure, "savefig", keep)
    path = forest_plot(rows, 2.0, tmp_path / "forest.png")
    width = Image.open(path).size[0]
    assert shown["sizes"] and min(_legend_px_on_page(s, width) for s in shown["sizes"]) >= MIN_LEGEND_PX
