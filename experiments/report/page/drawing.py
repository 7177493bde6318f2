"""The report's figures, drawn as PNG files beside it before the page is rendered: the verdict's forest plot
and, per benchmark, the plots of section "Plots". The page shows them by file name (experiments.report.page.build
draws them; `present` only places them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from experiments.report.agreement import Agreement
from experiments.report.page.verdict_cells import FOREST_FILE, forest_rows
from experiments.report.plots import figures as plots
from experiments.report.plots.context_share import score_vs_context_share
from experiments.report.plots.forest import forest_plot
from experiments.report.runs import Run
from experiments.report.verdict.oracle import mean_prompt_tokens
from experiments.report.verdict_row import VerdictRow, overall_row


@dataclass
class Figure:
    file: str  # a PNG file in the report's folder
    caption: str


@dataclass
class ScopeFigures:
    """The plots of one benchmark (or pooled scope), and the names of those with nothing to draw."""
    scope: str
    figures: list[Figure] = field(default_factory=list)
    not_drawn: list[str] = field(default_factory=list)


@dataclass
class Figures:
    forest: str | None = None  # the verdict forest plot's file; None: no row with a difference
    scopes: list[ScopeFigures] = field(default_factory=list)

    def files(self, out: Path) -> list[Path]:
        return [out / f for f in ([self.forest] if self.forest else [])] + [
            out / f.file for s in self.scopes for f in s.figures]


def _oracle_point(vrows: list[VerdictRow], scope: str) -> tuple[float, float] | None:
    """The oracle retriever's (mean prompt tokens, score) for the score-vs-tokens plot, if the scope has one."""
    overall = overall_row(vrows, scope)
    best_rag = overall.comparison.best_rag if overall else None
    if not (overall and overall.oracle and overall.lc and best_rag):
        return None
    tokens = mean_prompt_tokens(overall.oracle, best_rag, overall.lc)  # first: the best RAG
    return None if tokens is None else (tokens, overall.oracle.score)


def _scope_figures(scope: str, runs: list[Run], vrows: list[VerdictRow], agreements: list[Agreement],
                   out: Path, single: bool) -> ScopeFigures:
    mine = [r for r in runs if r.scope == scope]
    slug = "" if single else "_" + "".join(c if c.isalnum() else "-" for c in scope)
    title = "" if single else f" ({scope})"
    overall = overall_row(vrows, scope)
    lc_best = overall.comparison.lc_score if overall else None
    made = [
        (plots.score_vs_tokens(mine, out / f"score_vs_prompt_tokens{slug}.png", _oracle_point(vrows, scope), title),
         "Score against mean prompt tokens; the dashed line and circled points are the Pareto front.",
         "score vs prompt tokens (no scored run)"),
        (plots.score_by_level(mine, out / f"score_by_length_level{slug}.png", title),
         "Score by length level; bold lines are the best config of each arm.",
         "score by length level (no scored run)"),
        (plots.recall_curves(mine, out / f"recall_at_n{slug}.png", title),
         "Evidence recall@n per retriever and chunk size.", "recall@n (no RAG run with evidence annotations)"),
        (plots.topk_tradeoff(mine, out / f"score_and_recall_vs_top_k{slug}.png", lc_best, title),
         "Score vs top-k beside evidence-in-prompt vs top-k (the rise-then-fall of OP-RAG).",
         "score and recall vs top-k (no RAG run)"),
        (plots.score_by_depth(mine, out / f"score_by_evidence_depth{slug}.png", title),
         "Score by the depth of the evidence in the context, best config of each arm.",
         "score by evidence depth (no scored record with a depth)"),
        (score_vs_context_share(mine, out / f"score_vs_context_share{slug}.png", title),
         "Score against the share of the full context sent, per level: prompt tokens divided by long context's "
         "(long context at 1.0, the oracle retriever near 0), with 95% intervals over documents. Top-k, chunk "
         "size and long context on one curve.", "score vs share of context (no long-context run)"),
    ]
    drawn = ScopeFigures(scope, [Figure(p.name, caption) for p, caption, _ in made if p is not None],
                         [name for p, _, name in made if p is None])
    for a in agreements:
        if a.benchmark == scope and a.level == "all":
            p = plots.agreement_matrix(a.both_right, a.only_lc, a.only_rag, a.both_wrong,
                                       out / f"agreement_matrix{slug}.png", title)
            drawn.figures.append(Figure(p.name, f"Per-question agreement of long context ({a.lc.label}) and the best "
                                                f"RAG config ({a.rag.label})."))
    return drawn


def draw_figures(runs: list[Run], vrows: list[VerdictRow], agreements: list[Agreement], tolerance: float,
                 out: Path) -> Figures:
    """Draw every figure of the report into `out`; what was drawn and what had nothing to draw."""
    forest = forest_plot(forest_rows(vrows), tolerance, out / FOREST_FILE)
    scopes = sorted({r.scope for r in runs})
    return Figures(forest.name if forest else None,
                   [_scope_figures(scope, runs, vrows, agreements, out, len(scopes) == 1) for scope in scopes])
