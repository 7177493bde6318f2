"""The subsection "Questions without references: pairwise preference" (under the verdict): RAG's answers against
long context's, judged in both orders (rows: experiments.report.pairwise)."""

from __future__ import annotations

from dataclasses import dataclass

from experiments.report.page.cells import pct
from experiments.report.page.contents import Outline
from experiments.report.page.document import Document, Heading, Paragraph, Table
from experiments.report.page.report_summary import Facts, Summary
from experiments.report.pairwise import PairwiseRow, pairwise_rows, waiting

ANCHOR, TITLE = "pairwise", None

HEAD = ["benchmark", "RAG", "long context", "questions", "documents", "RAG wins", "ties", "LC wins", "order flips",
        "wins − losses, % [95% CI]", "words (RAG / LC)", "no judgment"]
EXPLAINED = (
    "Questions with neither reference answers nor evidence are scored by a judge that compares RAG's answer with "
    "long context's (`python -m experiments.pairwise`): asked twice, the answers shown in both orders and never "
    "named; a preference counts only when both orders agree, and one that flips with the order is a tie. In the "
    "verdict such questions score 1 (RAG preferred), 0.5 (tie) or 0 (long context preferred) for RAG and 0.5 for "
    "long context, so Δ is half the net preference, (wins − losses) / 2, in points. Judges favour longer "
    "answers: read the win rate beside the answer lengths.")


@dataclass(frozen=True)
class Pairwise:
    rows: list[PairwiseRow]  # the judged pairs per benchmark
    unjudged: int  # answers that still wait for a judgment


def rows(f: Facts) -> Pairwise:
    """The judged pairs per benchmark, and how many answers still wait for a judgment."""
    return Pairwise(pairwise_rows(f.loaded.judged, f.settings.resamples, f.settings.seed), waiting(f.runs))


def render(doc: Document, s: Summary, outline: Outline) -> None:
    mine: Pairwise = s.sections[ANCHOR]
    if not mine.rows and not mine.unjudged:
        return
    doc.add(Heading(3, "Questions without references: pairwise preference", "pairwise"), Paragraph(EXPLAINED))
    if mine.unjudged:
        doc.add(Paragraph(f"{mine.unjudged} answer(s) wait for a pairwise judgment and are left out of every score: "
                          "run `python -m experiments.pairwise RUN_DIRS --judge-model MODEL`, then the report again."))
    if mine.rows:
        doc.add(Table(HEAD, [_cells(r) for r in mine.rows]))


def _cells(r: PairwiseRow) -> list[str]:
    net = f"{r.net:+.1f}" + (f" [{r.ci[0]:+.1f}, {r.ci[1]:+.1f}]" if r.ci else " (one document)")
    return [r.benchmark, r.rag, r.longctx, str(r.n), str(r.documents), pct(r.win), pct(r.tie), pct(r.loss),
            pct(r.flipped), net, f"{r.words_rag:.0f} / {r.words_longctx:.0f}", str(r.no_judgment)]
