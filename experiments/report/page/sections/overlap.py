"""The subsection "By lexical overlap and where the evidence lies" (under Diagnostics); nothing when no record
carries an overlap, pages or a question-level group.

Score and evidence recall by lexical-overlap bucket, and by where the evidence lies (PDF pages or not).

NoLiMa (Modarressi et al., 2025): questions that repeat the words of their evidence flatter lexical
retrieval. A question's `lexical_overlap` (eval/lexical_overlap.py: the share of its content words found in
its evidence) is computed by the loader where the evidence is known text (benchmark=corpus, for given and
generated questions alike) and carried by every record. Here each config's score and evidence recall are
split by the fixed buckets (`low` < 0.3 <= `mid` < 0.6 <= `high`): a RAG config whose recall falls from the
high bucket to the low one wins on the easy questions only, and a verdict drawn mostly from high-overlap
questions says less about real ones.

Records of `benchmark=corpus` also carry `evidence_pages` when their evidence lies in a PDF: the same split
by "evidence on PDF pages" / "elsewhere" shows whether PDF extraction costs a config recall."""

from __future__ import annotations

from dataclasses import dataclass
from statistics import mean
from typing import Any

from eval.lexical_overlap import BUCKET_EDGES, BUCKETS, overlap_bucket
from experiments import records as schema
from experiments.report.page.cells import fmt
from experiments.report.page.contents import Outline
from experiments.report.page.document import Document, Heading, Paragraph, Table
from experiments.report.page.report_summary import Facts, Summary
from experiments.report.runs import Run

ANCHOR, TITLE = "overlap", None


RECALL_AT = 5  # the recall@n shown: n = 5 where the run measured it, else its largest n


@dataclass(frozen=True)
class SplitRow:
    """One config's figures over one part of its questions."""

    benchmark: str
    config: str
    split: str  # "overlap" | "evidence"
    part: str  # a bucket (low/mid/high), or "PDF pages" / "elsewhere"
    n: int  # scored questions in the part
    score: float | None  # mean score, 0..100
    recall: float | None  # mean evidence recall@n, 0..1 (RAG configs)
    recall_at: int | None

    def as_csv(self) -> dict[str, Any]:
        return {"benchmark": self.benchmark, "config": self.config, "split": self.split, "part": self.part,
                "n": self.n, "score": None if self.score is None else round(self.score, 2),
                "recall": None if self.recall is None else round(self.recall, 4), "recall_at": self.recall_at}


def _recall(record: dict[str, Any], at: int | None) -> float | None:
    values = record.get("evidence_recall") or {}
    return None if at is None else values.get(str(at))


def _recall_n(records: list[dict[str, Any]]) -> int | None:
    ns = sorted({int(n) for r in records for n in (r.get("evidence_recall") or {})})
    if not ns:
        return None
    return RECALL_AT if RECALL_AT in ns else ns[-1]


def _row(run: Run, split: str, part: str, records: list[dict[str, Any]], at: int | None) -> SplitRow:
    scored = [float(r["score"]) for r in records if schema.is_scored(r)]
    recalls = [v for v in (_recall(r, at) for r in records) if v is not None]
    return SplitRow(run.benchmark, run.label, split, part, len(scored), 100 * mean(scored) if scored else None,
                    mean(recalls) if recalls else None, at if recalls else None)


def _parts(records: list[dict[str, Any]], split: str) -> dict[str, list[dict[str, Any]]]:
    if split == "overlap":
        parts: dict[str, list[dict[str, Any]]] = {b: [] for b in BUCKETS}
        for r in records:
            if r.get("lexical_overlap") is not None:
                parts[overlap_bucket(float(r["lexical_overlap"]))].append(r)
        return parts
    return {"PDF pages": [r for r in records if r.get("evidence_pages")],
            "elsewhere": [r for r in records if not r.get("evidence_pages")]}


def split_rows(runs: list[Run]) -> list[SplitRow]:
    """Per config: its figures by overlap bucket (where any record carries an overlap) and by whether the
    evidence lies on PDF pages (where any record's does). Configs without such records give no rows."""
    rows: list[SplitRow] = []
    for run in sorted(runs, key=lambda r: (r.benchmark, r.label)):
        records = run.records
        at = _recall_n(records)
        for split, present in (("overlap", any(r.get("lexical_overlap") is not None for r in records)),
                               ("evidence", any(r.get("evidence_pages") for r in records))):
            if present:
                rows += [_row(run, split, part, recs, at) for part, recs in _parts(records, split).items()]
    return rows


def spread(rows: list[SplitRow]) -> dict[str, float]:
    """{config: recall in the high overlap bucket minus recall in the low one}, where both are measured:
    how much a config's retrieval leans on the question repeating its evidence's words."""
    by: dict[str, dict[str, float]] = {}
    for row in rows:
        if row.split == "overlap" and row.recall is not None and row.n:
            by.setdefault(row.config, {})[row.part] = row.recall
    return {config: parts["high"] - parts["low"] for config, parts in by.items() if {"high", "low"} <= set(parts)}


def question_groups(runs: list[Run]) -> dict[str, tuple[int, int]]:
    """{benchmark: (questions that are their own bootstrap group, questions)}: benchmark=corpus with
    context=corpus groups a question by the document its evidence lies in, else by the question itself."""
    out: dict[str, tuple[int, int]] = {}
    for run in runs:
        groups = {str(r["id"]): str(r.get("group") or "") for r in run.records}
        own = sum(g.startswith("question:") for g in groups.values())
        if own and len(groups) > out.get(run.benchmark, (0, 0))[1]:
            out[run.benchmark] = (own, len(groups))
    return out


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
