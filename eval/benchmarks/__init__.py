"""Benchmarks: each is one `Benchmark` class (eval/benchmarks/base.py) that turns a benchmark's data
into `Sample`s with its prompt templates, registered here by name.

`load_benchmark(cfg)` builds the class named `cfg["name"]` and calls its `load(cfg)`, where `cfg` is the
`benchmark` config group as a plain dict. A benchmark may use `tasks` and `levels` to avoid reading files
it does not need; `load_benchmark` applies `tasks`, `levels` and `limit` again afterwards, checked
against the names the class declares, so every benchmark selects the same way and deterministically.

`skip_bad: true` skips records that fail to parse or check (each named, file and line, in one
warning) and counts them in `LoadResult.skipped["bad records"]`; by default the first one stops
the load with an error naming its file, line and field.

A new benchmark: one module with a `Benchmark` subclass, `register(TheClass)` (or an entry below), and
`conf/benchmark/<name>.yaml`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from eval.benchmarks.base import COMMON_KEYS, SELECTION_KEYS, Benchmark, LoadResult
from eval.data_files import skipping_bad_records
from eval.registry import Registry

__all__ = ["BENCHMARKS", "COMMON_KEYS", "SELECTION_KEYS", "Benchmark", "LoadResult", "benchmark_class",
           "load_benchmark", "multi_document", "official_aggregate", "register", "select"]

log = logging.getLogger(__name__)

# benchmark name -> its class, imported only when asked for
BENCHMARKS = Registry("benchmark.name", {
    "synthetic": "eval.benchmarks.synthetic:SyntheticBenchmark",
    "lveval": "eval.benchmarks.lveval:LVEvalBenchmark",
    "loogle": "eval.benchmarks.loogle:LooGLEBenchmark",
    "clongeval": "eval.benchmarks.clongeval:CLongEvalBenchmark",
    "loong": "eval.benchmarks.loong:LoongBenchmark",
    "lara": "eval.benchmarks.lara:LaRABenchmark",
    "corpus": "eval.benchmarks.corpus:CorpusBenchmark",
})


def register(cls: type[Benchmark]) -> type[Benchmark]:
    """Add a benchmark class under its `name` (usable as a class decorator)."""
    if not (isinstance(cls, type) and issubclass(cls, Benchmark)):
        raise TypeError(f"{cls!r} is not a Benchmark subclass")
    BENCHMARKS.register(cls.name, cls)
    return cls


def official_aggregate(benchmark: str, rows: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The benchmark's own aggregate of `rows` as its class declares it (`Benchmark.official_aggregate`):
    {"value", "rule", "parts"}; None where it defines none, for a benchmark no class registers (an imported or
    simulated run's), or without scored rows."""
    rows = [r for r in rows if r.get("score") is not None]
    if not rows or benchmark not in BENCHMARKS:
        return None
    return benchmark_class(benchmark).official_aggregate(rows)


def benchmark_class(name: Any) -> type[Benchmark]:
    """The class registered as `name`; an unknown name fails listing the registered ones."""
    if name not in BENCHMARKS:
        raise ValueError(f"benchmark.name={name!r}; available: {', '.join(sorted(BENCHMARKS.names()))}")
    cls = BENCHMARKS.get(name)
    if not (isinstance(cls, type) and issubclass(cls, Benchmark)):
        raise TypeError(f"benchmark.name={name!r} is registered as {cls!r}, not a Benchmark subclass")
    return cls


def _as_list(value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, (str, int)):
        return [str(value)]
    return [str(v) for v in value]


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
    """Whether the benchmark's contexts may join several documents (its class says `multi_document`)."""
    return name in BENCHMARKS and benchmark_class(name).multi_document


def load_benchmark(cfg: dict[str, Any], count_tokens: Callable[[str], int] | None = None) -> LoadResult:
    """Load the benchmark named `cfg['name']`, then select `tasks`, `levels` and `limit`. `count_tokens`: the
    generator's token count, for a benchmark whose length levels are in the generator's tokens
    (`Benchmark.level_by_tokens`: benchmark=corpus); without it they are approximate tokens."""
    name = str(cfg.get("name"))
    cls = benchmark_class(cfg.get("name"))
    benchmark = cls()
    with skipping_bad_records(bool(cfg.get("skip_bad"))) as bad:
        result = benchmark.load(dict(cfg))
    if count_tokens is not None:
        benchmark.level_by_tokens(result, dict(cfg), count_tokens)
    if bad:
        result.skip("bad records", len(bad))
        result.lose("bad record(s) left out (benchmark.skip_bad=true)", [str(e) for e in bad])
        more = f" (+{len(bad) - 3} more)" if len(bad) > 3 else ""
        log.warning("%s: skipped %d bad records (benchmark.skip_bad=true): %s%s", name, len(bad),
                    "; ".join(str(e) for e in bad[:3]), more)
    # a generator (synthetic) makes exactly the levels asked for: nothing to select there
    levels = None if cls.levels_generated else cfg.get("levels")
    result = select(result, name, cfg.get("tasks"), levels, cfg.get("limit"), set(cls.tasks), set(cls.levels))
    if cfg.get("metric"):  # score with another registered metric (a judge-free run on CPU, say)
        from eval.metrics import get_metric

        get_metric(cfg["metric"])  # unknown names fail here, naming the known ones
        for s in result.samples:
            # a question without reference answers keeps its judge, one the document cannot answer its
            # `refusal` (benchmark=corpus)
            if s.answers and s.metric != "refusal":
                s.metric = cfg["metric"]
    return result
