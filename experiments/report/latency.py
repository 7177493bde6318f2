"""Latency as a distribution: p50 and p90 of what one user waits, with n, per config and length level.

One timing per answer is noisy, and a mean hides the slow tail a deployment's target is about. For the configs
the deployment what-if shows (best long context, the RAG picks, the other arms' best runs), per length level and
over all levels: n answers, the p50 and p90 of their `latency_s`, and, where the run re-timed answers
(`run.timing_repeats`, experiments/retime.py), the same over the per-answer medians of the repeats (a
benchmark-grade figure); plus the first answer's latency against the median of the rest, which shows whether
a device warm-up landed in the records. Rows only: experiments/report/page/sections/whatif.py renders them.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median

from eval.sample import level_sort_key
from experiments.report.runs import Run
from experiments.retime import retimed_latency
from experiments.run_metrics import quantile

ALL = "all"


@dataclass
class LatencyRow:
    benchmark: str
    label: str
    arm: str
    level: str  # a length level, or "all"
    n: int
    p50: float | None
    p90: float | None
    retimed_n: int = 0  # answers re-timed (run.timing_repeats)
    retimed_p50: float | None = None  # over the per-answer medians of the re-timings
    retimed_p90: float | None = None
    first_s: float | None = None  # the run's first answer (level "all" only)
    rest_p50: float | None = None  # the median of the others


def _row(run: Run, level: str) -> LatencyRow | None:
    recs = run.answered(None if level == ALL else level)
    lats = [float(r["latency_s"]) for r in recs if r.get("latency_s") is not None]
    if not lats:
        return None
    retimed = [x for x in (retimed_latency(r) for r in recs) if x is not None]
    row = LatencyRow(run.scope, run.label, run.arm, level, len(lats), quantile(lats, 0.5), quantile(lats, 0.9),
                     len(retimed), quantile(retimed, 0.5), quantile(retimed, 0.9))
    if level == ALL and len(lats) > 1:  # records are in the order they were answered
        row.first_s, row.rest_p50 = lats[0], median(lats[1:])
    return row


def latency_rows(runs: list[Run], labels: list[tuple[str, str]]) -> list[LatencyRow]:
    """Rows for the runs named by (benchmark scope, label) pairs (the what-if's configs), each level then all."""
    wanted = list(dict.fromkeys(labels))
    by_key = {(r.scope, r.label): r for r in runs}
    rows: list[LatencyRow] = []
    for key in wanted:
        run = by_key.get(key)
        if run is None:
            continue
        levels = sorted({str(r.get("length_level")) for r in run.answered()}, key=level_sort_key)
        for level in [*levels, ALL] if len(levels) > 1 else [ALL]:
            row = _row(run, level)
            if row is not None:
                rows.append(row)
    return rows
