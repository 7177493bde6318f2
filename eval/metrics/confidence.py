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
config per arm): the mean difference with the CR2 standard error and Bell-McCaffrey degrees of freedom
(eval.metrics.cluster_variance: CR1 with G - 1 degrees of freedom when documents have as many questions, and
still right when a few documents hold most of them), joined by an exact bound where the arms rarely disagree
(eval.metrics.discordance). Its `Estimate` answers the two questions a decision asks, the interval at a
confidence level and the p-value of "the true difference is above (below) b", from the same distribution, so
an interval that clears b and a p-value below alpha never disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace

import numpy as np

from eval.metrics.cluster_variance import CONCENTRATED, cluster_numbers, clustered_mean, largest_share
from eval.metrics.discordance import RareSide, rare_sides

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
    return cluster_numbers(groups, n)


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
    at confidence 1 - a clears a boundary exactly when the claim's p-value is below a. Where the arms rarely
    disagree on one side (`rare_low`, `rare_high`: eval.metrics.discordance), a claim that side would refute is
    also held to the exact bound, and the interval's end on that side is the farther of the two."""

    value: float
    se: float
    df: float
    n_groups: int = 0  # clusters (documents) behind it
    # made by repeated cross-fitting (a choice among several configs on half the documents, scored on the other
    # half): the verdict tests its claims at a stricter level (decision.claim_levels)
    cross_fitted: bool = False
    # the share of the weight the largest tenth of the documents hold (eval.metrics.cluster_variance.largest_share):
    # at CONCENTRATED or more the mean rests on a few documents, and the report says so
    largest_share: float = 0.0
    rare_low: RareSide | None = None  # few negative differences: claims "above b" also need the exact bound
    rare_high: RareSide | None = None  # few positive differences: claims "below b" also need it

    def interval(self, confidence: float = 0.95) -> tuple[float, float]:
        tail = (1 - confidence) / 2
        half = 0.0 if self.se == 0 else self.se * _t_ppf(1 - tail, self.df)
        lo, hi = self.value - half, self.value + half
        if self.rare_low is not None:
            lo = min(lo, self.rare_low.bound(tail))
        if self.rare_high is not None:
            hi = max(hi, self.rare_high.bound(tail))
        return lo, hi

    def p_above(self, boundary: float) -> float:
        """p-value of the claim "the true value is above `boundary`" (twice the one-sided tail, so that
        it is below 0.05 exactly when the 95% interval's lower end is above the boundary)."""
        p = self._claim(self.value - boundary)
        return p if self.rare_low is None else max(p, self.rare_low.p_beyond(boundary))

    def p_below(self, boundary: float) -> float:
        """p-value of the claim "the true value is below `boundary`"."""
        p = self._claim(boundary - self.value)
        return p if self.rare_high is None else max(p, self.rare_high.p_beyond(boundary))

    def p_two_sided(self, boundary: float = 0.0) -> float:
        return min(self.p_above(boundary), self.p_below(boundary))

    def t_p_above(self, boundary: float) -> float:
        """`p_above` from the t distribution alone (without the exact bound)."""
        return self._claim(self.value - boundary)

    def t_p_below(self, boundary: float) -> float:
        """`p_below` from the t distribution alone."""
        return self._claim(boundary - self.value)

    @property
    def concentrated(self) -> bool:
        """A few documents hold much of the weight (the largest tenth CONCENTRATED or more)."""
        return self.largest_share >= CONCENTRATED

    @property
    def strict(self) -> bool:
        """Its claims are tested at the stricter level (experiments.report.verdict.decision.claim_levels): the
        estimate was cross-fitted."""
        return self.cross_fitted

    @property
    def exact_bound_sides(self) -> list[str]:
        """Which claims an exact bound holds back: "above" (few negative differences), "below" (few positive)."""
        return [name for name, side in (("above", self.rare_low), ("below", self.rare_high)) if side is not None]

    def _claim(self, margin: float) -> float:
        if self.se == 0:
            return 0.0 if margin > 0 else 1.0
        return float(min(1.0, 2 * _t_sf(margin / self.se, self.df)))


SPLIT_NOISE_SHARE = 0.5  # of the splits' spread taken off (see over_splits): the verdict's cross-fit
ROUTER_SPLIT_NOISE_SHARE = 0.5  # the learned router's (experiments.report.router.fit)


def over_splits(values: Sequence[float], ses: Sequence[float], df: float, n_groups: int,
                noise_share: float = SPLIT_NOISE_SHARE) -> Estimate:
    """One estimate from the same estimator run over K random splits of the data (repeated cross-fitting):
    the mean of the K values, with the variance of one split less the part the averaging removes. By the
    law of total variance that part is (1 - 1/K) x the variance due to the split alone, which the K values'
    spread estimates; `noise_share` of it is taken off, calibrated per estimator on simulations with a known
    truth (perf/small_sample_verdict.py): 1/2 for the verdict's cross-fit and for the learned router, whose
    refits on half the documents vary more from split to split. `df`: `split_degrees_of_freedom`.

    The split's share of one split's variance cannot exceed that variance (mean(se_k^2) estimates the whole
    of it), so the spread taken off is at most the within-split variance: where the splits disagree by more
    than one split's own standard error, the interval stays as wide as at that point instead of shrinking
    further."""
    v, s = np.asarray(values, dtype=float), np.asarray(ses, dtype=float)
    within = float(np.mean(s ** 2))
    between = float(np.var(v, ddof=1)) if v.size > 1 else 0.0
    var = within - noise_share * (1 - 1 / v.size) * min(between, within)
    return Estimate(float(v.mean()), float(np.sqrt(var)), df, n_groups)


def split_degrees_of_freedom(pooled: Sequence[float], groups: Sequence[object],
                             weights: Sequence[float] | None = None) -> float:
    """The degrees of freedom of a cross-fitted estimate, from one split's pooled values (each scored by the choice
    made on the other half of the documents; together, one mean over all documents): the Bell-McCaffrey degrees of
    freedom of their mean times (G - 2) / (G - 1), so G - 2 for documents with as many questions (two halves, each
    losing one) and fewer when a few documents hold most of them (eval.metrics.cluster_variance). The variance
    stays the bootstrap's: resampling documents within each half already follows their unequal sizes (with
    lognormal questions per document its standard error matched the estimates' spread, 6.76 against 6.71 points
    at 20 documents; CR2's own inflation on top made the interval wider than needed)."""
    x = np.asarray(pooled, dtype=float)
    cluster = _group_index(groups, x.size)
    g = int(cluster.max()) + 1
    if g < 3:
        return 1.0
    m = clustered_mean(x, cluster, None if weights is None else np.asarray(weights, dtype=float))
    return max(1.0, m.df * (g - 2) / (g - 1))


def with_documents(estimate: Estimate, pooled: Sequence[float] | np.ndarray, groups: Sequence[object] | None,
                   unit: float | None, weights: Sequence[float] | None = None) -> Estimate:
    """`estimate` (e.g. averaged over splits) with what its pooled differences say of their documents: the exact
    bounds of eval.metrics.discordance where the arms disagree in few of them (with `unit`, the points of one
    whole discordant answer), and the share of the weight the largest tenth holds."""
    x = np.asarray(pooled, dtype=float)
    if x.size == 0:
        return estimate
    cluster = _group_index(groups, x.size)
    if int(cluster.max()) + 1 < 2:
        return estimate
    w = None if weights is None else np.asarray(weights, dtype=float)
    low, high = rare_sides(x, cluster, unit, w) if unit else (None, None)
    top = largest_share(np.bincount(cluster, weights=np.ones_like(x) if w is None else w))
    return replace(estimate, rare_low=low, rare_high=high, largest_share=top)


def _t_ppf(q: float, df: float) -> float:
    from scipy.stats import t

    return float(t.ppf(q, df))


def _t_sf(x: float, df: float) -> float:
    """Student's t survival function, through scipy.special (the same value as scipy.stats.t.sf, without its
    argument checking: a plan's simulations call it tens of thousands of times)."""
    from scipy.special import stdtr

    return float(stdtr(df, -x))


def cluster_t(values: Sequence[float], groups: Sequence[object] | None = None, unit: float | None = None,
              weights: Sequence[float] | None = None) -> Estimate | None:
    """The weighted mean of `values` (e.g. per-question differences; `weights`: None for the mean over values, 1 /
    n_g for the mean over documents) with the CR2 standard error over `groups` (each sample its own group where
    None) and Bell-McCaffrey degrees of freedom (eval.metrics.cluster_variance: they hold when documents differ
    in size, and are CR1 with G - 1 degrees of freedom when they do not); None with fewer than 2 groups (nothing
    to say about other documents). `unit`: the points of one whole discordant answer (100 for a difference of
    0..1 scores in points): where the values rarely differ from 0 on one side, the exact bound of
    eval.metrics.discordance joins the t on that side."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return None
    cluster = _group_index(groups, x.size)
    if int(cluster.max()) + 1 < 2:
        return None
    m = clustered_mean(x, cluster, None if weights is None else np.asarray(weights, dtype=float))
    return with_documents(Estimate(m.value, m.se, m.df, m.n_groups), x, groups, unit, weights)


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
