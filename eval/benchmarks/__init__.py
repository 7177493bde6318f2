"""Benchmark loaders: each turns a benchmark's data into `Sample`s with its prompt template."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from eval.sample import Sample


@dataclass
class LoadResult:
    samples: list[Sample]
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> count


def _load_synthetic(cfg: dict[str, Any]) -> LoadResult:
    from eval.benchmarks.synthetic import SyntheticConfig, generate

    fields = SyntheticConfig.__dataclass_fields__
    unknown = set(cfg) - set(fields) - {"name", "tasks", "limit"}
    if unknown:
        raise ValueError(f"benchmark=synthetic: unknown keys {sorted(unknown)}; known: {sorted(fields)}")
    opts = {k: (tuple(v) if isinstance(v, list) else v) for k, v in cfg.items() if k in fields}
    return LoadResult(generate(SyntheticConfig(**opts)))


LOADERS: dict[str, Callable[[dict[str, Any]], LoadResult]] = {"synthetic": _load_synthetic}


def load_benchmark(cfg: dict[str, Any]) -> LoadResult:
    """Load the benchmark named `cfg['name']`, then select `tasks` and `limit` deterministically."""
    name = cfg.get("name")
    if name not in LOADERS:
        raise ValueError(f"benchmark.name={name!r}; available: {', '.join(sorted(LOADERS))}")
    result = LOADERS[name](dict(cfg))
    tasks = cfg.get("tasks")
    if tasks:
        known = {s.task for s in result.samples}
        unknown = set(tasks) - known
        if unknown:
            raise ValueError(f"benchmark.tasks: unknown {sorted(unknown)} for {name}; available: {sorted(known)}")
        result.samples = [s for s in result.samples if s.task in set(tasks)]
    limit = cfg.get("limit")
    if limit is not None:
        result.samples = result.samples[: int(limit)]
    return result
