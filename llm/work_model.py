"""CPU seconds from an answer's tokens, at per-token rates calibrated once: a cost the machine's load cannot move.

A record's measured `cpu_s` grows with what else runs on the machine: threads that wait for each other spin, and a
busy neighbour on the same core slows every instruction. A sweep runs its configs one after another, so a config that
happened to run while the load was high looked dearer, and the cheapest-config choice (and with it the verdict's Δ)
followed the load (issue 38: a loaded demo chose another RAG config than an idle one). Fitting rates on the records
themselves cannot undo that: a config run wholly under load is indistinguishable from a config whose tokens cost more.

So the rates come from a probe (llm/work_probe.py): prompts of known lengths prefilled and decoded by the run's own
generator, in the batches the runs decode in, once per timing setup, and kept in the run's cache folder, so every
config of a sweep is priced at the same rates. An answer is charged, at those rates, what it computed (`FEATURES`):

- prefilled tokens, and their attention term (the positions each prefilled token attends to, in thousands): a prompt
  prefilled whole, or, with prefix reuse, the question after the shared document plus the record's share of the
  document's one prefill;
- decode steps: a step of a batch costs about the same whatever the batch's size (on a CPU it reads every weight
  once for all its answers: SmolLM2 100-120 ms a step at 2, 4 and 8 answers), so an answer is charged its share,
  the batch's steps over its answers (`decode_steps` / `decode_batch`); one answer decoded alone goes through
  another path (about 60 ms a step) and has a rate of its own;
- the cached positions the decode steps read, in thousands: each answer its own prompt and answer so far, and a
  document shared by the batch (prefix reuse) once a step for the whole batch, split among its answers (two rates:
  the shared-prefix path reads its document through another kernel and mask than a padded batch reads its rows);
- its share of the prefill's forward passes (a pass costs something whatever its length: one for a prompt
  prefilled alone, with prefix reuse two, the document's and the questions', for the whole group);

plus its measured retrieval. `WorkPriced` is the hourly cpu price that charges those seconds. `WorkModel.draws` are
the rates refitted on the probe's own noise (a bootstrap over its measured batches): priced at each draw, a cost
carries the probe's uncertainty (experiments/report/cost_interval.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from llm.cost import CostModel, HourlyCost

FEATURES = ("prefilled token", "thousand positions a prefilled token attends to",
            "decode step of a batch (each answer its share)", "decode step of an answer alone",
            "thousand positions of its own prompt and answer a decode step reads",
            "thousand positions of a shared document a decode step reads (each answer its share)",
            "prefill pass (each answer its share)")
MIN_UNITS = 8
DRAWS = 200  # bootstrap refits of the probe's rates
# The typical error (relative residual) the refits are drawn at, at least: five SmolLM2 probes back to back on one
# machine priced make decide's RAG ÷ LC 0.80-0.87 while one of them fitted its own batches within 1.9%, so its own
# residuals alone gave an interval (0.80-0.85) that held one of the four others' points (perf/probe_spread.py)
NOISE_FLOOR = 0.05


def _reused(rec: Mapping[str, Any]) -> bool:
    return (rec.get("prefill_cpu_s") is not None and bool(rec.get("prefix_group_size"))
            and bool(rec.get("context_tokens")))


def shared_prefill_features(rec: Mapping[str, Any]) -> np.ndarray:
    """The features of a prefix-reusing record's whole shared prefill (its document read once), zeros otherwise."""
    x = np.zeros(len(FEATURES))
    if _reused(rec):
        doc = min(float(rec["context_tokens"]), float(rec.get("prompt_tokens") or rec["context_tokens"]))
        x[0], x[1], x[6] = doc, doc * doc / 2e3, 1.0  # one forward pass over the document
    return x


def decode_shape(rec: Mapping[str, Any]) -> tuple[float, int]:
    """(the decode steps an answer's batch ran, the answers decoded in it): the record's `decode_steps` (the batch's
    longest answer less its first token, which the prefill gives) and `decode_batch`; without them (old records, a
    dry run) its own tokens less one, alone."""
    decoded = float(rec.get("completion_tokens") or 0)
    steps = rec.get("decode_steps")
    steps = max(decoded - 1.0, 0.0) if steps is None else float(steps)
    return steps, max(1, int(rec.get("decode_batch") or 1))


def answer_features(rec: Mapping[str, Any]) -> np.ndarray | None:
    """What one answer computed, in the units of `FEATURES` (its share of a shared prefill included); None for a
    record without token counts."""
    if rec.get("prompt_tokens") is None:
        return None
    prompt = float(rec["prompt_tokens"])
    steps, batch = decode_shape(rec)
    x = np.zeros(len(FEATURES))
    doc = min(float(rec.get("context_tokens") or 0), prompt)
    if _reused(rec):
        own = prompt - doc  # the question and the template's tail, read after the cached document
        x += shared_prefill_features(rec) / int(rec["prefix_group_size"])
        x[0] += own
        x[1] += (own * doc + own * own / 2) / 1e3
        # each step reads each answer's own tokens, and the document once for the whole batch
        x[4], x[5] = steps * (own + steps / 2) / 1e3, steps / batch * doc / 1e3
    else:
        x[0], x[1] = prompt, prompt * prompt / 2e3
        x[4] = steps * (prompt + steps / 2) / 1e3
    if batch > 1:
        x[2] = steps / batch
    else:
        x[3] = steps
    # a prompt prefilled alone is one forward pass (and its tokenising); with reuse the document's pass (its share
    # added above) and the questions' pass serve the whole group
    x[6] += 1.0 / int(rec["prefix_group_size"]) if _reused(rec) else 1.0
    return x


def no_reuse_features(rec: Mapping[str, Any]) -> np.ndarray | None:
    """What the answer would compute without prefix reuse (its whole prompt prefilled and read by every decode
    step, in the same batch): the what-if "no prefix cache" under the work model."""
    plain = {k: v for k, v in rec.items() if k not in ("prefill_cpu_s", "prefix_group_size")}
    return answer_features(plain)


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
    """CPU seconds per unit of each feature (`FEATURES`), fitted on `n` answers; `r2` and `rel_error` (the root mean
    square of the residuals relative to each measured unit) over the measured units; `source` says what was
    measured (a probe's setup), `note` what its budget left out; `draws` the rates refitted on the fit's own
    residuals (a wild bootstrap over the measured units: what another probe of the same work could have given)."""

    rates: tuple[float, ...]
    n: int  # answers
    r2: float  # over the measured units (`_measured_units`)
    rel_error: float
    source: str = ""
    draws: tuple[tuple[float, ...], ...] = ()
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "rates": list(self.rates), "draws": [list(d) for d in self.draws],
                "features": list(FEATURES)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WorkModel:
        """A model written by `to_dict` (metrics.json `work_rates`, the probe's cache); ValueError for another one."""
        if list(data.get("features") or []) != list(FEATURES):
            raise ValueError(f"work rates over features {data.get('features')!r}, not {list(FEATURES)!r}")
        draws = tuple(tuple(float(r) for r in d) for d in data.get("draws") or [])
        if any(len(d) != len(FEATURES) for d in draws):
            raise ValueError(f"work rate draws of {sorted({len(d) for d in draws})} rates, not {len(FEATURES)}")
        return cls(tuple(float(r) for r in data["rates"]), int(data["n"]), float(data["r2"]),
                   float(data["rel_error"]), str(data.get("source") or ""), draws, str(data.get("note") or ""))

    def at_draw(self, i: int) -> WorkModel:
        """The same model priced at its i-th bootstrap draw of the rates."""
        return WorkModel(self.draws[i], self.n, self.r2, self.rel_error, self.source, (), self.note)

    def generation_cpu_s(self, rec: Mapping[str, Any]) -> float | None:
        x = answer_features(rec)
        return None if x is None else float(x @ np.asarray(self.rates))

    def cpu_s(self, rec: Mapping[str, Any]) -> float | None:
        """The CPU seconds an answer is charged: its modelled generation plus its measured retrieval."""
        gen = self.generation_cpu_s(rec)
        return None if gen is None else gen + float(rec.get("retrieval_cpu_s") or 0.0)

    def no_reuse_cpu_s(self, rec: Mapping[str, Any]) -> float | None:
        """`cpu_s` of the same answer without prefix reuse (`no_reuse_features`)."""
        x = no_reuse_features(rec)
        return None if x is None else float(x @ np.asarray(self.rates)) + float(rec.get("retrieval_cpu_s") or 0.0)

    def prefill_cpu_s(self, rec: Mapping[str, Any]) -> float | None:
        """A prefix-reusing record's whole shared prefill, modelled; None for other records."""
        return float(shared_prefill_features(rec) @ np.asarray(self.rates)) if _reused(rec) else None

    def describe(self) -> str:
        shown = [f"{_duration(rate)} per {name}" for name, rate in zip(FEATURES, self.rates, strict=True) if rate > 0]
        note = f"; {self.note}" if self.note else ""
        return (f"{', '.join(shown)} ({self.source or 'fitted'}: {self.n} answers, R² {self.r2:.2f}, typical error "
                f"{self.rel_error:.0%}{note})")


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
    """The rates fitted on records (`fit_rows` over each document's answers in one config, `_measured_units`)."""
    used, rows = _measured_units(records)
    return fit_rows(rows, used, min_units, source)


def _solve(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Non-negative least squares of `y` on `X`, each row weighted by 1 / its measured seconds: a relative error
    counts alike on a short prompt and a long one (the arms differ by tenfold in prompt length)."""
    from scipy.optimize import nnls

    w = 1.0 / np.where(y > 0, y, max(float(y[y > 0].mean()) if (y > 0).any() else 1.0, 1e-12))
    Xw = X * w[:, None]
    scale = np.where(np.abs(Xw).max(axis=0) > 0, np.abs(Xw).max(axis=0), 1.0)  # comparable columns for the solver
    coef, _ = nnls(Xw / scale, y * w)
    return coef / scale


def fit_rows(rows: Sequence[tuple[np.ndarray, float]], answers: int, min_units: int = MIN_UNITS, source: str = "",
             draws: int = DRAWS, note: str = "", seed: int = 0) -> WorkModel | None:
    """The rates of measured units `(features, CPU seconds)`: `_solve`, and `draws` refits on the fit's own
    residuals (a wild bootstrap: each unit's residual, widened for the rates fitted, flipped in sign at random); None
    with fewer than `min_units` units, or when every measured second is zero. `r2` is over the units, `rel_error` the
    root mean square of the residuals relative to the measured seconds."""
    if len(rows) < min_units:
        return None
    X = np.vstack([x for x, _ in rows])
    y = np.asarray([v for _, v in rows], dtype=float)
    if not y.any():
        return None
    rates = _solve(X, y)
    fitted = X @ rates
    resid = y - fitted
    total = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - float((resid ** 2).sum()) / total if total > 0 else 0.0
    rel = resid / np.where(y > 0, y, max(float(y.max()), 1e-12))
    typical = float(np.sqrt((rel ** 2).mean()))
    fitted_rates = max(1, int((rates > 0).sum()))
    # a fit tighter than the machine's drift between probes draws its refits at the drift (NOISE_FLOOR)
    widen = np.sqrt(len(y) / max(1, len(y) - fitted_rates)) * max(1.0, NOISE_FLOOR / max(typical, 1e-9))
    rng = np.random.default_rng(seed)
    refits = []
    for _ in range(draws):
        signs = rng.choice((-1.0, 1.0), size=len(y))
        refits.append(tuple(float(r) for r in _solve(X, np.maximum(fitted + signs * resid * widen, 0.0))))
    return WorkModel(tuple(float(r) for r in rates), answers, r2, typical, source, tuple(refits), note)


class WorkPriced(CostModel):
    """An hourly price on the cpu basis that charges each answer the CPU seconds `work` gives its tokens (plus its
    measured retrieval), over the machine's vcpus; a record without token counts keeps its measured seconds."""

    kind = "hourly"

    def __init__(self, base: HourlyCost, work: WorkModel):
        self.base, self.work, self.vcpus, self.basis = base, work, base.vcpus, base.basis
        self.hourly_rate = base.hourly_rate

    def charged_seconds(self, rec: Mapping[str, Any]) -> float | None:
        cpu = self.work.cpu_s(rec) if rec.get("cpu_s") is not None else None
        return self.base.charged_seconds(rec) if cpu is None else cpu / self.vcpus

    def prefill_seconds(self, rec: Mapping[str, Any]) -> float | None:
        cpu = self.work.prefill_cpu_s(rec)
        return self.base.prefill_seconds(rec) if cpu is None else cpu / self.vcpus

    def no_reuse_seconds(self, rec: Mapping[str, Any]) -> float | None:
        """The seconds the same answer is charged without prefix reuse (None: it was not priced by its tokens)."""
        cpu = self.work.no_reuse_cpu_s(rec) if rec.get("cpu_s") is not None else None
        return None if cpu is None else cpu / self.vcpus

    def cost(self, prompt_tokens: int, completion_tokens: int, latency_s: float | None, cached_tokens: int = 0,
             cache_write_tokens: int = 0) -> float | None:
        return self.base.cost(prompt_tokens, completion_tokens, latency_s, cached_tokens, cache_write_tokens)

    def needs_tokens(self) -> bool:
        return self.base.needs_tokens()

    def retrieval_cost(self, rec: Mapping[str, Any]) -> float:
        return self.base.retrieval_cost(rec)

    def describe(self) -> dict[str, Any]:
        return {**self.base.describe(), "work_rates": self.work.to_dict()}


def _duration(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"
