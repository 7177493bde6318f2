"""Bootstrap confidence intervals for aggregate scores, and the paired bootstrap for comparing two
runs on the same samples (the RAG-vs-long-context decision rests on the latter).

Both resample with replacement with a seeded generator (numpy PCG64), so a given input and seed
always give the same interval. Intervals are percentile intervals of the resampled means, in the
units of the inputs (per-sample scores in 0..1 give an interval in 0..1).

Questions about one document rise and fall together (a config that happens to retrieve one
document well answers all its questions), so per-question intervals are too narrow. Given
`groups` (the document or context of each sample), the cluster bootstrap resamples whole groups
and keeps each group's questions together; a sample without a group is its own group, and with
one sample per group it is the ordinary bootstrap. With few groups a percentile bootstrap is too
narrow (in simulated sweeps over 20 documents a 95% interval excluded a true 0 about 10% of the
time), so a clustered interval is widened around the estimate by t(G-1) / z x sqrt(G / (G-1)), the
small-sample correction of a t interval (x1.10 for 20 documents, x1.44 for 6, x1.87 for 4); fewer
than 2 groups are left as they are. A bootstrap of scores in 0..1 stays in 0..1; a difference is
never clipped to the range of the observed differences (with 0/1 scores and few documents that clip
alone turned "RAG never lost a question" into an interval above 0).

For a decision, `cluster_t` is the interval used instead of a bootstrap where nothing is chosen (one
config per arm): the mean difference with the cluster-robust (CR1) standard error and Student's t
with G - 1 degrees of freedom, the small-sample interval that keeps its coverage at 4-6 documents
where a percentile bootstrap does not. Its `Estimate` answers the two questions a decision asks, the
interval at a confidence level and the p-value of "the true difference is above (below) b", from the
same t distribution, so an interval that clears b and a p-value below alpha never disagree.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
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


def _group_index(groups: Sequence[object] | None, n: int) -> np.ndarray:
    """Each sample's cluster number 0..G-1 (a None or empty group: the sample alone)."""
    if groups is None:
        return np.arange(n)
    if len(groups) != n:
        raise ValueError(f"groups has {len(groups)} entries for {n} values")
    ids: dict[object, int] = {}
    out = np.empty(n, dtype=np.int64)
    for i, g in enumerate(groups):
        key = ("__sample__", i) if g is None or g == "" else ("g", str(g))
        out[i] = ids.setdefault(key, len(ids))
    return out


def _resampled_cluster_means(values: np.ndarray, cluster: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """Means of `values` over resamples of whole clusters (sum of the drawn clusters' values over
    the number of their samples)."""
    n_groups = int(cluster.max()) + 1
    sums = np.bincount(cluster, weights=values, minlength=n_groups)
    counts = np.bincount(cluster, minlength=n_groups).astype(float)
    if n_groups == len(values):  # one sample per group: the ordinary bootstrap, same draws
        return _resampled_means(values, n_resamples, seed)
    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples)
    chunk = max(1, min(n_resamples, 2_000_000 // n_groups))
    for start in range(0, n_resamples, chunk):
        stop = min(n_resamples, start + chunk)
        idx = rng.integers(0, n_groups, size=(stop - start, n_groups))
        means[start:stop] = sums[idx].sum(axis=1) / counts[idx].sum(axis=1)
    return means


def t_quantile(q: float, df: int) -> float:
    """Student's t quantile by the Cornish-Fisher expansion in 1/df (Abramowitz and Stegun 26.7.5);
    within about 0.01 of the exact value for df >= 2 at the 0.975 quantile, and exact as df grows."""
    from statistics import NormalDist

    z = NormalDist().inv_cdf(q)
    v = float(df)
    return (z + (z**3 + z) / (4 * v) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * v**2)
            + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * v**3)
            + (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / (92160 * v**4))


def few_groups_factor(n_groups: int, confidence: float = 0.95) -> float:
    """How much a cluster bootstrap over `n_groups` groups is widened (1.0 below 2 groups)."""
    from statistics import NormalDist

    if n_groups < 2:
        return 1.0
    q = 1 - (1 - confidence) / 2
    return t_quantile(q, n_groups - 1) / NormalDist().inv_cdf(q) * (n_groups / (n_groups - 1)) ** 0.5


def _widened(means: np.ndarray, values: np.ndarray, cluster: np.ndarray, confidence: float) -> np.ndarray:
    """Resampled means widened around the estimate for few groups (only when samples are clustered)."""
    n_groups = int(cluster.max()) + 1
    if n_groups >= len(values) or n_groups < 2:
        return means
    center = float(values.mean())
    return center + (means - center) * few_groups_factor(n_groups, confidence)


# ---------------------------------------------------------------- small-sample t inference


@dataclass(frozen=True)
class Estimate:
    """A difference (points or any unit) with a t-distributed error: `value`, its standard error `se` and
    degrees of freedom `df`. `interval` and the claim p-values read the same distribution, so the interval
    at confidence 1 - a clears a boundary exactly when the claim's p-value is below a."""

    value: float
    se: float
    df: float
    n_groups: int = 0  # clusters (documents) behind it
    # made by repeated cross-fitting (a choice among several configs on half the documents, scored on the other
    # half): the verdict tests the claim for the cheaper arm at a stricter level on it (decision.claim_levels)
    cross_fitted: bool = False

    def interval(self, confidence: float = 0.95) -> tuple[float, float]:
        if self.se == 0:
            return self.value, self.value
        half = self.se * _t_ppf(1 - (1 - confidence) / 2, self.df)
        return self.value - half, self.value + half

    def p_above(self, boundary: float) -> float:
        """p-value of the claim "the true value is above `boundary`" (twice the one-sided tail, so that
        it is below 0.05 exactly when the 95% interval's lower end is above the boundary)."""
        return self._claim(self.value - boundary)

    def p_below(self, boundary: float) -> float:
        """p-value of the claim "the true value is below `boundary`"."""
        return self._claim(boundary - self.value)

    def p_two_sided(self, boundary: float = 0.0) -> float:
        return min(self.p_above(boundary), self.p_below(boundary))

    def _claim(self, margin: float) -> float:
        if self.se == 0:
            return 0.0 if margin > 0 else 1.0
        return float(min(1.0, 2 * _t_sf(margin / self.se, self.df)))

    def floored(self, se_min: float) -> "Estimate":
        """The same estimate with its standard error at least `se_min` (see `single_discordant_se`)."""
        return self if self.se >= se_min else replace(self, se=float(se_min))


SPLIT_NOISE_SHARE = 0.5  # of the splits' spread taken off (see over_splits): the verdict's cross-fit
ROUTER_SPLIT_NOISE_SHARE = 0.5  # the learned router's (experiments.report.router.fit)


def over_splits(values: Sequence[float], ses: Sequence[float], df: float, n_groups: int,
                noise_share: float = SPLIT_NOISE_SHARE) -> Estimate:
    """One estimate from the same estimator run over K random splits of the data (repeated cross-fitting):
    the mean of the K values, with the variance of one split less the part the averaging removes. By the
    law of total variance that part is (1 - 1/K) x the variance due to the split alone, which the K values'
    spread estimates; `noise_share` of it is taken off, calibrated per estimator on simulations with a known
    truth (perf/small_sample_verdict.py): 1/2 for the verdict's cross-fit. 3/4, calibrated on the project's own
    data model alone, held 94-96% over 8-40 documents there, but under the issue-41 scenarios (lopsided,
    rare and common answers, heavy-tailed documents, unequal questions; 12 RAG configs, 800 sweeps a cell) its
    coverage fell to 91.8-94.1% at 20 documents and false `rag` reached 3.4-3.5%; 1/2 gave 94.0-98.2% over
    8-40 documents in those scenarios (the high end at 8). The learned router, whose refits on half the
    documents vary more from split to split, needs 1/2 as well.

    The split's share of one split's variance cannot exceed that variance (mean(se_k^2) estimates the whole
    of it), so the spread taken off is at most the within-split variance: where the splits disagree by more
    than one split's own standard error, the interval stays as wide as at that point instead of shrinking
    further (the old floor, mean(se_k^2) / K, let more disagreement make a narrower interval; issue 41)."""
    v, s = np.asarray(values, dtype=float), np.asarray(ses, dtype=float)
    within = float(np.mean(s ** 2))
    between = float(np.var(v, ddof=1)) if v.size > 1 else 0.0
    var = within - noise_share * (1 - 1 / v.size) * min(between, within)
    return Estimate(float(v.mean()), float(np.sqrt(var)), df, n_groups)


def _t_ppf(q: float, df: float) -> float:
    from scipy.stats import t

    return float(t.ppf(q, df))


def _t_sf(x: float, df: float) -> float:
    """Student's t survival function, through scipy.special (the same value as scipy.stats.t.sf, without its
    argument checking: a plan's simulations call it tens of thousands of times)."""
    from scipy.special import stdtr

    return float(stdtr(df, -x))


def _cluster_contributions(x: np.ndarray, cluster: np.ndarray) -> np.ndarray:
    """Each cluster's share of the mean's error, u_g = G x (sum of its residuals) / n: they average to 0,
    and sum(u_g^2) / (G (G - 1)) is the CR1 variance of the mean."""
    n_groups = int(cluster.max()) + 1
    sums = np.bincount(cluster, weights=x - x.mean(), minlength=n_groups)
    return n_groups * sums / x.size


def single_discordant_se(groups: Sequence[object] | None, n: int, unit: float) -> float:
    """The smallest CR1 standard error a mean of `n` values over `groups` can have once one value differs
    from the rest by `unit` (one discordant answer: 100 points for a 0/1 score difference): the floor under
    a standard error, so that arms answering every question alike (standard error 0) decide nothing from
    it (issue 41: [0, 0] decided `rag`; one flipped answer made it [-19.8, +8.7])."""
    if n == 0:
        return 0.0
    cluster = _group_index(groups, n)
    counts = np.bincount(cluster).astype(float)
    n_groups = counts.size
    if n_groups < 2:
        return 0.0
    # the discordant value in cluster g: its residual sum is unit (1 - n_g / n), every other cluster's -n_h unit / n
    others = float(np.sum(counts ** 2))
    sums = (1 - counts / n) ** 2 + (others - counts ** 2) / n ** 2
    return float(unit * np.sqrt(n_groups / (n_groups - 1) * sums.min()) / n)


def cluster_t(values: Sequence[float], groups: Sequence[object] | None = None,
              unit: float | None = None) -> Estimate | None:
    """The mean of `values` (e.g. per-question differences) with the cluster-robust CR1 standard error
    over `groups` (each sample its own group where None) and G - 1 degrees of freedom; None with fewer
    than 2 groups (nothing to say about other documents). `unit`: the standard error is at least the one
    a single value off by `unit` would give (`single_discordant_se`).

    CR1: V = G / (G - 1) x sum_g (sum of the residuals in g)^2 / n^2, the sandwich variance of a mean
    with the usual small-sample factor; with one sample per group it is the classical s^2 / n."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return None
    cluster = _group_index(groups, x.size)
    n_groups = int(cluster.max()) + 1
    if n_groups < 2:
        return None
    u = _cluster_contributions(x, cluster)
    var = float(np.sum(u ** 2)) / (n_groups * (n_groups - 1))
    est = Estimate(float(x.mean()), float(np.sqrt(max(var, 0.0))), n_groups - 1, n_groups)
    return est.floored(single_discordant_se(groups, x.size, unit)) if unit else est


def n_clusters(groups: Sequence[object] | None, n: int) -> int:
    """How many groups the cluster bootstrap resamples for `n` samples with these `groups`."""
    return int(_group_index(groups, n).max()) + 1 if n else 0


def bootstrap_ci(
    values: Sequence[float], confidence: float = 0.95, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
    groups: Sequence[object] | None = None,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of `values` (resampling whole `groups` when given)."""
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        raise ValueError("bootstrap_ci needs at least one value")
    if not 0 < confidence < 1:
        raise ValueError("confidence must be in (0, 1)")
    cluster = _group_index(groups, arr.size)
    means = _widened(_resampled_cluster_means(arr, cluster, n_resamples, seed), arr, cluster, confidence)
    if arr.min() >= 0 and arr.max() <= 1:
        means = np.clip(means, 0.0, 1.0)  # a score in 0..1 has its mean in 0..1
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
    n_groups: int = 0  # clusters resampled (documents); n when every sample is its own

    def as_dict(self) -> dict:
        return asdict(self)


def _paired_means(d: np.ndarray, cluster: np.ndarray, confidence: float, n_resamples: int, seed: int) -> np.ndarray:
    return _widened(_resampled_cluster_means(d, cluster, n_resamples, seed), d, cluster, confidence)


def paired_resamples(
    a: Sequence[float], b: Sequence[float], confidence: float = 0.95, n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0, groups: Sequence[object] | None = None,
) -> np.ndarray:
    """The resampled differences mean(a) - mean(b) that paired_bootstrap's interval and p-value are
    read from (same draws, widened for few groups): for tests against other boundaries than 0."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    return _paired_means(d, _group_index(groups, d.size), confidence, n_resamples, seed)


def paired_bootstrap(
    a: Sequence[float], b: Sequence[float], confidence: float = 0.95, n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0, groups: Sequence[object] | None = None,
) -> PairedResult:
    """Paired bootstrap of mean(a) - mean(b) over the same samples (a[i] and b[i] are one sample),
    resampling whole `groups` (groups[i]: sample i's document) when given."""
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if xa.shape != xb.shape:
        raise ValueError(f"paired_bootstrap needs scores for the same samples: {xa.shape} vs {xb.shape}")
    if xa.size == 0:
        raise ValueError("paired_bootstrap needs at least one pair")
    d = xa - xb
    cluster = _group_index(groups, d.size)
    means = _paired_means(d, cluster, confidence, n_resamples, seed)
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
        n_groups=int(cluster.max()) + 1,
    )
