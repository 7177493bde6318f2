"""The shared metric module: every score in the project comes from a metric registered here.

A metric takes a prediction and a `Reference` and returns a dict of per-sample values in 0..1
with the primary value under "score". A judged metric may instead return `NoJudgment`: the judge
call failed, or its reply held no verdict. That is no score (never a 0): the runner and the importer
record the sample as failed (retried on resume), `python -m experiments.score` counts it apart. Benchmarks
name their primary metric per task (`Sample.metric`); `python -m experiments.score` looks metrics up by
the same names.

Modules: `text` (normalisation, token F1), `rouge` (the `rouge` package's ROUGE-N/L), `lveval`,
`clongeval`, `loogle`, `judge` (LLM judges for Loong and LooGLE), `lara` (LaRA's True/False judge
and a judge-free fallback), `confidence` (bootstrap CI, paired bootstrap), `aggregate` (100 x mean).
Each benchmark module's docstring lists where the released scoring code differs from the paper and
what the `official` / `strict` variants do
(`Reference.extra["variant"]`).
"""

from eval.metrics.base import (
                               JUDGED,
                               METRICS,
                               Metric,
                               MetricValues,
                               NoJudgment,
                               get_metric,
                               needs_judge,
                               reads_alternatives,
                               register,
                               score,
)

__all__ = ["JUDGED", "METRICS", "Metric", "MetricValues", "NoJudgment", "get_metric", "needs_judge",
           "reads_alternatives", "register", "score"]
