"""The one way to read runs: `load_runs(paths)`.

It finds the run folders under `paths` (multirun folders, run folders or a mix), keeps one run per config point
(the duplicates are listed), sets aside runs without records, sorts the rest as the report shows them
(benchmark, arm, mean prompt tokens, label), makes labels unique within a verdict's scope and applies the
pairwise judgments (`pairwise.jsonl`, written by `python -m experiments.pairwise`) to the records they score. The
report, the plan, the pairwise pass, the known-truth simulations that calibrate the verdict and the perf scripts all
read runs here, so they see the same runs in the same order with the same scores.

Pairwise judgments: each RAG run's judgments become preference scores on its records (win 1, tie 0.5, loss 0 for
RAG) and the long-context run it was compared with gets 0.5 on the same questions: the verdict's paired difference
RAG − long context is then (wins − losses) / 2 in points, so its selection, cluster interval and decision rule
apply unchanged. A question judged against another long-context run, by another prompt, or not at all keeps no
score. The judgments read are kept (`LoadedRuns.judged`) for the report's pairwise section.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval.metrics.reference_free import OUTCOME_SCORE, TIE, prompt_hash
from experiments import records as schema
from experiments.report.data_mix import DataSet, check_data
from experiments.report.runs import Run, dedupe, disambiguate, find_runs

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Judged:
    """A RAG run whose pairwise judgments scored records, and every judgment of the current prompt it holds (those
    without an outcome included)."""
    run: Run
    lines: list[dict[str, Any]]


@dataclass
class LoadedRuns:
    runs: list[Run]  # with records, in the report's order
    missing: list[Path] = field(default_factory=list)  # run folders with metrics.json but no records
    duplicates: dict[str, list[Path]] = field(default_factory=dict)  # config hash -> the copies left out
    judged: list[Judged] = field(default_factory=list)  # runs whose pairwise judgments scored records (RAG side)
    data_mix: list[DataSet] = field(default_factory=list)  # the data sets pooled (pool_data); empty: one set


def report_order(run: Run) -> tuple:
    return run.benchmark, run.arm, run.mean_of("prompt_tokens") or 0, run.config_label


def load_runs(paths: Sequence[str | Path], pool_data: bool = False) -> LoadedRuns:
    """The runs under `paths`, found, deduplicated, sorted, disambiguated and with pairwise judgments applied.
    Runs over different documents or questions raise ValueError naming their folders, unless `pool_data`
    (experiments/report/data_mix.py)."""
    checked, mixed = check_data(find_runs(list(paths), with_records=True), pool_data)
    found, duplicates = dedupe(checked)
    runs = sorted((r for r in found if r.records), key=report_order)
    disambiguate(runs)
    judged = apply_pairwise(runs)
    return LoadedRuns(runs, [r.path for r in found if not r.records], duplicates, judged, mixed)


def read_judgments(run: Run) -> list[dict[str, Any]]:
    """The run's pairwise judgments of the current prompt (those of another prompt are left out, and said so)."""
    path = run.path / schema.PAIRWISE_FILE
    if not path.exists():
        return []
    lines = schema.read_records(path)
    stale = [i for i, line in lines.items() if line.get("prompt_hash") != prompt_hash()]
    if stale:
        log.warning("%s: %d judgment(s) of another pairwise prompt left out (rerun experiments.pairwise)", path,
                    len(stale))
    return [line for i, line in lines.items() if i not in stale]


def apply_pairwise(runs: list[Run]) -> list[Judged]:
    """Set preference scores from the judgments (see the module docstring); the runs judged, RAG side."""
    by_hash = {r.metrics.get("config_hash"): r for r in runs}
    judged = []
    for run in runs:
        lines = read_judgments(run)
        scored = {str(line["id"]): line for line in lines if line.get("outcome") in OUTCOME_SCORE}
        if not scored:
            continue
        judged.append(Judged(run, lines))
        for rec in run.records:
            line = scored.get(str(rec["id"]))
            if line and rec.get("scoring") == schema.PAIRWISE:
                rec["score"] = OUTCOME_SCORE[line["outcome"]]
                other = by_hash.get(line.get("against"))
                if other is not None:
                    _tie_score(other, str(rec["id"]))
    for run in runs:
        run.reset_scores()
    return judged


def _tie_score(run: Run, qid: str) -> None:
    for rec in run.records:
        if str(rec["id"]) == qid and rec.get("scoring") == schema.PAIRWISE:
            rec["score"] = OUTCOME_SCORE[TIE]
