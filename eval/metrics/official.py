"""A benchmark's own aggregate, where it defines one, reported beside the project's sample mean.

The project's score is the mean over samples (x100), the same rule for every benchmark and arm, and
the one the verdict's paired comparisons use. Some benchmarks publish another aggregate:

- LV-Eval: **overall** = unweighted mean over its datasets of each dataset's mean over length levels
  (each dataset-level cell 100 x mean, 2 decimals): `aggregate_lveval`, the leaderboard's number.
  A dataset with many samples weighs no more than one with few.
- LooGLE: `shortdep_cloze` is a **micro average over masks** (a question with 5 masks weighs 5):
  `aggregate_cloze`. The QA and summarisation tasks are means over questions, i.e. the sample mean.
  LooGLE defines no aggregate across tasks, so a run over several tasks gets one figure per task.

Loong's average score and CLongEval's per-task means are sample means; they define nothing else here.
Rows are records (or any mappings) with `task`, `length_level`, `score` (0..1) and `scores` (every
metric value); pass the samples that count in the sample mean. A benchmark class declares its aggregate
(`Benchmark.official_aggregate`, e.g. `LVEvalBenchmark.official_aggregate = lveval_official`);
`eval.benchmarks.official_aggregate(name, rows)` asks the class of a benchmark by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from eval.metrics.aggregate import percent


def lveval_official(rows: list[Mapping[str, Any]]) -> dict[str, Any]:
    from eval.metrics.lveval import aggregate_lveval

    agg = aggregate_lveval(rows)
    return {"value": agg["overall"], "rule": "LV-Eval overall: unweighted mean over datasets of their per-level means",
            "parts": agg["per_dataset_mean"]}


def loogle_official(rows: list[Mapping[str, Any]]) -> dict[str, Any] | None:
    from eval.metrics.loogle import LOOGLE_TASK_METRIC, aggregate_cloze

    by_task: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        by_task.setdefault(str(r["task"]), []).append(r)
    if not any(LOOGLE_TASK_METRIC.get(t) == "loogle_cloze" for t in by_task):
        return None  # every task is a mean over questions: the sample mean is LooGLE's own figure
    parts: dict[str, float] = {}
    for task, task_rows in sorted(by_task.items()):
        if LOOGLE_TASK_METRIC.get(task) == "loogle_cloze":
            micro = aggregate_cloze([r.get("scores") or {} for r in task_rows])
            if micro:
                parts[task] = micro["exact_match_micro"]
        else:
            parts[task] = percent(r["score"] for r in task_rows)
    value = next(iter(parts.values())) if len(parts) == 1 else None
    return {"value": value, "rule": "LooGLE: cloze exact match micro-averaged over masks; other tasks mean over "
                                    "questions; no aggregate across tasks", "parts": parts}
