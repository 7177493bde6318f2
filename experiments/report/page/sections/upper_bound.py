"""The subsection "Retrieval's upper bound" (under the verdict): the oracle retriever beside the chosen RAG config
and long context, what retrieval costs (rows: experiments.report.upper_bound)."""

from __future__ import annotations


from experiments.report.page.cells import fmt
from experiments.report.page.contents import Outline
from experiments.report.page.document import Document, Heading, Paragraph, Table
from experiments.report.page.report_summary import Facts, Summary
from experiments.report.upper_bound import UpperBoundRow, upper_bound_rows

ANCHOR, TITLE = "upper-bound", None

HEAD = ["benchmark", "level", "oracle", "score", "evidence recall@k", "chosen RAG", "score", "long context",
        "what retrieval costs", "share of the LC gap it closes"]
EXPLAINED = (
    "The oracle retriever (`retriever=oracle`) gives the prompt the chunks that hold the gold evidence, at most "
    "top k of them in document order, through the same template: the score a perfect retriever would reach with "
    "this chunking and generator. What retrieval costs = oracle − chosen RAG config (points); the last column is "
    "that difference as a share of long context's lead over RAG (\"-\" where long context does not lead). The "
    "oracle reads the answer's evidence, so the verdict never chooses it. Scores: all scored questions of the "
    "level (the verdict's columns are on the questions both arms share).")


def rows(f: Facts) -> list[UpperBoundRow]:
    return upper_bound_rows(f.runs, f.vrows)


def render(doc: Document, s: Summary, outline: Outline) -> None:
    mine: list[UpperBoundRow] = s.sections[ANCHOR]
    if mine:
        doc.add(Heading(3, "Retrieval's upper bound: what retrieval costs"),
                Table(HEAD, [_cells(r) for r in mine]), Paragraph(EXPLAINED))


def _cells(r: UpperBoundRow) -> list[str]:
    return [r.benchmark, r.level, r.oracle.label, fmt(r.oracle_score, 1), fmt(r.recall_at_k, 2),
            r.rag.label if r.rag else "-", fmt(r.rag_score, 1), fmt(r.lc_score, 1),
            "-" if r.retrieval_cost is None else f"{r.retrieval_cost:+.1f}",
            "-" if r.gap_closed is None else f"{r.gap_closed:.0%}"]
