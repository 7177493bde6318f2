"""Why each answer was lost: one reason per wrong answer, and the table "Why answers were lost".

A wrong answer (score below `correct_threshold`, skipped answers included) gets exactly one reason, read
from its record:

- `retrieval miss`: RAG's ranking did not hold the evidence in its top k (or held enough of it to count, but a
  chunk border cut out the answer the evidence holds);
- `cut by the prompt budget`: the evidence was in the top k, but the chunk holding it did not fit the prompt;
- `truncated away`: long context cut it (or the answer inside it) to fit the model's window;
- `reading miss`: the evidence reached the model and the answer is still wrong;
- `no evidence known`: the question has no evidence quotes (and no answer to look for in the context);
- `not served`: the arm could not build a prompt that fits (a skipped record).

"Reached the model" means at least `evidence_threshold` of the gold evidence is in the prompt (the
diagnostics' rule). Where a question has no evidence quotes but has answers, the second signal decides:
`answer_in_context`, whether a gold answer (normalised) appears in the context sent. Each row of the table
says which signal its reasons came from.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from eval.evidence_text import answer_in_text
from eval.sample import level_sort_key
from experiments import records as schema
from experiments.arms import ROLE_LONGCTX
from experiments.report.runs import Run

RETRIEVAL_MISS = "retrieval miss"
BUDGET_CUT = "cut by the prompt budget"
TRUNCATED = "truncated away"
READING_MISS = "reading miss"
NO_EVIDENCE = "no evidence known"
NOT_SERVED = "not served"
REASONS = (RETRIEVAL_MISS, BUDGET_CUT, TRUNCATED, READING_MISS, NO_EVIDENCE, NOT_SERVED)

EVIDENCE_SIGNAL = "evidence"
ANSWER_SIGNAL = "answer in context"

EPS = 1e-9


def _first(rec: dict[str, Any], keys: tuple[str, ...]) -> float | None:
    return next((rec[k] for k in keys if rec.get(k) is not None), None)


def _retrieved_path(rec: dict[str, Any]) -> bool:
    """Whether the context was retrieved chunks (RAG, or a routing arm's RAG path), not the whole document."""
    if rec.get("route"):
        return rec["route"] != ROLE_LONGCTX
    return "retrieved" in rec or "evidence_in_prompt" in rec or "docs_in_prompt" in rec


def _in_top_k(rec: dict[str, Any], depth: int | None) -> float | None:
    """Share of the evidence in the top k before packing (older records: recall@k at the arm's retrieval depth k,
    when k was one of its n)."""
    if rec.get("evidence_in_top_k") is not None:
        return rec["evidence_in_top_k"]
    return (rec.get("evidence_recall") or {}).get(str(depth)) if depth is not None else None


def _answer_cut(rec: dict[str, Any]) -> bool:
    """The evidence counts as present (enough of its characters) but the answer it holds is not in the context:
    a chunk border or the truncation cut the answer itself out ("the code 1408" of "the code 1408567")."""
    if rec.get("answer_in_context") is not False:
        return False
    quotes = " ".join(str(q.get("text", "")) for q in rec.get("evidence_quotes") or [])
    return bool(quotes) and answer_in_text(rec.get("answers") or [], quotes, str(rec.get("language") or "en")) is True


def loss_reason(rec: dict[str, Any], evidence_threshold: float = 1.0, depth: int | None = None
                ) -> tuple[str, str | None]:
    """(reason, signal) of one wrong answer; signal: EVIDENCE_SIGNAL, ANSWER_SIGNAL or None (nothing to read).
    `depth`: the run's retrieval depth (`Run.retrieval_depth`, top_k for RAG)."""
    if schema.status_of(rec) == schema.SKIPPED:
        return NOT_SERVED, None
    thr = evidence_threshold - EPS
    found = rec.get("answer_in_context")
    if _retrieved_path(rec):
        in_prompt = _first(rec, ("evidence_in_prompt", "docs_in_prompt"))
        if in_prompt is None:
            if found is None:
                return NO_EVIDENCE, None
            return (READING_MISS if found else RETRIEVAL_MISS), ANSWER_SIGNAL
        if in_prompt >= thr:
            return (RETRIEVAL_MISS if _answer_cut(rec) else READING_MISS), EVIDENCE_SIGNAL
        top = _in_top_k(rec, depth)
        return (BUDGET_CUT if top is not None and top >= thr else RETRIEVAL_MISS), EVIDENCE_SIGNAL
    kept = _first(rec, ("evidence_retained", "docs_retained"))
    if kept is None:
        if found is None or (not found and not rec.get("truncated")):
            return NO_EVIDENCE, None  # an answer not in the whole document says nothing about what was lost
        return (READING_MISS if found else TRUNCATED), ANSWER_SIGNAL
    return (READING_MISS if kept >= thr and not _answer_cut(rec) else TRUNCATED), EVIDENCE_SIGNAL


def is_wrong(rec: dict[str, Any], correct_threshold: float) -> bool:
    return schema.is_scored(rec) and float(rec["score"]) < correct_threshold


@dataclass
class LossRow:
    """One config at one length level: its wrong answers counted by reason."""

    benchmark: str
    config: str
    level: str
    scored: int
    wrong: int
    reasons: Counter = field(default_factory=Counter)
    signals: Counter = field(default_factory=Counter)

    @property
    def signal(self) -> str:
        """Which signal the row's reasons came from: evidence, answer in context, both, or '-'."""
        used = [s for s in (EVIDENCE_SIGNAL, ANSWER_SIGNAL) if self.signals[s]]
        return " + ".join(used) if used else "-"

    @property
    def main_reason(self) -> tuple[str, int] | None:
        """The reason most wrong answers share (ties: in REASONS order); None without a wrong answer."""
        if not self.wrong:
            return None
        return max(((r, self.reasons[r]) for r in REASONS), key=lambda rc: (rc[1], -REASONS.index(rc[0])))

    def as_csv(self) -> dict[str, Any]:
        return {"benchmark": self.benchmark, "config": self.config, "level": self.level, "scored": self.scored,
                "wrong": self.wrong, **{r: self.reasons[r] for r in REASONS}, "signal": self.signal}


def loss_row(run: Run, level: str | None, correct_threshold: float, evidence_threshold: float) -> LossRow:
    recs = [r for r in run.records_at(level) if schema.is_scored(r)]
    row = LossRow(run.scope, run.label, level or "all", len(recs), 0)
    depth = run.retrieval_depth
    for rec in recs:
        if not is_wrong(rec, correct_threshold):
            continue
        reason, signal = loss_reason(rec, evidence_threshold, depth)
        row.wrong += 1
        row.reasons[reason] += 1
        if signal:
            row.signals[signal] += 1
    return row


def loss_rows(runs: list[Run], correct_threshold: float, evidence_threshold: float) -> list[LossRow]:
    """Per config with a context (RAG, long context, routing arms) and length level, plus `all` where a run
    spans several levels."""
    rows = []
    for run in runs:
        if not run.spec.context or not any(schema.is_scored(r) for r in run.records):
            continue
        levels = sorted({str(r.get("length_level")) for r in run.records}, key=level_sort_key)
        for level in (levels if len(levels) == 1 else [*levels, None]):
            rows.append(loss_row(run, level, correct_threshold, evidence_threshold))
    return rows


__all__ = ["ANSWER_SIGNAL", "EVIDENCE_SIGNAL", "LossRow", "REASONS", "is_wrong", "loss_reason", "loss_row",
           "loss_rows"]
