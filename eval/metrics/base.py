"""What every metric shares: the metric type, `NoJudgment`, the `METRICS` registry and `@register`.

A metric module of eval/metrics registers its functions with `@register(name)` (`judged=True` for one that is
handed a judge). The registry imports every module of the package before its first lookup, so a new metric is
one new module and no list to edit. `eval.metrics` re-exports everything here.
"""


from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, TypeVar

from eval.registry import Registry, UnknownName
from eval.sample import Reference


@dataclass(frozen=True)
class NoJudgment:
    """A judged metric's outcome when its judge gave no judgment: no score, not a score of 0.

    `kind` is FAILED (the judge call failed after the backend's retries; `reason` is the error type
    and HTTP status, never a message or body, which may echo the request or a key) or UNPARSABLE
    (the judge replied, but with no verdict the metric can read; `reply_excerpt` holds the reply's
    first EXCERPT_CHARS characters). Build one with `NoJudgment.failed(...)` / `.unparsable(...)`."""

    kind: Literal["failed", "unparsable"]
    reason: str
    reply_excerpt: str | None = None

    FAILED: ClassVar[Literal["failed"]] = "failed"
    UNPARSABLE: ClassVar[Literal["unparsable"]] = "unparsable"
    EXCERPT_CHARS: ClassVar[int] = 200

    def __post_init__(self) -> None:
        if self.kind not in (self.FAILED, self.UNPARSABLE):
            raise ValueError(f"NoJudgment.kind must be {self.FAILED!r} or {self.UNPARSABLE!r}, got {self.kind!r}")

    @classmethod
    def failed(cls, reason: str | None) -> NoJudgment:
        return cls(cls.FAILED, reason or "no reply")

    @classmethod
    def unparsable(cls, reply: str) -> NoJudgment:
        return cls(cls.UNPARSABLE, "no verdict in the reply", reply[:cls.EXCERPT_CHARS])

    def describe(self) -> str:
        """One line for a record's `reason` (secrets are masked by the record constructors, not here)."""
        if self.kind == self.FAILED:
            return f"judge call failed: {self.reason}"
        return f"judge reply unparsable: {self.reply_excerpt or ''!r}"


MetricValues = dict[str, Any]  # {"score": 0..1, ...}: every value of one sample
Metric = Callable[..., "MetricValues | NoJudgment"]  # (prediction, reference[, judge]) -> values
MetricT = TypeVar("MetricT", bound=Metric)  # one metric function, its own signature kept by `register`

METRICS = Registry("metric", discover="eval.metrics")  # name -> metric function; each module of eval/metrics adds
# its own with @register(name), and every module there is imported before the first lookup
JUDGED: set[str] = set()  # metrics that are handed a judge (eval.metrics.judge.Judge) to ask
# metrics that read an answer entry listing alternatives, any of which counts (eval/answers.py); the others read
# plain texts, and a corpus questions file with alternatives is refused under them
READS_ALTERNATIVES: set[str] = set()


def register(name: str, judged: bool = False, alternatives: bool = False) -> Callable[[MetricT], MetricT]:
    """Decorator: `METRICS.register(name, fn)` (a second metric under one name is refused); `alternatives`: the
    metric reads answer entries that list alternatives (eval/answers.py)."""
    def wrap(fn: MetricT) -> MetricT:
        METRICS.register(name, fn)
        if judged:
            JUDGED.add(name)
        if alternatives:
            READS_ALTERNATIVES.add(name)
        return fn

    return wrap


def get_metric(name: str) -> Metric:
    if name not in METRICS:
        raise UnknownName(f"unknown metric {name!r}; known: {', '.join(sorted(METRICS))}")
    return METRICS.get(name)


def needs_judge(name: str) -> bool:
    return name in METRICS and name in JUDGED


def reads_alternatives(name: str) -> bool:
    """The metric reads answer entries that list alternatives (`register(..., alternatives=True)`)."""
    return name in METRICS and name in READS_ALTERNATIVES


def score(name: str, prediction: str, reference: Reference, judge: Any = None) -> MetricValues | NoJudgment:
    """The metric's values, or `NoJudgment` when a judged metric's judge gave none. A judged metric
    needs `judge` (eval.metrics.judge.Judge)."""
    metric = get_metric(name)
    if name in JUDGED:
        if judge is None:
            raise ValueError(f"metric {name!r} asks an LLM judge: configure one (the `judge` config section, "
                             "or the experiments.score --judge-* options)")
        values = metric(prediction or "", reference, judge)
    else:
        values = metric(prediction or "", reference)
    if isinstance(values, NoJudgment):
        if name not in JUDGED:
            raise AssertionError(f"metric {name} returned {values} but asks no judge")
        return values
    if not 0.0 <= values["score"] <= 1.0:
        raise AssertionError(f"metric {name} returned score {values['score']} outside [0, 1]")
    return values
