"""The subsection "By lexical overlap and where the evidence lies" (under Diagnostics); nothing when no record
carries an overlap, pages or a question-level group (rows: experiments.report.overlap)."""

from __future__ import annotations

from dataclasses import dataclass

from eval.lexical_overlap import BUCKET_EDGES
from experiments.report.overlap import SplitRow, question_groups, split_rows, spread
from experiments.report.page.cells import fmt
from experiments.report.page.contents import Outline
from experiments.report.page.document import Document, Heading, Paragraph, Table
from experiments.report.page.report_summary import Facts, Summary

ANCHOR, TITLE = "overlap", None


@dataclass(frozen=True)
class Overlap:
    splits: list[SplitRow]  # scores and recall by overlap bucket and by where the evidence lies (overlap.csv)
    spread: dict[str, float]  # per config: recall high - low overlap
    question_groups: dict[str, tuple[int, int]]  # per benchmark: questions grouped alone, questions


def rows(f: Facts) -> Overlap:
    """Scores and recall split by overlap and by where the evidence lies (overlap.csv), each config's recall gap
    high - low overlap, and per benchmark the questions grouped alone (no evidence in a corpus document)."""
    splits = split_rows(f.runs)
    return Overlap(splits, spread(splits), question_groups(f.runs))


def render(doc: Document, s: Summary, outline: Outline) -> None:
    mine: Overlap = s.sections[ANCHOR]
    if not mine.splits and not mine.question_groups:
        return
    doc.add(Heading(3, "By lexical overlap and where the evidence lies"))
    if mine.splits:
        doc.add(Table(["benchmark", "config", "split", "part", "n", "score", "evidence recall"],
                      [_cells(r) for r in mine.splits]), Paragraph(explained()))
        lean = mine.spread
        if lean:
            worst = max(lean, key=lambda c: lean[c])
            doc.add(Paragraph(f"Recall gap high − low overlap: largest for {worst} ({lean[worst]:+.2f})."))
    for benchmark, (own, n) in sorted(mine.question_groups.items()):
        doc.add(Paragraph(f"{benchmark}: {own} of {n} questions have no evidence inside a document of the corpus, so "
                          "the bootstrap resamples each of them alone (its group is the question); the others are "
                          "grouped by the document their evidence lies in."))


def explained() -> str:
    lo, hi = BUCKET_EDGES
    return (f"Overlap: the share of a question's content words found in its evidence (low < {lo:g} <= "
            f"mid < {hi:g} <= high). Questions that repeat their evidence's words flatter lexical "
            "retrieval (NoLiMa): a config whose recall falls from high to low wins on the easy "
            "questions only. Evidence: questions whose evidence lies on PDF pages and the rest "
            "(overlap.csv has these rows).")


def _cells(r: SplitRow) -> list[str]:
    return [r.benchmark, r.config, r.split, r.part, str(r.n), fmt(r.score, 1),
            "-" if r.recall is None else f"{r.recall:.2f} @{r.recall_at}"]
