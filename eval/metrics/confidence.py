"""Bootstrap confidence intervals for aggregate scores, and the paired bootstrap for comparing two
runs on the same samples (the RAG-vs-long-context decision rests on the latter).

Both resample samples with replacement with a seeded generator (numpy PCG64), so a given input
and seed always give the same interval. Intervals are percentile intervals of the resampled
means, in the units of the inputs (per-sample scores in 0..1 give an interval in 0..1).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np

DEFAULT_RESAMPLES = 2000


def _resampled_means(values: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = len(values)
    means = np.empty(n_resamples)
    # Chunked so that 10^5-sample inputs do not allocate n_resamples x n at once.
    chunk = max(1, min(n_resamples, 2_000_000 // max(n, 1)))
    for start in range(0, n_resamples, chunk):
        stop = min(n_resamples, start + chunk)
        idx = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = values[idx].mean(axis=1)
    return means


def bootstrap_ci(
    values: Sequence[float], confidence: float = 0.95, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of `values`."""
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        raise ValueError("bootstrap_ci needs at least one value")
    if not 0 < confidence < 1:
        raise ValueError("confidence must be in (0, 1)")
    means = _resampled_means(arr, n_resamples, seed)
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return float(lo), float(hi)


@dataclass(frozen=True)
class PairedResult:
    n: int
    mean_a: float
    mean_b: float
    diff: float  # mean(a) - mean(b)
    ci95: tuple[float, float]  # interval of the difference
    p_value: float  # two-sided: how often the resampled difference lands on the other side of 0
    prob_a_better: float  # share of resamples with mean(a) > mean(b)

    def as_dict(self) -> dict:
        return asdict(self)


def paired_bootstrap(
    a: Sequence[float], b: Sequence[float], confidence: float = 0.95, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> PairedResult:
    """Paired bootstrap of mean(a) - mean(b) over the same samples (a[i] and b[i] are one sample)."""
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if xa.shape != xb.shape:
        raise ValueError(f"paired_bootstrap needs scores for the same samples: {xa.shape} vs {xb.shape}")
    if xa.size == 0:
        raise ValueError("paired_bootstrap needs at least one pair")
    d = xa - xb
    means = _resampled_means(d, n_resamples, seed)
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    diff = float(d.mean())
    if diff == 0 and not means.any():
        p = 1.0
    else:
        # Share of resampled differences at or beyond 0 on the side opposite to the observed one.
        other_side = np.mean(means <= 0) if diff > 0 else np.mean(means >= 0) if diff < 0 else 1.0
        p = float(min(1.0, 2 * other_side))
    return PairedResult(
        n=int(xa.size),
        mean_a=float(xa.mean()),
        mean_b=float(xb.mean()),
        diff=diff,
        ci95=(float(lo), float(hi)),
        p_value=p,
        prob_a_better=float(np.mean(means > 0)),
    )
