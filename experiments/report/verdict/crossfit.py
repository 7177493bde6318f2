"""Cross-fitted selection: choose the configs on one half of the documents and score them on the
other, both ways round, so that every document counts in the estimate and none is scored by a choice
made on it.

Why. A sweep has several configs per arm, and the verdict has to choose one per arm (the best long
context, the cheapest RAG config within the tolerance of the best RAG config). Chosen and scored on the same
samples, the luckiest of 12 equal RAG configs looks several points better than it is (the winner's curse).
Choosing on one half of the documents and reporting on the other (split-half) removes that bias but
reports on half the documents: in simulated sweeps of 40 documents it decided clear truths in 67%
of sweeps where a single pre-registered config decided in 87-100% (issue 25). Cross-fitting (sample
splitting with the roles swapped, as in double/debiased machine learning: Chernozhukov et al. 2018)
keeps split-half's honesty and uses every document: the documents are split in two halves A and B
(`experiments.report.halves.split_documents`: a seeded hash of their names, whatever their scores);
the configs chosen on A are scored on B's samples and the configs chosen on B on A's samples; the
paired per-sample differences RAG - long context of both halves are pooled into one mean over all
documents. Each difference comes from a choice that never saw its document, so the mean is not
biased by the choice, and its variance is about that of one fixed pair over all documents.

The alternative the issue names, a bootstrap that repeats the selection inside every resample and
scores on the same resample, estimates the spread of the same-sample difference but keeps its bias:
in the bootstrap world the luckiest config is lucky by a different amount than in the real one, so
recentring cannot remove the winner's curse reliably. Cross-fitting removes the bias by design.

The interval. The pooled differences are not independent of the choices: half A both chose the
configs scored on B and scores the configs chosen on B, so a config that looked good on A (and was
chosen there) is often the one B's choice also names, scored on A. A bootstrap that keeps the two
choices fixed misses that and is slightly too narrow; one that repeats the choices and takes each
resample's pooled mean as it is counts the observed differences between configs (themselves noise)
as variation of the choice, and is too wide when the configs are alike. So the paired cluster
bootstrap resamples whole documents within each half (each half keeps its size, as the split does),
repeats both halves' choices on every resample, and adds to the estimate each chosen pair's resampled
deviation from its own observed mean ("recentred"): the spread of the estimation error of the pairs
the halves choose, with the choice and the scores moving together. A bootstrap within a half of h
documents underestimates the variance by (h - 1) / h, so each half's deviations are scaled by
sqrt(h / (h - 1)); the standard error of the resampled differences then makes a t interval, never clipped to the
observed differences, with G - 2 degrees of freedom (two halves, each losing one) when the documents have as many
questions. When a few documents hold most of the questions the variance rests on fewer documents than G says:
the degrees of freedom are Bell-McCaffrey's times (G - 2) / (G - 1) (eval.metrics.confidence.
split_degrees_of_freedom), and where the arms rarely disagree the exact bound of eval.metrics.discordance joins
the interval.

One split is one draw: on identical data the decision changed with the seed in a quarter of 8-12
document sweeps. So the split is repeated (`splits` partitions, each a seeded hash of the document
names) and the partitions aggregated by their mean, as in repeated cross-fitting (Chernozhukov et al.
2018 aggregate over splits; the mean rather than their median, which the choice's skew biased by about
+0.6 points in simulations). Its variance is that of one split less the part the averaging removes,
by the law of total variance: mean(se_k^2) - (1 - 1/K) x var(d_k) (half of it, as calibrated), the
splits' own spread, at most mean(se_k^2), estimating what depends on the split alone
(eval.metrics.confidence.over_splits).
perf/small_sample_verdict.py measures the
coverage of this interval at 8-40 documents.

The choice (`Candidates.choose`): the best long-context config, and the cheapest RAG config within the tolerance
of the best RAG config of the same half, so a half never chooses a RAG config that scores below one it could
have chosen by more than the tolerance (issue 39: with long context at 0, "the cheapest RAG config within the
tolerance of long context" took a config scoring 0 over one scoring 25).

Which configs the verdict shows: the choice on all documents (what a team would deploy). The
cross-fitted difference estimates what choosing on this many documents delivers; when both halves
chose the configs shown (`CrossFit.halves_agree`), it is an estimate for exactly those configs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from eval.metrics.confidence import Estimate, over_splits, split_degrees_of_freedom, with_documents
from experiments.report.halves import MIN_GROUPS, split_documents

CHUNK_CELLS = 2_000_000  # resample weights held at once (rows x documents)


@dataclass
class Candidates:
    """The configs of each arm over the documents, as sums the selection and the bootstrap can weigh.

    `lc_scores` / `rag_scores`: per config {sample id: score 0..1}; `lc_tokens` / `rag_tokens`: mean
    prompt tokens (ties in score go to fewer); `rag_cost`: the RAG cost key (cost per answer, else
    tokens; then tokens), cheaper first; `groups`: sample id -> document, for every scored sample;
    `documents`: the documents, in the order the bootstrap draws them. `costlier[i, j]`: RAG config i
    costs more than config j by more than the measurement's noise (None: the cost key decides alone,
    experiments.report.verdict.selection builds it)."""
    lc_scores: list[dict[str, float]]
    rag_scores: list[dict[str, float]]
    lc_tokens: list[float]
    rag_tokens: list[float]
    rag_cost: list[tuple[float, float]]
    groups: dict[str, str]
    documents: list[str]
    tolerance: float
    costlier: np.ndarray | None = None
    # the mean over documents (report `weight: document`): every document's sums become its mean and its count 1, so
    # the choice, the pooled difference and the bootstrap weigh documents alike, however many questions each has
    per_document: bool = False

    def __post_init__(self) -> None:
        index = {d: j for j, d in enumerate(self.documents)}
        doc = lambda i: index[self.groups[i]]  # noqa: E731
        g = len(self.documents)
        self.lc_sums, self.lc_counts = _per_document(self.lc_scores, doc, g)
        self.rag_sums, self.rag_counts = _per_document(self.rag_scores, doc, g)
        n_lc = len(self.lc_scores)
        self.pair_sums = np.zeros((len(self.rag_scores) * n_lc, g))
        self.pair_counts = np.zeros_like(self.pair_sums)
        lo, hi = np.inf, -np.inf
        for r, rag in enumerate(self.rag_scores):
            for li, lc in enumerate(self.lc_scores):
                for i in set(rag) & set(lc):
                    d = rag[i] - lc[i]
                    self.pair_sums[r * n_lc + li, doc(i)] += d
                    self.pair_counts[r * n_lc + li, doc(i)] += 1
                    lo, hi = min(lo, d), max(hi, d)
        self.diff_range = (100 * lo, 100 * hi) if lo <= hi else (0.0, 0.0)
        if self.per_document:
            self.lc_sums, self.lc_counts = _document_means(self.lc_sums, self.lc_counts)
            self.rag_sums, self.rag_counts = _document_means(self.rag_sums, self.rag_counts)
            self.pair_sums, self.pair_counts = _document_means(self.pair_sums, self.pair_counts)
        # ties: the first of these orders wins (fewer tokens, then list order; cheaper, then list order)
        self.lc_order = np.array(sorted(range(n_lc), key=lambda c: (self.lc_tokens[c], c)), dtype=np.int64)
        self.rag_order = np.array(sorted(range(len(self.rag_scores)), key=lambda c: (self.rag_tokens[c], c)),
                                  dtype=np.int64)
        self.rag_cost_order = np.array(sorted(range(len(self.rag_scores)), key=lambda c: (self.rag_cost[c], c)),
                                       dtype=np.int64)

    @property
    def n_lc(self) -> int:
        return len(self.lc_scores)

    def choose(self, columns: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per row of `weights` (rows x len(columns): how often each document of `columns` counts), the
        verdict's choice: (long-context index, RAG index, RAG within tolerance of long context). The best
        long context (highest mean score, rounded to 9 decimals); the cheapest RAG config whose mean is at
        least the best RAG config's minus the tolerance, so the choice never scores below a config it could
        have chosen by more than the tolerance (a cheap config that merely matches a long context at the floor
        is not taken over one that scores 25 points more). With `costlier`, the configs within the tolerance
        that are not dearer than the cheapest beyond the cost's noise count as equally cheap, and the
        best-scoring of them is chosen. The third value: the chosen RAG config's mean is at least long
        context's minus the tolerance. -1: the arm has no sample there."""
        lc = _weighted_means(self.lc_sums[:, columns], self.lc_counts[:, columns], weights)
        rag = _weighted_means(self.rag_sums[:, columns], self.rag_counts[:, columns], weights)
        lc_pick = _first_best(lc, self.lc_order)
        lc_score = np.take_along_axis(lc, np.maximum(lc_pick, 0)[:, None], axis=1)[:, 0]
        best_rag = _first_best(rag, self.rag_order)
        best_score = np.take_along_axis(rag, np.maximum(best_rag, 0)[:, None], axis=1)[:, 0]
        with np.errstate(invalid="ignore"):
            near_best = rag >= (np.round(best_score, 9) - self.tolerance - 1e-9)[:, None]  # nan compares False
        cheapest = self.rag_cost_order[np.argmax(near_best[:, self.rag_cost_order], axis=1)]
        if self.costlier is not None:  # as cheap as the cheapest within the cost's noise: the best score wins
            tied = near_best & ~self.costlier[:, cheapest].T
            cheapest = np.where(tied.any(axis=1), _first_best(np.where(tied, rag, np.nan), self.rag_cost_order),
                                cheapest)
        rag_pick = np.where(best_rag >= 0, cheapest, -1)
        rag_score = np.take_along_axis(rag, np.maximum(rag_pick, 0)[:, None], axis=1)[:, 0]
        with np.errstate(invalid="ignore"):
            within = (lc_pick >= 0) & (rag_pick >= 0) & (rag_score >= lc_score - self.tolerance - 1e-9)
        return lc_pick, rag_pick, within

    def pooled(self, pairs: np.ndarray, columns: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(sum of paired differences, number of pairs) of pair `pairs[row]` over the weighted documents."""
        sums = weights @ self.pair_sums[:, columns].T
        counts = weights @ self.pair_counts[:, columns].T
        rows = np.arange(len(pairs))
        safe = np.maximum(pairs, 0)
        return np.where(pairs >= 0, sums[rows, safe], np.nan), np.where(pairs >= 0, counts[rows, safe], np.nan)

    def pair_index(self, lc_pick: np.ndarray, rag_pick: np.ndarray) -> np.ndarray:
        return np.where((lc_pick >= 0) & (rag_pick >= 0), rag_pick * self.n_lc + lc_pick, -1)


def _per_document(scores: list[dict[str, float]], doc, n_docs: int) -> tuple[np.ndarray, np.ndarray]:
    sums, counts = np.zeros((len(scores), n_docs)), np.zeros((len(scores), n_docs))
    for c, s in enumerate(scores):
        for i, v in s.items():
            sums[c, doc(i)] += v
            counts[c, doc(i)] += 1
    return sums, counts


def _document_means(sums: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each document's mean in place of its sum, and a count of 1 where it has a sample: documents weigh alike."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), 0.0), (counts > 0).astype(float)


def _weighted_means(sums: np.ndarray, counts: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """rows x configs: 100 x weighted mean score (nan where the config has no sample)."""
    num, den = weights @ sums.T, weights @ counts.T
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, 100 * num / den, np.nan)


def _first_best(means: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Per row, the config with the highest mean (rounded to 9 decimals), the first in `order` on ties;
    -1 where no config has a mean."""
    ranked = np.round(means[:, order], 9)
    ranked = np.where(np.isnan(ranked), -np.inf, ranked)
    best = order[np.argmax(ranked, axis=1)]
    return np.where(np.isfinite(ranked).any(axis=1), best, -1)


def _resample_weights(rng: np.random.Generator, rows: int, n_docs: int) -> np.ndarray:
    """rows x n_docs: how often each document is drawn when `n_docs` are drawn with replacement."""
    draws = rng.integers(0, n_docs, size=(rows, n_docs)) + (np.arange(rows) * n_docs)[:, None]
    return np.bincount(draws.ravel(), minlength=rows * n_docs).reshape(rows, n_docs).astype(float)


@dataclass
class CrossFit:
    """One partition's cross-fitted difference RAG - long context (points) and its standard error."""
    choices: tuple[tuple[int, int, bool], tuple[int, int, bool]]  # (long context, RAG, within) chosen on A, on B
    samples: list[tuple[str, str, float, float]]  # (id, document, RAG score, long-context score) pooled
    diff: float
    se: float  # of the difference, from the recentred bootstrap with the halves' small-sample factors
    n_groups: int  # documents with a pooled sample
    half_a: frozenset[str] = frozenset()  # the documents of half A (the rest are half B's)

    def halves_agree(self, lc: int, rag: int) -> bool:
        """Both halves chose this long-context and this RAG config."""
        return all(c[0] == lc and c[1] == rag for c in self.choices)


@dataclass
class RepeatedCrossFit:
    """The cross-fit over several partitions, averaged: `estimate` (eval.metrics.confidence.Estimate, t with
    Bell-McCaffrey degrees of freedom, G - 2 for equal documents) is what the verdict decides from; `fits` are the
    partitions in order (the first is the report's seed, whose pooled samples the row shows)."""
    fits: list[CrossFit]
    estimate: Estimate

    @property
    def first(self) -> CrossFit:
        return self.fits[0]

    def agreement(self, lc: int, rag: int) -> float:
        """Share of the partitions whose two halves both chose these configs."""
        return sum(f.halves_agree(lc, rag) for f in self.fits) / len(self.fits)


BOOTSTRAPS = ("recentred", "fixed", "whole")  # see crossfit(); the verdict uses the first


def crossfit(table: Candidates, half_a: Sequence[str], half_b: Sequence[str], n_resamples: int, seed: int,
             bootstrap: str = "recentred") -> CrossFit | None:
    """Choose on each half, score on the other, pool; None when a half has no sample of an arm.
    `bootstrap` (perf/verdict_simulation.py --compare-bootstraps measures all three):
    - "recentred" (the verdict's): both choices are repeated on every resample, and each chosen pair
      adds its resampled deviation from its own observed mean to the estimate: the spread of the
      estimation error of the chosen pairs, with the choice and the scores moving together;
    - "fixed": the two choices kept, only the pooled differences resampled (misses that a half which
      chose a config also scores the other half's choice: slightly too narrow in theory);
    - "whole": both choices repeated and the resampled pooled means taken as they are (also counts
      the observed differences between configs, themselves noise, as variation: too wide when
      configs are alike)."""
    if bootstrap not in BOOTSTRAPS:
        raise ValueError(f"bootstrap={bootstrap!r}: one of {', '.join(BOOTSTRAPS)}")
    index = {d: j for j, d in enumerate(table.documents)}
    cols = (np.array([index[d] for d in half_a], dtype=np.int64), np.array([index[d] for d in half_b], dtype=np.int64))
    picks = [table.choose(c, np.ones((1, c.size))) for c in cols]
    if any(p[0][0] < 0 or p[1][0] < 0 for p in picks):
        return None
    on_a, on_b = ((int(p[0][0]), int(p[1][0]), bool(p[2][0])) for p in picks)
    choices = (on_a, on_b)
    samples = []
    for (lc, rag, _), scored_on in zip(choices, (set(half_b), set(half_a)), strict=True):
        rs, ls = table.rag_scores[rag], table.lc_scores[lc]
        samples += [(i, table.groups[i], rs[i], ls[i]) for i in sorted(set(rs) & set(ls))
                    if table.groups[i] in scored_on]
    if not samples:
        return None
    pairs = [int(table.pair_index(np.array([c[0]]), np.array([c[1]]))[0]) for c in choices]
    sums = table.pair_sums[pairs[0], cols[1]].sum() + table.pair_sums[pairs[1], cols[0]].sum()
    counts = table.pair_counts[pairs[0], cols[1]].sum() + table.pair_counts[pairs[1], cols[0]].sum()
    diff = 100 * float(sums / counts)  # the pooled samples' mean (over documents' means with `per_document`)
    n_groups = len({s[1] for s in samples})
    raw = _resampled_crossfit(table, cols, choices, n_resamples, seed, bootstrap)
    raw = raw[~np.isnan(raw)]
    se = float(np.std(raw - diff, ddof=1)) if raw.size > 1 else 0.0
    return CrossFit(choices, samples, diff, se, n_groups, frozenset(half_a))


def repeated_crossfit(table: Candidates, splits: int, n_resamples: int, seed: int,
                      bootstrap: str = "recentred") -> RepeatedCrossFit | None:
    """`crossfit` over `splits` partitions of the documents (seeds seed, seed + 1, ...), aggregated by the
    mean (see the module's docstring); None when a half of the first partition is too small or lacks an
    arm. Each partition gets `n_resamples` resamples."""
    fits: list[CrossFit] = []
    for k in range(max(1, splits)):
        half_a, half_b = split_documents(set(table.documents), seed + k)
        if min(len(half_a), len(half_b)) < MIN_GROUPS:
            return None
        fit = crossfit(table, sorted(half_a), sorted(half_b), n_resamples, seed + k, bootstrap)
        if fit is None:
            if not fits:
                return None
            continue
        fits.append(fit)
    n_groups = fits[0].n_groups
    first = fits[0].samples
    diffs, docs = [100 * (s[2] - s[3]) for s in first], [s[1] for s in first]
    weights = document_weights(docs) if table.per_document else None
    df = split_degrees_of_freedom(diffs, docs, weights)
    estimate = over_splits([f.diff for f in fits], [f.se for f in fits], df, n_groups)
    guarded = with_documents(estimate, diffs, docs, 100.0, weights)
    return RepeatedCrossFit(fits, replace(guarded, cross_fitted=True))



def document_weights(docs: Sequence[str]) -> list[float]:
    """1 / (the document's samples) per sample: weights under which a mean of the samples is the mean of the
    documents' means."""
    counts: dict[str, int] = {}
    for d in docs:
        counts[d] = counts.get(d, 0) + 1
    return [1.0 / counts[d] for d in docs]


def _resampled_crossfit(table: Candidates, cols: tuple[np.ndarray, np.ndarray], choices, n_resamples: int,
                        seed: int, bootstrap: str) -> np.ndarray:
    """The pooled difference (points) over `n_resamples` resamples of the documents within each half
    (`bootstrap`: see crossfit)."""
    rng = np.random.default_rng(seed)
    out = np.empty(n_resamples)
    chosen = [int(table.pair_index(np.array([c[0]]), np.array([c[1]]))[0]) for c in choices]
    # every pair's mean on each half, and the point estimate's pooled samples on each half
    own = [table.pair_sums[:, c].sum(axis=1) / np.maximum(table.pair_counts[:, c].sum(axis=1), 1) for c in cols]
    n_b, n_a = table.pair_counts[chosen[0], cols[1]].sum(), table.pair_counts[chosen[1], cols[0]].sum()
    point = (table.pair_sums[chosen[0], cols[1]].sum() + table.pair_sums[chosen[1], cols[0]].sum()) / (n_a + n_b)
    # a bootstrap over h documents has (h - 1) / h of the variance: each half's deviations scaled back
    half_factor = [np.sqrt(c.size / (c.size - 1)) if c.size > 1 else 1.0 for c in cols]
    chunk = max(1, min(n_resamples, CHUNK_CELLS // max(1, cols[0].size + cols[1].size)))
    for start in range(0, n_resamples, chunk):
        rows = min(n_resamples, start + chunk) - start
        w = [_resample_weights(rng, rows, c.size) for c in cols]
        if bootstrap == "fixed":
            pairs = [np.full(rows, p) for p in chosen]
        else:
            pairs = [table.pair_index(*table.choose(c, wc)[:2]) for c, wc in zip(cols, w, strict=True)]
        # the pair chosen on A is scored on B's resampled documents, and the other way round
        sum_b, cnt_b = table.pooled(pairs[0], cols[1], w[1])
        sum_a, cnt_a = table.pooled(pairs[1], cols[0], w[0])
        with np.errstate(invalid="ignore", divide="ignore"):
            if bootstrap == "recentred":
                dev_b, dev_a = sum_b / cnt_b - own[1][pairs[0]], sum_a / cnt_a - own[0][pairs[1]]
                dev_b, dev_a = dev_b * half_factor[1], dev_a * half_factor[0]
                out[start:start + rows] = 100 * (point + (n_b * dev_b + n_a * dev_a) / (n_a + n_b))
            else:
                out[start:start + rows] = 100 * (sum_a + sum_b) / (cnt_a + cnt_b)
    return out
