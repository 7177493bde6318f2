"""What a benchmark is: one `Benchmark` subclass with a stated contract, registered by name.

A benchmark declares, as class attributes, its `name`, its `tasks` and length `levels` (the names
`benchmark.tasks` / `benchmark.levels` may select; `levels_generated` when `levels` says what to
generate rather than what to select), what gold `evidence` its samples carry (`spans` of the context,
whole `documents`, or `none`), whether one context joins several documents (`multi_document`: RAG heads
its chunks with titles, long context may drop whole documents), the long-context `truncation` policy its
prompts default to, and its prompt `templates`. It turns the `benchmark` config group into samples
with `load(cfg) -> LoadResult`; `eval.benchmarks.load_benchmark` then selects tasks, levels and limit
the same way for every benchmark. A `LoadResult` counts what was skipped (`skipped`) and names what the load
lost or read doubtfully (`losses`: the runner writes them to metrics.json, the report's first screen names
them). A benchmark whose length levels are in the generator's own tokens (benchmark=corpus: does a team's
document fit the model's window?) re-levels its samples in `level_by_tokens` when the runner hands it the
generator's token count.

A new benchmark is one module with one subclass plus `conf/benchmark/<name>.yaml`; `register` adds
it (the built-in ones are registered lazily by module path in `eval.benchmarks`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from eval.sample import PromptTemplate, Reference, Sample

EVIDENCE_KINDS = ("spans", "documents", "none")

# Keys that choose which samples load, or where parsed input is cached (`cache_dir`), or whether doubtful input is
# refused (`strict_answers`, benchmark=corpus), not what a sample or its score is: a run's records do not depend
# on them (the runner leaves them out of its config hash, so changing them keeps a run resumable).
SELECTION_KEYS = ("tasks", "levels", "limit", "skip_bad", "cache_dir", "strict_answers")
# Keys every benchmark config group accepts besides its loader's own fields.
COMMON_KEYS = ("name", "metric", *SELECTION_KEYS)


MAX_NAMED = 50  # names kept per loss (the count is always whole)


@dataclass
class LoadResult:
    samples: list[Sample]
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> count
    # what eval.describe says besides counts (LaRA: evidence, metric)
    notes: dict[str, Any] = field(default_factory=dict)
    # what the load lost or read doubtfully, for the run's metrics.json and the report's notes: one entry per kind,
    # {"kind", "count", "names" (the first MAX_NAMED: files, question ids, "file:line: ..."), "hint"}
    losses: list[dict[str, Any]] = field(default_factory=list)

    def skip(self, reason: str, n: int = 1) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + n

    def lose(self, kind: str, names: list[str], hint: str = "") -> None:
        """Record a loss of `kind`: what was left out or read doubtfully, each named (nothing when `names` is
        empty)."""
        if names:
            self.losses.append({"kind": kind, "count": len(names), "names": [str(n) for n in names[:MAX_NAMED]],
                                "hint": hint})


def _as_read(prediction: Any) -> Any:
    return prediction


def _never(prediction: str) -> None:
    return None


@dataclass(frozen=True)
class Rescoring:
    """How `python -m experiments.score` scores a prediction file of one task (`Benchmark.rescoring`): the metric
    and each line's reference, and the benchmark's own quirks, which eval/score.py applies without knowing whose
    they are."""
    metric: str  # a registered metric's name
    reference: Callable[[dict[str, Any]], Reference]  # a file's line -> its reference (eval/prediction_lines.py)
    as_text: Callable[[Any], Any] = _as_read  # a prediction as the metric reads it (then it must be a string)
    excluded: Callable[[str], str | None] = _never  # why a prediction is left out of every mean; None: it is scored
    fields: Mapping[str, Any] = field(default_factory=dict)  # what every per-sample line carries besides its scores
    extra: Callable[[str, Reference], dict[str, Any]] | None = None  # more per-sample values (LooGLE's BERTScore)
    summary: Callable[[list[dict[str, Any]]], dict[str, Any]] | None = None  # more summary fields, from scored lines


class Benchmark(ABC):
    """One benchmark: its declared names and kinds, and `load`."""

    name: ClassVar[str]
    tasks: ClassVar[tuple[str, ...]] = ()
    levels: ClassVar[tuple[str, ...]] = ()
    levels_generated: ClassVar[bool] = False
    evidence: ClassVar[str] = "spans"
    multi_document: ClassVar[bool] = False
    truncation: ClassVar[str] = "middle"
    templates: ClassVar[Mapping[str, PromptTemplate]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if getattr(cls, "__abstractmethods__", None):
            return
        if not isinstance(getattr(cls, "name", None), str) or not cls.name:
            raise TypeError(f"{cls.__qualname__}: a Benchmark needs a `name`")
        if cls.evidence not in EVIDENCE_KINDS:
            raise TypeError(f"{cls.__qualname__}.evidence={cls.evidence!r}; allowed: {', '.join(EVIDENCE_KINDS)}")
        for attr in ("tasks", "levels"):
            if not isinstance(getattr(cls, attr), tuple):
                raise TypeError(f"{cls.__qualname__}.{attr} must be a tuple of names")

    @staticmethod
    def official_aggregate(rows: list[Mapping[str, Any]]) -> dict[str, Any] | None:
        """The benchmark's own aggregate beside the sample mean, where it defines one (eval/metrics/official.py:
        {"value", "rule", "parts"}); None: the sample mean is its figure (the default)."""
        return None

    @classmethod
    def rescoring(cls, task: str, options: Any) -> Rescoring | None:
        """How `python -m experiments.score` scores a prediction file of `task`: the metric's name and the
        reference of a file's line (eval/prediction_lines.py reads answers and keywords); `options` are the
        command's (`variant`, `judge`, ...). None: this benchmark's files are not rescored (the default)."""
        return None

    @abstractmethod
    def load(self, cfg: dict[str, Any]) -> LoadResult:
        """The samples of the `benchmark` config group `cfg` (a plain dict); checks its own keys."""

    def level_by_tokens(self, result: LoadResult, cfg: dict[str, Any], count_tokens: Callable[[str], int]) -> bool:
        """Put each sample in its length level by `count_tokens` (the generator's own tokenizer) instead of
        the approximate count it was loaded with; True when the benchmark does (default: its levels stay,
        as a public benchmark's levels are its own)."""
        return False
