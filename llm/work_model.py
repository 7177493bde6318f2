"""CPU seconds from an answer's tokens, at per-token rates calibrated once: a cost the machine's load cannot move.

A record's measured `cpu_s` grows with what else runs on the machine: threads that wait for each other spin, and a
busy neighbour on the same core slows every instruction. A sweep runs its configs one after another, so a config that
happened to run while the load was high looked dearer, and the cheapest-config choice (and with it the verdict's Δ)
followed the load (issue 38: a loaded demo chose another RAG config than an idle one). Fitting rates on the records
themselves cannot undo that: a config run wholly under load is indistinguishable from a config whose tokens cost more.

So the rates come from a probe (llm/work_probe.py): prompts of known lengths prefilled and decoded by the run's own
generator, once per timing setup, and kept in the run's cache folder, so every config of a sweep is priced at the same
rates. An answer is charged, at those rates, what it computed (`FEATURES`):

- prefilled tokens, and their attention term (the positions each prefilled token attends to, in thousands): a prompt
  prefilled whole, or, with prefix reuse, the question after the shared document plus the record's share of the
  document's one prefill;
- decoded tokens, and their attention term (the cached tokens each decoded token reads, in thousands);
- one per answer (tokenising, the loop's overhead);

plus its measured retrieval. `WorkPriced` is the hourly cpu price that charges those seconds.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from llm.cost import CostModel, HourlyCost

FEATURES = ("prefilled token", "thousand positions a prefilled token attends to", "decoded token",
            "thousand cached tokens a decoded token reads", "answer")
MIN_UNITS = 8


def _reused(rec: Mapping[str, Any]) -> bool:
    return (rec.get("prefill_cpu_s") is not None and bool(rec.get("prefix_group_size"))
            and bool(rec.get("context_tokens")))


def shared_prefill_features(rec: Mapping[str, Any]) -> np.ndarray:
    """The features of a prefix-reusing record's whole shared prefill (its document read once), zeros otherwise."""
    x = np.zeros(len(FEATURES))
    if _reused(rec):
        doc = min(float(rec["context_tokens"]), float(rec.get("prompt_tokens") or rec["context_tokens"]))
        x[0], x[1] = doc, doc * doc / 2e3
    return x


def answer_features(rec: Mapping[str, Any]) -> np.ndarray | None:
    """What one answer computed, in the units of `FEATURES` (its share of a shared prefill included); None for a
    record without token counts."""
    if rec.get("prompt_tokens") is None:
        return None
    prompt, decoded = float(rec["prompt_tokens"]), float(rec.get("completion_tokens") or 0)
    x = np.zeros(len(FEATURES))
    doc = min(float(rec.get("context_tokens") or 0), prompt)
    if _reused(rec):
        own = prompt - doc  # the question and the template's tail, read after the cached document
        x += shared_prefill_features(rec) / int(rec["prefix_group_size"])
        x[0] += own
        x[1] += (own * doc + own * own / 2) / 1e3
    else:
        x[0], x[1] = prompt, prompt * prompt / 2e3
    # each decoded token reads the cache: its prompt and its answer so far (the tree path reads a shared document
    # once a step for the batch; charging each answer the whole read keeps the no-cache what-if exact: without reuse
    # an answer costs its shared share's features in full, nothing else changes)
    x[2], x[3], x[4] = decoded, decoded * (prompt + decoded / 2) / 1e3, 1.0
    return x


def generation_cpu_s(rec: Mapping[str, Any]) -> float | None:
    """A record's measured generation CPU seconds: its charged CPU (the re-timings' median when re-timed) less its
    retrieval. None without CPU time."""
    repeats = sorted(float(v) for v in rec.get("cpu_repeats_s") or [] if v is not None)
    if repeats:
        mid = len(repeats) // 2
        total = repeats[mid] if len(repeats) % 2 else (repeats[mid - 1] + repeats[mid]) / 2
    elif rec.get("cpu_s") is not None:
        total = float(rec["cpu_s"])
    else:
        return None
    return max(0.0, total - float(rec.get("retrieval_cpu_s") or 0.0))


@dataclass(frozen=True)
class WorkModel:
    """CPU seconds per unit of each feature (`FEATURES`), fitted on `n` answers; `r2` and `rel_error` (root mean
    square residual over the mean) over the measured units; `source` says what was measured (a probe's setup)."""

    rates: tuple[float, ...]
    n: int  # answers
    r2: float  # over the measured units (`_measured_units`)
    rel_error: float
    source: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "rates": list(self.rates), "features": list(FEATURES)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "WorkModel":
        """A model written by `to_dict` (metrics.json `work_rates`, the probe's cache); ValueError for another one."""
        if list(data.get("features") or []) != list(FEATURES):
            raise ValueError(f"work rates over features {data.get('features')!r}, not {list(FEATURES)!r}")
        return cls(tuple(float(r) for r in data["rates"]), int(data["n"]), float(data["r2"]),
                   float(data["rel_error"]), str(data.get("source") or ""))

    def generation_cpu_s(self, rec: Mapping[str, Any]) -> float | None:
        x = answer_features(rec)
        return None if x is None else float(x @ np.asarray(self.rates))

    def cpu_s(self, rec: Mapping[str, Any]) -> float | None:
        """The CPU seconds an answer is charged: its modelled generation plus its measured retrieval."""
        gen = self.generation_cpu_s(rec)
        return None if gen is None else gen + float(rec.get("retrieval_cpu_s") or 0.0)

    def prefill_cpu_s(self, rec: Mapping[str, Any]) -> float | None:
        """A prefix-reusing record's whole shared prefill, modelled; None for other records."""
        return float(shared_prefill_features(rec) @ np.asarray(self.rates)) if _reused(rec) else None

    def describe(self) -> str:
        shown = [f"{_duration(rate)} per {name}" for name, rate in zip(FEATURES, self.rates) if rate > 0]
        return (f"{', '.join(shown)} ({self.source or 'fitted'}: {self.n} answers, R² {self.r2:.2f}, typical error "
                f"{self.rel_error:.0%})")


def _measured_units(records: Sequence[Mapping[str, Any]]) -> tuple[int, list[tuple[np.ndarray, float]]]:
    """(records used, [(features, CPU seconds)] summed over each document's answers in one config): the unit the
    backends measure (a document's questions are prefilled and decoded together, and a batch's time is split evenly
    among its answers, so one answer's share alone says little of its own tokens)."""
    units: dict[tuple, list[Any]] = {}
    used = 0
    for i, rec in enumerate(records):
        x, y = answer_features(rec), generation_cpu_s(rec)
        if x is None or y is None:
            continue
        used += 1
        key = (rec.get("config_hash"), rec.get("arm"), rec.get("group")) if rec.get("group") is not None else (i,)
        unit = units.setdefault(key, [np.zeros(len(FEATURES)), 0.0])
        unit[0] = unit[0] + x
        unit[1] += y
    return used, [(x, y) for x, y in units.values()]


def fit_work_model(records: Sequence[Mapping[str, Any]], min_units: int = MIN_UNITS,
                   source: str = "") -> WorkModel | None:
    """Non-negative least squares of the generation CPU seconds on the features, over each document's answers in one
    config (`_measured_units`); None with fewer than `min_units` such units, or when every measured second is zero.
    `r2` is over those units."""
    used, rows = _measured_units(records)
    if len(rows) < min_units:
        return None
    from scipy.optimize import nnls

    X = np.vstack([x for x, _ in rows])
    y = np.asarray([v for _, v in rows])
    if not y.any():
        return None
    scale = np.where(X.max(axis=0) > 0, X.max(axis=0), 1.0)  # columns of comparable size for the solver
    coef, _ = nnls(X / scale, y)
    rates = coef / scale
    resid = y - X @ rates
    total = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - float((resid ** 2).sum()) / total if total > 0 else 0.0
    rel = float(np.sqrt((resid ** 2).mean())) / float(y.mean())
    return WorkModel(tuple(float(r) for r in rates), used, r2, rel, source)


class WorkPriced(CostModel):
    """An hourly price on the cpu basis that charges each answer the CPU seconds `work` gives its tokens (plus its
    measured retrieval), over the machine's vcpus; a record without token counts keeps its measured seconds."""

    kind = "hourly"

    def __init__(self, base: HourlyCost, work: WorkModel):
        self.base, self.work, self.vcpus, self.basis = base, work, base.vcpus, base.basis
        self.hourly_rate = base.hourly_rate  # type: ignore[misc]

    def charged_seconds(self, rec: Mapping[str, Any]) -> float | None:
        cpu = self.work.cpu_s(rec) if rec.get("cpu_s") is not None else None
        return self.base.charged_seconds(rec) if cpu is None else cpu / self.vcpus

    def prefill_seconds(self, rec: Mapping[str, Any]) -> float | None:
        cpu = self.work.prefill_cpu_s(rec)
        return self.base.prefill_seconds(rec) if cpu is None else cpu / self.vcpus

    def cost(self, prompt_tokens: int, completion_tokens: int, latency_s: float, cached_tokens: int = 0,
             cache_write_tokens: int = 0) -> float | None:
        return self.base.cost(prompt_tokens, completion_tokens, latency_s, cached_tokens, cache_write_tokens)

    def describe(self) -> dict[str, Any]:
        return {**self.base.describe(), "work_rates": self.work.to_dict()}


def _duration(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"
