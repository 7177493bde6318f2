"""Retrieval's upper bound: the oracle retriever (retriever=oracle, the gold evidence's chunks through the same
template and budget) beside the chosen RAG config and long context, per benchmark and length level.

"What retrieval costs" is the oracle's score minus the chosen RAG config's; with long context's score beside it,
the share of the long-context gap a better retriever could close is (oracle - RAG) / (long context - RAG), where
long context leads. The oracle is never a candidate of the verdict (experiments.report.verdict.selection)."""

from __future__ import annotations

from dataclasses import dataclass

from experiments import records as schema
from experiments.report.runs import Run
from experiments.report.verdict.row import ALL, VerdictRow
from experiments.report.verdict.selection import oracle_runs


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
    vals = [r["evidence_in_top_k"] if r.get("evidence_in_top_k") is not None
            else (r.get("evidence_recall") or {}).get(str(run.knobs.get("top_k")))
            for r in run.records_at(level) if schema.has_context(r)]
    vals = [v for v in vals if v is not None]
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


__all__ = ["UpperBoundRow", "upper_bound_rows"]
