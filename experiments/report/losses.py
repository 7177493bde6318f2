"""What was lost before any answer was scored, per benchmark: the documents a config's prompts cut to fit the
model's window (and the questions whose evidence went with them), and what the load left out or read
doubtfully (unreadable files and the questions about them, evidence quotes that did not align, CSV cells
read as one answer, documents read with a warning). The report's first screen names them under the answer
(page/sections/first_screen.py): a verdict over what is left says nothing about what was lost.

Read from each run's metrics.json (`context_cuts`, written by the runner from experiments/context_cuts.py;
`load_losses`, from the benchmark's `LoadResult.losses`); a run written before those existed gives its
truncated records' count instead, without document names."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from experiments import records as schema
from experiments.report.runs import Run


@dataclass
class CutRow:
    """Documents one config's prompts cut to fit the window."""

    benchmark: str
    config: str
    window: int | None
    documents: int  # documents its questions' contexts hold
    documents_cut: list[dict[str, Any]]  # {"document", "chars", "kept": [[start, end], ...]}
    n_documents_cut: int | None  # None: an old run that did not say which
    questions: int
    questions_cut: int
    evidence_lost: list[str] = field(default_factory=list)
    n_evidence_lost: int = 0
    n_evidence_gone: int = 0
    questions_with_evidence: int = 0


@dataclass
class LoadLossRow:
    """One kind of loss at load time, with its count and names."""

    benchmark: str
    kind: str
    count: int
    names: list[str]
    hint: str = ""


@dataclass
class Losses:
    cuts: list[CutRow]
    load: list[LoadLossRow]

    def __bool__(self) -> bool:
        return bool(self.cuts or self.load)


def _cut_row(run: Run) -> CutRow | None:
    cuts = run.metrics.get("context_cuts")
    if isinstance(cuts, dict):
        if not cuts.get("n_documents_cut"):
            return None
        return CutRow(run.scope, run.label, cuts.get("window"), int(cuts.get("documents") or 0),
                      list(cuts.get("documents_cut") or []), int(cuts["n_documents_cut"]), int(cuts["questions"]),
                      int(cuts.get("questions_cut") or 0), list(cuts.get("evidence_lost") or []),
                      int(cuts.get("n_evidence_lost") or 0), int(cuts.get("n_evidence_gone") or 0),
                      int(cuts.get("questions_with_evidence") or 0))
    told = [r for r in run.records if schema.has_context(r) and r.get("truncated") is not None]
    cut = [r for r in told if r.get("truncated")]
    if not cut:
        return None
    kept = [(str(r["id"]), r.get("evidence_retained")) for r in told]
    lost = [i for i, k in kept if k is not None and k < 1 - 1e-9]
    return CutRow(run.scope, run.label, None, 0, [], None, len(told), len(cut), lost, len(lost),
                  sum(1 for _, k in kept if k is not None and k <= 1e-9), sum(1 for _, k in kept if k is not None))


def _load_rows(runs: list[Run]) -> list[LoadLossRow]:
    """Per benchmark and kind, the fullest account any of its runs gives (the runs of a sweep load alike)."""
    best: dict[tuple[str, str], LoadLossRow] = {}
    for run in runs:
        if "load_losses" not in run.metrics:  # written before runs named their losses: the counts alone
            for reason, n in (run.metrics.get("skipped_at_load") or {}).items():
                key = (run.scope, f"{reason}, left out")
                if n and (key not in best or int(n) > best[key].count):
                    best[key] = LoadLossRow(run.scope, key[1], int(n), [])
        for loss in run.metrics.get("load_losses") or []:
            if not isinstance(loss, dict) or not loss.get("kind"):
                continue
            row = LoadLossRow(run.scope, str(loss["kind"]), int(loss.get("count") or 0),
                              [str(n) for n in loss.get("names") or []], str(loss.get("hint") or ""))
            key = (row.benchmark, row.kind)
            if key not in best or row.count > best[key].count:
                best[key] = row
    return sorted(best.values(), key=lambda r: r.benchmark)  # stable: in the order the load met them


def losses(runs: list[Run]) -> Losses:
    cuts = [row for row in (_cut_row(r) for r in runs) if row is not None]
    return Losses(sorted(cuts, key=lambda c: (c.benchmark, c.config)), _load_rows(runs))


__all__ = ["CutRow", "LoadLossRow", "Losses", "losses"]
