"""The subsection "Retrieval's upper bound" (under the verdict): the oracle retriever (retriever=oracle, the gold
evidence's chunks through the same template and budget) beside the chosen RAG config and long context, per benchmark
and length level.

"What retrieval costs" is the oracle's score minus the chosen RAG config's; with long context's score beside it,
the share of the long-context gap a better retriever could close is (oracle - RAG) / (long context - RAG), where
long context leads. The oracle is never a candidate of the verdict (experiments.report.verdict.selection)."""

from __future__ import annotations

from dataclasses import dataclass

from experiments import records as schema
from experiments.report.page.cells import fmt
from experiments.report.page.contents import Outline
from experiments.report.page.document import Document, Heading, Paragraph, Table
from experiments.report.page.report_summary import Facts, Summary
from experiments.report.runs import Run
from experiments.report.verdict.row import ALL
from experiments.report.verdict.selection import oracle_runs
from experiments.report.verdict_row import VerdictRow

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


@dataclass
class UpperBoundRow:
    benchmark: str
    level: str
    oracle: Run
    oracle_score: float | None
    recall_at_k: float | None  # the oracle's evidence in its top k (1.00: every question's evidence given)
    rag: Run | None
    rag_score: float | None
    lc_score: float | None

    @property
    def retrieval_cost(self) -> float | None:
        """Points the chosen RAG config loses to its retriever: the oracle's score minus its score."""
        if self.oracle_score is None or self.rag_score is None:
            return None
        return self.oracle_score - self.rag_score

    @property
    def gap_closed(self) -> float | None:
        """Share of long context's lead over RAG a perfect retriever closes (None: long context does not lead)."""
        if self.retrieval_cost is None or self.lc_score is None or self.rag_score is None:
            return None
        gap = self.lc_score - self.rag_score
        return self.retrieval_cost / gap if gap > 0 else None


def _recall_at_k(run: Run, level: str | None) -> float | None:
    found = [r["evidence_in_top_k"] if r.get("evidence_in_top_k") is not None
             else (r.get("evidence_recall") or {}).get(str(run.retrieval_depth))
             for r in run.records_at(level) if schema.has_context(r)]
    vals = [v for v in found if v is not None]
    return sum(vals) / len(vals) if vals else None


def upper_bound_rows(runs: list[Run], vrows: list[VerdictRow]) -> list[UpperBoundRow]:
    rows = []
    for v in vrows:
        level = None if v.level == ALL else v.level
        for oracle in oracle_runs([r for r in runs if r.scope == v.benchmark]):
            if not oracle.records_at(level):
                continue
            rows.append(UpperBoundRow(v.benchmark, v.level, oracle, oracle.score_at(level),
                                      _recall_at_k(oracle, level), v.rag,
                                      v.rag.score_at(level) if v.rag else None,
                                      v.lc.score_at(level) if v.lc else None))
    return rows


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
