"""Benchmark loaders: each turns a benchmark's data into `Sample`s with its prompt template.

Every loader is a module `eval.benchmarks.<name>` with a function `load(cfg: dict) -> LoadResult`,
where `cfg` is the `benchmark` config group as a plain dict. A loader may use `tasks` and `levels`
to avoid reading files it does not need; `load_benchmark` applies `tasks`, `levels` and `limit`
again afterwards, so every benchmark selects the same way and deterministically.

`skip_bad: true` skips records that fail to parse or check (each named, file and line, in one
warning) and counts them in `LoadResult.skipped["bad records"]`; by default the first one stops
the load with an error naming its file, line and field.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from eval.benchmarks._files import skipping_bad_records
from eval.registry import Registry
from eval.sample import Sample

log = logging.getLogger(__name__)


@dataclass
class LoadResult:
    samples: list[Sample]
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> count
    notes: dict[str, Any] = field(default_factory=dict)  # what eval.describe says besides counts (LaRA: evidence, metric)

    def skip(self, reason: str, n: int = 1) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + n


# benchmark name -> module holding its `load(cfg)` (which checks its own keys); imported only when asked for
LOADERS = Registry("benchmark.name", {
    "synthetic": "eval.benchmarks.synthetic",
    "lveval": "eval.benchmarks.lveval",
    "loogle": "eval.benchmarks.loogle",
    "clongeval": "eval.benchmarks.clongeval",
    "loong": "eval.benchmarks.loong",
    "lara": "eval.benchmarks.lara",
})

# Keys that choose which samples load, not what a sample or its score is: a run's records do not depend on
# them (the runner leaves them out of its config hash, so changing them keeps a run resumable).
SELECTION_KEYS = ("tasks", "levels", "limit", "skip_bad")
# Keys every benchmark config group accepts besides its loader's own fields.
COMMON_KEYS = ("name", "metric", *SELECTION_KEYS)


def _as_list(value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, (str, int)):
        return [str(value)]
    return [str(v) for v in value]


def _names(table: Any) -> set[str]:
    if not table:
        return set()
    values = table.values() if isinstance(table, dict) else table
    return {str(v) for v in values}


def known_names(module: Any) -> tuple[set[str], set[str]]:
    """The task and length-level names a loader module declares (`TASKS`/`DATASETS`, `LEVELS`/`SIZES`)."""
    tasks = _names(getattr(module, "TASKS", None) or getattr(module, "DATASETS", None))
    levels = _names(getattr(module, "LEVELS", None) or getattr(module, "SIZES", None))
    return tasks, levels


def select(result: LoadResult, name: str, tasks: Any = None, levels: Any = None, limit: Any = None,
           known_tasks: set[str] | None = None, known_levels: set[str] | None = None) -> LoadResult:
    """Keep the samples of the given tasks and length levels, then the first `limit` of them.

    Names are checked against what the benchmark declares (`known_*`) plus what was loaded, so a
    loader that stopped early for `limit` does not make a valid name look unknown.
    """
    declared = {"tasks": known_tasks or set(), "levels": known_levels or set()}
    for key, values, attr in (("tasks", _as_list(tasks), "task"), ("levels", _as_list(levels), "length_level")):
        if not values:
            continue
        known = {getattr(s, attr) for s in result.samples} | declared[key]
        unknown = set(values) - known
        if unknown and (result.samples or declared[key]):
            raise ValueError(f"benchmark.{key}: unknown {sorted(unknown)} for {name}; available: {sorted(known)}")
        result.samples = [s for s in result.samples if getattr(s, attr) in set(values)]
    if limit is not None:
        if int(limit) < 0:
            raise ValueError(f"benchmark.limit must be >= 0, got {limit}")
        result.samples = result.samples[: int(limit)]
    return result


def multi_document(name: str) -> bool:
    """Whether the benchmark's contexts may join several documents (its loader says `MULTI_DOCUMENT = True`)."""
    return name in LOADERS and bool(getattr(LOADERS.get(name), "MULTI_DOCUMENT", False))


def load_benchmark(cfg: dict[str, Any]) -> LoadResult:
    """Load the benchmark named `cfg['name']`, then select `tasks`, `levels` and `limit`."""
    name = cfg.get("name")
    if name not in LOADERS:
        raise ValueError(f"benchmark.name={name!r}; available: {', '.join(sorted(LOADERS.names()))}")
    module = LOADERS.get(name)
    with skipping_bad_records(bool(cfg.get("skip_bad"))) as bad:
        result = module.load(dict(cfg))
    if bad:
        result.skip("bad records", len(bad))
        more = f" (+{len(bad) - 3} more)" if len(bad) > 3 else ""
        log.warning("%s: skipped %d bad records (benchmark.skip_bad=true): %s%s", name, len(bad),
                    "; ".join(str(e) for e in bad[:3]), more)
    # a generator (synthetic) makes exactly the levels asked for: nothing to select there
    levels = None if getattr(module, "LEVELS_ARE_GENERATED", False) else cfg.get("levels")
    known_tasks, known_levels = known_names(module)
    result = select(result, name, cfg.get("tasks"), levels, cfg.get("limit"), known_tasks, known_levels)
    if cfg.get("metric"):  # score with another registered metric (a judge-free run on CPU, say)
        from eval.metrics import get_metric

        get_metric(cfg["metric"])  # unknown names fail here, naming the known ones
        for s in result.samples:
            s.metric = cfg["metric"]
    return result
