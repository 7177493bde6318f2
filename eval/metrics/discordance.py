"""An exact bound for paired differences whose arms rarely disagree.

When two arms answer almost every question alike, the paired differences are zero but for a few discordant
answers, and a t interval says little that can be trusted: with none of them in the sample its standard error is
0, with one it rests on one document. Simulated with RAG answering exactly as long context except that retrieval
misses 2% of questions (RAG truly 2 points worse), a t interval floored at one discordant answer called RAG
"no more than 2 points worse" in 8.9% of sweeps at 40 documents (perf/small_sample_verdict.py, scenario
`near_identical`): each time, the sample happened to hold no miss at all.

So where the arms disagree in few documents (fewer than RARE_DOCUMENTS, and fewer than a quarter of them), a
claim is also held to an exact bound from the count of discordant answers on the side that would refute it. For
"RAG - long context > b": the difference is the mean of the positive parts minus the mean of the negative parts,
so it is at least (a lower bound of the positive parts' mean) - (an upper bound of the negative parts' mean).
The upper bound is Clopper-Pearson's, counted in documents, not questions: questions of one document fail
together (a document retrieval misses is often missed on every question), so the count is the negative parts'
mean times the effective number of documents (Kish's W^2 / sum W_g^2, G when documents weigh alike) out of that
many trials; with no discordant answer at all it is 1 - level^(1/G) (5.1% at one-sided 1.5% over 80 documents).
The lower bound of the other side is the CR2 t bound (0 when that side has no discordant answer: a mean of
non-negative parts is at least 0); when both sides are uncertain each gets half the level (Bonferroni). The claim
"below b" mirrors it. Where discordant answers are common the t interval is trusted alone (the exact bound would
only cost power).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from eval.metrics.cluster_variance import ClusteredMean, clustered_mean

RARE_DOCUMENTS = 5  # the arms disagree in fewer documents than this: the exact bounds join the t,
RARE_SHARE = 0.25  # when those are also fewer than this share of the documents (4 of 8 is not few)


@dataclass(frozen=True)
class RareSide:
    """Discordant answers on one side of a paired difference (`side` -1: the difference negative, which refutes
    claims that it is above a boundary; +1: positive), where the arms disagree in few documents."""

    side: int
    documents: int  # documents with at least one discordant answer on this side
    events: float  # the side's mean magnitude (0..1) times the effective number of documents
    trials: float  # the effective number of documents
    other: ClusteredMean | None  # the other side's mean magnitude (points), None when it has no discordant answer
    unit: float  # points of one whole discordant answer (100 for 0..1 scores in points)

    def bound(self, one_sided: float) -> float:
        """The bound on the difference (points) at this one-sided level: the lower bound for side -1, the upper
        for side +1."""
        split = one_sided / 2 if self.other is not None else one_sided
        rare = self.unit * upper_proportion(self.events, self.trials, split)
        other = 0.0
        if self.other is not None:
            other = max(0.0, self.other.value - self.other.se * _t_ppf(1 - split, self.other.df))
        return other - rare if self.side < 0 else rare - other

    def p_beyond(self, boundary: float) -> float:
        """p-value of the claim this side could refute (above `boundary` for side -1, below it for +1), twice the
        smallest one-sided level at which the bound clears the boundary (the t interval's convention)."""
        def clears(level: float) -> bool:
            b = self.bound(level)
            return b > boundary if self.side < 0 else b < boundary

        if not clears(0.5):
            return 1.0
        lo, hi = -30.0, float(np.log(0.5))  # log levels: clears(exp(hi)), and (about) not clears(exp(lo))
        if clears(float(np.exp(lo))):
            return 0.0
        for _ in range(40):
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if clears(float(np.exp(mid))) else (mid, hi)
        return float(min(1.0, 2 * np.exp(hi)))


def upper_proportion(events: float, trials: float, one_sided: float) -> float:
    """Clopper-Pearson's upper bound of a proportion from `events` of `trials` (fractional counts allowed: the beta
    quantile they generalise to)."""
    from scipy.stats import beta

    if trials <= 0 or events >= trials:
        return 1.0
    return float(beta.ppf(1 - one_sided, events + 1, trials - events))


def rare_sides(values: np.ndarray, cluster: np.ndarray, unit: float, weights: np.ndarray | None = None
               ) -> tuple[RareSide | None, RareSide | None]:
    """(the negative side, the positive side) of paired differences `values` (points; one whole discordant answer
    is `unit`) when the arms disagree in few documents (fewer than RARE_DOCUMENTS, and than RARE_SHARE of them),
    else (None, None): where discordant answers are common the t interval is trusted alone."""
    w = np.ones_like(values) if weights is None else weights
    g = int(cluster.max()) + 1
    disagree = int(np.count_nonzero(np.bincount(cluster, weights=np.abs(values), minlength=g)))
    if disagree >= RARE_DOCUMENTS or disagree >= RARE_SHARE * g:
        return None, None
    w_g = np.bincount(cluster, weights=w, minlength=g)
    effective = float(w_g.sum() ** 2 / np.sum(w_g ** 2))
    parts = {-1: np.clip(-values / unit, 0.0, 1.0), 1: np.clip(values / unit, 0.0, 1.0)}
    out: dict[int, RareSide] = {}
    for side, part in parts.items():
        docs = int(np.count_nonzero(np.bincount(cluster, weights=part, minlength=g)))
        other = parts[-side]
        other_mean = clustered_mean(unit * other, cluster, w) if other.any() else None
        out[side] = RareSide(side, docs, float(w @ part / w.sum()) * effective, effective, other_mean, unit)
    return out[-1], out[1]


def _t_ppf(q: float, df: float) -> float:
    from scipy.stats import t

    return float(t.ppf(q, df))
