"""The shared metric module: every score in the project comes from a metric registered here.

A metric takes a prediction and a `Reference` and returns a dict of per-sample values in 0..1
with the primary value under "score". Benchmarks name their primary metric per task
(`Sample.metric`); `python -m eval.score` looks metrics up by the same names.

Modules: `text` (normalisation, token F1), `rouge` (the `rouge` package's ROUGE-N/L), `lveval`,
`clongeval`, `loogle`, `judge` (LLM judges for Loong and LooGLE), `confidence` (bootstrap CI,
paired bootstrap), `aggregate` (100 x mean). Each benchmark module's docstring lists where the
released scoring code differs from the paper and what the `official` / `strict` variants do
(`Reference.extra["variant"]`).
"""

from __future__ import annotations

from typing import Callable

from eval.sample import Reference

Metric = Callable[[str, Reference], dict[str, float]]

METRICS: dict[str, Metric] = {}


def register(name: str) -> Callable[[Metric], Metric]:
    def wrap(fn: Metric) -> Metric:
        if name in METRICS:
            raise ValueError(f"metric {name!r} registered twice")
        METRICS[name] = fn
        return fn

    return wrap


def get_metric(name: str) -> Metric:
    try:
        return METRICS[name]
    except KeyError:
        raise KeyError(f"unknown metric {name!r}; known: {', '.join(sorted(METRICS))}") from None


def score(name: str, prediction: str, reference: Reference) -> dict[str, float]:
    values = get_metric(name)(prediction or "", reference)
    if not 0.0 <= values["score"] <= 1.0:
        raise AssertionError(f"metric {name} returned score {values['score']} outside [0, 1]")
    return values


# Registration happens on import of the metric modules.
from eval.metrics import clongeval, contains, judge, loogle, lveval  # noqa: E402,F401
