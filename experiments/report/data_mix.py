"""One question set per report: runs whose data fingerprints differ are not pooled unless asked.

Each corpus run records what it ran on (`metrics.json` `data_fingerprint`: a short hash of the documents and one
of the questions file, eval/corpus/fingerprint.py). Two runs of one config point over an edited questions file
have the same config hash, so without this check the report would merge them as duplicates and decide over a mix.
`data_sets` groups the runs by fingerprint; `check_data` refuses more than one set, naming the folders of each,
unless the report is asked to pool (`--pool-data`): then the records of one config point's runs are pooled
(question by question, the newer data set's record where both hold one id) and the first screen names the mix.
Runs without a fingerprint (public benchmarks, runs written before it was recorded) are not checked.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from experiments.report.runs import Run


@dataclass(frozen=True)
class DataSet:
    fingerprint: str  # "documents d1234abcd, questions q5678ef01"
    folders: tuple[str, ...]  # the folders its runs sit in
    runs: int


def _fingerprint(run: Run) -> str | None:
    data: Any = run.metrics.get("data_fingerprint")
    if not isinstance(data, dict):
        return None
    return f"documents {data.get('documents')}, questions {data.get('questions')}"


def _folder(paths: list[Path]) -> str:
    parents = [str(p.parent) for p in paths]
    return os.path.commonpath(parents) if len(set(parents)) > 1 else parents[0]


def data_sets(runs: list[Run]) -> list[DataSet]:
    """The distinct data the runs ran on (runs without a fingerprint left out), in the order first met."""
    groups: dict[str, list[Path]] = {}
    for run in runs:
        key = _fingerprint(run)
        if key is not None:
            groups.setdefault(key, []).append(run.path)
    return [DataSet(key, (_folder(paths),), len(paths)) for key, paths in groups.items()]


def describe(sets: list[DataSet]) -> str:
    return "; ".join(f"{s.folders[0]} ({s.fingerprint}; {s.runs} run(s))" for s in sets)


def _pool(runs: list[Run]) -> list[Run]:
    """Runs of one config point over different data as one run: its records pooled by question id."""
    first_of: dict[str, Run] = {}
    out: list[Run] = []
    for run in runs:
        point = str(run.metrics.get("config_hash") or run.path)
        first = first_of.setdefault(point, run)
        if first is run or _fingerprint(first) == _fingerprint(run):
            out.append(run)  # the first of its point, or a repeat over the same data (the report merges those)
            continue
        pooled = {str(r.get("id")): r for r in first.records}
        pooled.update({str(r.get("id")): r for r in run.records})
        first.records = list(pooled.values())
        first._by_level = None
    return out


def check_data(runs: list[Run], pool: bool) -> tuple[list[Run], list[DataSet]]:
    """The runs to report on and the data sets they mix (one or none: nothing mixed). More than one set raises
    ValueError naming the folders, unless `pool`."""
    sets = data_sets(runs)
    if len(sets) <= 1:
        return runs, []
    if not pool:
        raise ValueError(f"these runs were run on {len(sets)} different sets of documents or questions, which one "
                         f"report does not pool: {describe(sets)}. Report each folder on its own, or pass "
                         "--pool-data to pool them (the first screen then names the mix)")
    return _pool(runs), sets


__all__ = ["DataSet", "check_data", "data_sets", "describe"]
