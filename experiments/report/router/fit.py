"""A learned router as a third answer: per question, send it to RAG or to long context, from features
known before the answer (experiments.report.router.features), measured against the better single arm
and against the oracle (issue 26).

The model. A ridge regression (L2-regularised least squares, numpy only, closed form) of the paired
difference d = s_rag - s_lc on the standardised features, rather than a logistic regression of "RAG
beats long context" with the ties left out. Why:
- the routing rule needs the expected gain in score units, to weigh it against the cost difference
  (route to RAG when gain + cost_weight x (cost_lc - cost_rag) > 0); least squares estimates exactly
  the conditional mean E[d | x], while a logistic model gives P(RAG wins | not a tie) and would need a
  second model for the size of a win and the chance of a tie before it could be priced;
- ties carry information: where both arms answer right (or both wrong) there is nothing to gain, and
  a model trained without those questions overstates the gain wherever they are common;
- it takes continuous scores (F1, judge scores in 0..1) as they are, without a threshold;
- it has a closed form: no iterations, no convergence to check, the same answer on every machine.
Its boundary is linear in the features, like a logistic model's. Each feature is standardised with
the training half's mean and standard deviation (a feature constant on the training half gets sd 1
and, penalised, a weight near 0); the intercept (the training mean of d) is not penalised; `ridge` is
the penalty on the sum of squared standardised weights, in units of squared score differences per
question (1.0: mild at a hundred questions per half).

Screening (issue 41). Before the ridge, each training set keeps only the features whose correlation with d
has |t| >= SCREEN_T (2.0), and its strongest feature whatever its t (`screened`); the others get weight 0.
The ridge shrinks every standardised weight alike, so it cannot tell a feature that says nothing from one
that says something: on split truths (perf/router_simulation.py: the arms tie, routing by document length
gains 15 points) the four features that say nothing there cost the router 2.5 of its 12.6 points, and with
the screen a router fitted on 20 documents recovers 11.5 instead of 10.2. The screen is part of the fit, so
the cross-fit and every refit of the interval below screen anew: its own luck is in the interval. Its cost:
a gain spread thinly over many features, none of them clear on its own, is routed on fewer of them.

Cross-fitting by document. The documents are split in two halves by the verdict's seeded hash of
their names (`experiments.report.verdict.crossfit.split_documents`, as the verdict does);
the model fitted on half A routes half B's questions and the one fitted on B routes A's, so no
question is routed by a model that saw its document. The best single arm is cross-fitted the same
way (per half, the arm with the higher training utility mean d + cost_weight x mean cost difference
on the other half), so the router and the arm it is measured against had the same information.

The interval. Δ = router - best arm (points), pooled over both halves' questions. The halves are not
independent: the spurious link between features and outcomes that half A's model learned is applied
to B, and B's to A, so when both halves share one by chance Δ is high on both. An interval that holds
the routes fixed (the paired cluster bootstrap of eval.metrics.confidence on the per-question Δ) misses
that: in 60 sweeps where the features say nothing it was about 20% too narrow and excluded 0 in 15%.
So the documents are resampled within each half (each half keeps its size), both halves' models and
arms are refitted on every resample, and, as experiments/report/verdict/crossfit.py does for chosen configs
("recentred"), the estimate gets each resample's error of its own routes: their Δ on the resampled
documents minus their Δ on the observed ones. (Taking the refitted resamples' Δ as it is counts the
differences between the observed routes, themselves noise, as variation: about 30% too wide.) Each
half's error is scaled by sqrt(h / (h - 1)) (a bootstrap over h documents has (h - 1) / h of the
variance), and the standard error of the resampled Δ makes a t interval with G - 2 degrees of
freedom when documents have as many questions, corrected as the verdict's cross-fit is when they do not
(eval.metrics.confidence.split_degrees_of_freedom); nothing is clipped. The split is repeated over `splits`
partitions and averaged (experiments/report/verdict/crossfit.py says why): the routes shown are those
of the first partition (the report's seed), Δ and its interval the average over the splits.
perf/router_simulation.py and perf/small_sample_verdict.py measure how often it excludes 0 when the
features say nothing, and how often it finds a router that is truly better.

The coefficients reported are those of one fit on all questions (what would be deployed), in
standardised units: the change in predicted gain (RAG - long context, points) per standard deviation
of the feature.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from eval.metrics.confidence import ROUTER_SPLIT_NOISE_SHARE, Estimate, over_splits, split_degrees_of_freedom
from experiments.arms.router_model import LONGCTX, RAG, RidgeModel, fit_ridge, is_cue_feature, is_task_feature
from experiments.report.halves import MIN_GROUPS, split_documents
from experiments.report.router.features import SAME_EVERYWHERE, RouterFeatures
from experiments.report.verdict.oracle import corrected_oracle


@dataclass
class RouterResult:
    """The cross-fitted router against the best single arm and the oracle (means in points, 0..100)."""
    routes: dict[str, str]  # sample id -> "rag" | "longctx"
    half_of: dict[str, str]  # sample id -> "A" | "B": its document's half (routed by the other half's model)
    trained_on: dict[str, list[str]]  # half -> the documents of the model that routed that half's questions
    best_arm: dict[str, str]  # half -> the single arm chosen on the other half, that half's baseline
    router_mean: float
    best_arm_mean: float
    oracle_mean: float
    diff: float  # router - best arm (points)
    ci: tuple[float, float]  # 95% interval of diff (t, G - 2 degrees of freedom, averaged over splits)
    p_value: float
    gap_closed: float | None  # (router - best) / (by-document benchmark - best); None without its interval
    share_rag: float  # share of questions routed to RAG
    coefficients: dict[str, float]  # feature -> standardised weight (points of gain per sd), fit on all
    intercept: float  # mean gain RAG - long context (points) of the fit on all questions
    used: list[str]
    dropped: dict[str, str]
    n: int
    n_groups: int
    cost_weight: float = 0.0
    cost_unit: str | None = None
    notes: list[str] = field(default_factory=list)
    estimate: Estimate | None = None  # Δ's t distribution: the interval and the route test read it
    oracle_corrected: float | None = None  # the noise-corrected oracle (experiments.report.verdict.oracle)
    oracle_real: bool = False  # its gain over the better arm is real (its interval is above 0)
    arm_rag: dict[str, bool] = field(default_factory=dict)  # sample id -> its half's best arm is RAG (first split)
    best_by_id: dict[str, float] = field(default_factory=dict)  # sample id -> best-arm score (0..1), over the splits
    model: RidgeModel | None = None  # the fit on all questions: what a deployment runs
    gap_closed_ci: tuple[float, float] | None = None  # at least 95% (`gap_closed_interval`)

    def describe(self) -> str:
        gap = ("n/a (the by-document benchmark gains nothing real)"
               if self.gap_closed_ci is None or self.gap_closed is None
               else f"{100 * self.gap_closed:.0f}% [{100 * self.gap_closed_ci[0]:.0f}%, "
                    f"{100 * self.gap_closed_ci[1]:.0f}%]")
        weights = ", ".join(f"{k} {v:+.1f}" for k, v in self.coefficients.items()) or "none (intercept only)"
        return (f"router {self.router_mean:.1f} vs best arm {self.best_arm_mean:.1f} (oracle {self.oracle_mean:.1f}): "
                f"Δ {self.diff:+.1f} [{self.ci[0]:+.1f}, {self.ci[1]:+.1f}] over {self.n_groups} documents; "
                f"benchmark gap closed {gap}; {100 * self.share_rag:.0f}% routed to RAG; weights: {weights}")


def _kinds(features: RouterFeatures) -> dict[str, str]:
    """Each question's kind for the noise-corrected oracle: its task and the wording cues it has (the
    indicator features), so a question-level signal the router may read is one the oracle can see too."""
    cols = [j for j, name in enumerate(features.used) if is_task_feature(name) or is_cue_feature(name)]
    return {i: "|".join([features.kinds.get(i, "")] + [str(int(features.X[k, j])) for j in cols])
            for k, i in enumerate(features.ids)}


def _utility_offset(features: RouterFeatures, cost_weight: float) -> np.ndarray:
    """cost_weight x (cost_lc - cost_rag) per question (0 without a cost weight)."""
    if not cost_weight:
        return np.zeros(features.n)
    if features.cost_lc is None or features.cost_rag is None:
        raise ValueError("cost_weight needs a cost (cost_usd or prompt_tokens) on every paired record")
    return cost_weight * (features.cost_lc - features.cost_rag)


SCREEN_T = 2.0  # a feature enters the ridge when its link to the gain has |t| at least this (the strongest always)


def screened(X: np.ndarray, d: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Which columns enter the model: those whose weighted correlation with the gain d has |t| >= SCREEN_T
    on these questions, and the strongest one whatever its t (a column constant here never)."""
    k = X.shape[1]
    w = np.ones(len(d)) if weights is None else weights
    total = float(w.sum())
    if not k or total <= 2:
        return np.zeros(k, dtype=bool)
    xc = X - (w @ X) / total
    dc = d - float(w @ d) / total
    cov, var_x, var_d = (w * dc) @ xc, w @ xc ** 2, float(w @ dc ** 2)
    ok = (var_x > 0) & (var_d > 0)
    r = np.where(ok, cov / np.sqrt(np.where(ok, var_x * var_d, 1.0)), 0.0)
    t = np.abs(r) * np.sqrt((total - 2) / np.maximum(1e-12, 1 - r ** 2))
    keep = ok & (t >= SCREEN_T)
    if ok.any():
        keep[int(np.argmax(np.where(ok, t, -1.0)))] = True
    return keep


def fit_router(X: np.ndarray, d: np.ndarray, names: list[str], ridge: float,
               weights: np.ndarray | None = None) -> RidgeModel:
    """The router's model: the ridge (experiments.arms.router_model.fit_ridge) on the screened columns
    (`screened`), the others at weight 0."""
    keep = screened(X, d, weights)
    if keep.all():
        return fit_ridge(X, d, names, ridge, weights)
    part = fit_ridge(X[:, keep], d, [n for n, k in zip(names, keep, strict=True) if k], ridge, weights)
    mean, sd, coef = np.zeros(len(names)), np.ones(len(names)), np.zeros(len(names))
    mean[keep], sd[keep], coef[keep] = part.mean, part.sd, part.weights
    return RidgeModel(list(names), mean, sd, coef, part.intercept)


def _crossfit_routes(features: RouterFeatures, d: np.ndarray, offset: np.ndarray, in_a: np.ndarray,
                     weights: np.ndarray, ridge: float) -> tuple[np.ndarray, np.ndarray, tuple[bool, bool]]:
    """(routed to RAG, best arm is RAG) per question, each half routed by the model and the arm fitted on
    the other half (questions counted `weights` times); and the arm chosen for half A's and B's questions."""
    routes_rag = np.zeros(features.n, dtype=bool)
    arm_rag = np.zeros(features.n, dtype=bool)
    chosen = []
    for train, test in ((~in_a, in_a), (in_a, ~in_a)):
        w = weights[train]
        model = fit_router(features.X[train], d[train], features.used, ridge, w)
        routes_rag[test] = model.predict(features.X[test]) + offset[test] > 0
        chose_rag = bool(w.sum() > 0 and float(w @ (d[train] + offset[train])) > 0)
        arm_rag[test] = chose_rag
        chosen.append(chose_rag)
    return routes_rag, arm_rag, (chosen[0], chosen[1])


def _resampled_diffs(features: RouterFeatures, d: np.ndarray, offset: np.ndarray, in_a: np.ndarray,
                     n_resamples: int, seed: int, ridge: float) -> np.ndarray:
    """The error of Δ router - best arm (0..1) over resamples of the documents within each half, both
    halves' models and arms refitted on every resample: per half, the refitted routes' Δ on the resampled
    documents minus their Δ on the observed ones, scaled by sqrt(h / (h - 1)), weighted by the half's
    share of the questions."""
    rng = np.random.default_rng(seed)
    halves = [sorted({g for g, a in zip(features.groups, in_a, strict=True) if a == side}) for side in (True, False)]
    index = {g: j for j, g in enumerate(halves[0] + halves[1])}
    column = np.array([index[g] for g in features.groups])
    share = [float(np.mean(in_a)), float(np.mean(~in_a))]
    factor = [np.sqrt(len(h) / (len(h) - 1)) if len(h) > 1 else 1.0 for h in halves]
    out = np.empty(n_resamples)
    for r in range(n_resamples):
        counts = np.concatenate([np.bincount(rng.integers(0, len(docs), len(docs)), minlength=len(docs))
                                 for docs in halves]).astype(float)
        w = counts[column]
        routes_rag, arm_rag, _ = _crossfit_routes(features, d, offset, in_a, w, ridge)
        delta = np.where(routes_rag, features.s_rag, features.s_lc) - np.where(arm_rag, features.s_rag, features.s_lc)
        err = 0.0
        for k, mask in enumerate((in_a, ~in_a)):
            wk = w[mask]
            if wk.sum() > 0:
                err += share[k] * factor[k] * (float(wk @ delta[mask] / wk.sum()) - float(delta[mask].mean()))
        out[r] = err
    return out


def _one_split(features: RouterFeatures, d: np.ndarray, offset: np.ndarray, seed: int, ridge: float,
               n_resamples: int) -> dict | None:
    """The router over one partition of the documents: routes, means and the standard error of Δ (points)."""
    half_a, half_b = split_documents(set(features.groups), seed)
    if min(len(half_a), len(half_b)) < MIN_GROUPS:
        return None
    in_a = np.array([g in half_a for g in features.groups])
    routes_rag, arm_rag, chosen = _crossfit_routes(features, d, offset, in_a, np.ones(features.n), ridge)
    router = np.where(routes_rag, features.s_rag, features.s_lc)
    best = np.where(arm_rag, features.s_rag, features.s_lc)
    errors = 100 * _resampled_diffs(features, d, offset, in_a, n_resamples, seed, ridge)
    return {"half_a": half_a, "half_b": half_b, "in_a": in_a, "routes_rag": routes_rag, "arm_rag": arm_rag,
            "chosen": chosen, "router": 100 * float(router.mean()), "best": 100 * float(best.mean()), "best_q": best,
            "se": float(np.std(errors, ddof=1)) if errors.size > 1 else 0.0}


def half_models(features: RouterFeatures, seed: int = 0, ridge: float = 1.0) -> dict[str, RidgeModel]:
    """The two cross-fitted models `route` uses: {"A": the model that routes half A's questions (fitted on
    half B's documents), "B": the other}; what perf/router_live_check.py deploys to reproduce `route`'s
    routes with the live arm."""
    half_a, _ = split_documents(set(features.groups), seed)
    in_a = np.array([g in half_a for g in features.groups])
    d = features.s_rag - features.s_lc
    return {"A": fit_router(features.X[~in_a], d[~in_a], features.used, ridge),
            "B": fit_router(features.X[in_a], d[in_a], features.used, ridge)}


def gap_closed_interval(router: Estimate | None, benchmark: Estimate | None) -> tuple[float, float] | None:
    """An interval of (router - best arm) / (by-document benchmark - best arm) that holds at least 95%: each
    difference's 97.5% interval (Bonferroni: both hold together at least 95% of the time), and the ratio's
    extremes over them. None unless the benchmark's 97.5% interval lies above 0 (nothing to close)."""
    if router is None or benchmark is None:
        return None
    (a, b), (c, d) = router.interval(0.975), benchmark.interval(0.975)
    if c <= 0:
        return None
    return min(a / c, a / d), max(b / c, b / d)


def route(features: RouterFeatures, seed: int = 0, cost_weight: float = 0.0, ridge: float = 1.0,
          n_resamples: int = 1000, splits: int = 1) -> RouterResult | None:
    """Cross-fit the router over the documents' two halves, over `splits` partitions (seeds seed, seed + 1,
    ...; `n_resamples` in all, at least 50 each), and measure it (None when a half has fewer than
    MIN_GROUPS documents: no honest split). `cost_weight`: score (0..1) per unit of cost
    (`features.cost_unit`) that one would trade; 0 routes on the score alone."""
    d = features.s_rag - features.s_lc
    offset = _utility_offset(features, cost_weight)
    per_split = max(50, n_resamples // max(1, splits))
    tried = [_one_split(features, d, offset, seed + k, ridge, per_split) for k in range(max(1, splits))]
    if tried[0] is None:
        return None
    runs = [sp for sp in tried if sp is not None]
    first = runs[0]
    n_groups = len(first["half_a"]) + len(first["half_b"])
    pooled = 100 * (np.where(first["routes_rag"], features.s_rag, features.s_lc) - first["best_q"])
    df = split_degrees_of_freedom(pooled, features.groups)
    estimate = over_splits([sp["router"] - sp["best"] for sp in runs], [sp["se"] for sp in runs], df, n_groups,
                           ROUTER_SPLIT_NOISE_SHARE)
    center = estimate.value
    lo, hi = estimate.interval(0.95)
    router_mean, best_mean = float(np.mean([sp["router"] for sp in runs])), float(np.mean([sp["best"] for sp in runs]))
    best_q = np.mean([sp["best_q"] for sp in runs], axis=0)  # each question's best-arm score, averaged over splits
    oracle_mean = 100 * float(np.maximum(features.s_rag, features.s_lc).mean())
    corrected = corrected_oracle(dict(zip(features.ids, features.s_rag, strict=True)),
                                 dict(zip(features.ids, features.s_lc, strict=True)),
                                 dict(zip(features.ids, features.groups, strict=True)), _kinds(features))
    real = corrected is not None and corrected.real
    excess = corrected.excess if corrected else None
    gap_ci = gap_closed_interval(estimate, excess)
    gap = excess.value if gap_ci is not None and excess is not None else 0.0  # the benchmark's gain over the better arm
    full = fit_router(features.X, d, features.used, ridge)
    notes = _fit_notes(features, d)
    in_a, routes_rag, arm_rag, chosen = first["in_a"], first["routes_rag"], first["arm_rag"], first["chosen"]
    return RouterResult(
        routes={i: RAG if r else LONGCTX for i, r in zip(features.ids, routes_rag, strict=True)},
        half_of={i: "A" if a else "B" for i, a in zip(features.ids, in_a, strict=True)},
        trained_on={"A": sorted(first["half_b"]), "B": sorted(first["half_a"])},
        best_arm={"A": RAG if chosen[0] else LONGCTX, "B": RAG if chosen[1] else LONGCTX},
        router_mean=router_mean, best_arm_mean=best_mean, oracle_mean=oracle_mean,
        diff=center, ci=(float(lo), float(hi)), p_value=estimate.p_two_sided(0.0),
        gap_closed=center / gap if gap > 1e-9 else None,
        share_rag=float(routes_rag.mean()),
        coefficients={k: 100 * float(w) for k, w in zip(full.names, full.weights, strict=True)},
        intercept=100 * full.intercept, used=list(features.used), dropped=dict(features.dropped),
        n=features.n, n_groups=n_groups, cost_weight=cost_weight, cost_unit=features.cost_unit, notes=notes,
        estimate=estimate, oracle_corrected=corrected.score if corrected else None, oracle_real=real, model=full,
        gap_closed_ci=gap_ci,
        arm_rag={i: bool(a) for i, a in zip(features.ids, arm_rag, strict=True)},
        best_by_id={i: float(b) for i, b in zip(features.ids, best_q, strict=True)})


def _fit_notes(features: RouterFeatures, d: np.ndarray) -> list[str]:
    """The features the router could not use, and those the screen left out of the deployed fit."""
    notes = [f"{k} dropped: {v}" for k, v in features.dropped.items()
             if not (is_task_feature(k) and v == SAME_EVERYWHERE)]  # one question type: nothing to say
    left_out = [name for name, kept in zip(features.used, screened(features.X, d), strict=True) if not kept]
    if left_out:
        notes.append(f"left out of the deployed fit by the screen (|t| < {SCREEN_T:g} on all questions): "
                     + ", ".join(left_out))
    return notes
