"""The shared metric module: every score in the project comes from a metric registered here.

A metric takes a prediction and a `Reference` and returns a dict of per-sample values in 0..1
with the primary value under "score". Benchmarks name their primary metric per task
(`Sample.metric`); `python -m eval.score` looks metrics up by the same names.

Modules: `text` (normalisation, token F1), `rouge` (the `rouge` package's ROUGE-N/L), `lveval`,
`clongeval`, `loogle`, `judge` (LLM judges for Loong and LooGLE), `lara` (LaRA's True/False judge
and a judge-free fallback), `confidence` (bootstrap CI, paired bootstrap), `aggregate` (100 x mean).
Each benchmark module's docstring lists where the released scoring code differs from the paper and
what the `official` / `strict` variants do
(`Reference.extra["variant"]`).
"""

from __future__ import annotations

from typing import Any, Callable

from eval.registry import Registry, UnknownName
from eval.sample import Reference

Metric = Callable[..., dict[str, Any]]  # (prediction, reference[, judge]) -> {"score": 0..1, ...}

METRICS = Registry("metric")  # name -> metric function; modules below add theirs with @register(name)
JUDGED: set[str] = set()  # metrics that are handed a judge (eval.metrics.judge.Judge) to ask


def register(name: str, judged: bool = False) -> Callable[[Metric], Metric]:
    """Decorator: `METRICS.register(name, fn)` (a second metric under one name is refused)."""
    def wrap(fn: Metric) -> Metric:
        METRICS.register(name, fn)
        if judged:
            JUDGED.add(name)
        return fn

    return wrap


def get_metric(name: str) -> Metric:
    if name not in METRICS:
        raise UnknownName(f"unknown metric {name!r}; known: {', '.join(sorted(METRICS))}")
    return METRICS.get(name)


def needs_judge(name: str) -> bool:
    return name in JUDGED


def score(name: str, prediction: str, reference: Reference, judge: Any = None) -> dict[str, Any]:
    """The metric's values. A judged metric needs `judge` (eval.metrics.judge.Judge); a failed
    judgment has `failed: 1.0` and `failed_reason`."""
    metric = get_metric(name)
    if name in JUDGED:
        if judge is None:
            raise ValueError(f"metric {name!r} asks an LLM judge: configure one (the `judge` config section, "
                             "or the eval.score --judge-* options)")
        values = metric(prediction or "", reference, judge)
    else:
        values = metric(prediction or "", reference)
    if not 0.0 <= values["score"] <= 1.0:
        raise AssertionError(f"metric {name} returned score {values['score']} outside [0, 1]")
    return values


# Registration happens on import of the metric modules.
from eval.metrics import clongeval, contains, lara, loogle, lveval  # noqa: E402,F401
from eval.metrics import judge as _judge_metrics  # noqa: E402,F401
