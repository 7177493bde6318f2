"""The one way to read runs: `load_runs(paths)`.

It finds the run folders under `paths` (multirun folders, run folders or a mix), keeps one run per config point
(the duplicates are listed), sets aside runs without records, sorts the rest as the report shows them
(benchmark, arm, mean prompt tokens, label), makes labels unique within a verdict's scope and applies the
pairwise judgments (`pairwise.jsonl`) to the records they score. The report, the plan, the pairwise pass, the
known-truth simulations that calibrate the verdict and the perf scripts all read runs here, so they see the same
runs in the same order with the same scores.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from experiments.report.data_mix import DataSet, check_data
from experiments.report.pairwise import apply_pairwise
from experiments.report.runs import Run, dedupe, disambiguate, find_runs


@dataclass
class LoadedRuns:
    runs: list[Run]  # with records, in the report's order
    missing: list[Path] = field(default_factory=list)  # run folders with metrics.json but no records
    duplicates: dict[str, list[Path]] = field(default_factory=dict)  # config hash -> the copies left out
    judged: list[Run] = field(default_factory=list)  # runs whose pairwise judgments scored records (RAG side)
    data_mix: list[DataSet] = field(default_factory=list)  # the data sets pooled (pool_data); empty: one set


def report_order(run: Run) -> tuple:
    return run.benchmark, run.arm, run.mean_of("prompt_tokens") or 0, run.config_label


def load_runs(paths: list[str | Path], pool_data: bool = False) -> LoadedRuns:
    """The runs under `paths`, found, deduplicated, sorted, disambiguated and with pairwise judgments applied.
    Runs over different documents or questions raise ValueError naming their folders, unless `pool_data`
    (experiments/report/data_mix.py)."""
    checked, mixed = check_data(find_runs(list(paths), with_records=True), pool_data)
    found, duplicates = dedupe(checked)
    runs = sorted((r for r in found if r.records), key=report_order)
    disambiguate(runs)
    judged = apply_pairwise(runs)
    return LoadedRuns(runs, [r.path for r in found if not r.records], duplicates, judged, mixed)
