"""What the report read, counted for its opening: config points per arm, benchmarks, generators, records, the
run folders merged or left out, and the predictions imported from other harnesses."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from experiments.report.runs import Run


@dataclass
class Imported:
    """Predictions imported with `python -m experiments.import`: from which file, scored with which metric."""
    format: str
    path: str
    metric: str


@dataclass
class Overview:
    config_points: int
    arms: dict[str, int]  # config points per arm, by arm name
    scopes: list[str]  # the benchmarks (or pooled scopes) reported on
    generators: list[str]  # the generators of the runs that generated; ["no generator"] when none did
    records: int
    duplicates: int  # duplicate runs merged
    missing: int  # run folders without records.jsonl, left out
    imported: list[Imported] = field(default_factory=list)


def overview(runs: list[Run], missing: list[Path], dupes: dict[str, list[Path]]) -> Overview:
    imported = sorted({(str(m.get("format")), str(m.get("path")), str(m.get("metric")))
                       for m in (r.metrics.get("imported_from") for r in runs) if isinstance(m, dict)})
    return Overview(
        config_points=len(runs), arms=dict(sorted(Counter(r.arm for r in runs).items())),
        scopes=sorted({r.scope for r in runs}),
        generators=sorted({str(r.knobs.get("generator", "?")) for r in runs if not r.retrieval_only})
        or ["no generator"],
        records=sum(len(r.records) for r in runs), duplicates=sum(len(v) for v in dupes.values()),
        missing=len(missing), imported=[Imported(*m) for m in imported])
