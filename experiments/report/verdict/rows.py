"""The verdict: per benchmark and length level, the best long-context config against the cheapest
RAG config that holds up, with a decision read from a document-level interval.

Selection is honest: no sample is scored by a choice made on it, and every document counts.
- When each arm has one candidate config there is nothing to choose: all samples are reported on
  (`selection` = "single config per arm").
- Otherwise the choice is cross-fitted (experiments.report.verdict.crossfit, whose docstring says why): the
  documents (`group` of each record; a sample without one is its own) are split in two halves by a
  seeded hash of their names (`split_documents`, the same halves for every config, whatever their
  scores); on each half the best long context (highest score; ties: fewer prompt tokens) and the
  cheapest RAG config whose score is at least the best RAG config's minus the tolerance are chosen
  and scored on the OTHER half's samples; the paired per-sample differences of both
  halves are pooled into one difference over all documents, with a paired cluster-bootstrap 95%
  interval that resamples documents within each half and repeats both choices in every resample
  (each chosen pair's resampled deviation from its own mean added to the estimate).
  The configs the row names (and its token, latency and cost ratios) are the choice on all documents,
  what a team would deploy; `selection` says whether both halves chose them too, and the scores are
  the cross-fitted ones (the halves' choices on the documents they were not chosen on).
- With fewer than `MIN_GROUPS` documents in a half there is no honest split: the configs are
  chosen on the samples reported on, the row says so (`selection` = "naive ..."), and its decision
  is at most `inconclusive`.

The difference is RAG minus long context in points (x100); with one config per arm its interval is
eval.metrics.confidence.cluster_t (t with G - 1 degrees of freedom and the cluster-robust standard
error over documents); cross-fitted, the mean over `splits` partitions with t and G - 2 degrees of
freedom. Below MIN_DOCUMENTS documents a row decides nothing, whichever path. The decision follows
`experiments.report.verdict.decision.decide`, and with several rows Holm's procedure keeps the chance of
any wrong decision at 5% (experiments.report.verdict.family). The same-sample ("naive") best configs of
all samples are kept beside it (`best_rag_config`, `naive_*`), labelled as not selection-adjusted.
Ratios are RAG / long context of mean prompt tokens, mean latency and cost per answer. The oracle
router is the per-sample better of the best long-context and the best RAG config.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from eval.metrics.confidence import Estimate, cluster_t
from experiments.arms import ROLE_LONGCTX, ROLE_RAG
from experiments.report.verdict.crossfit import Candidates, repeated_crossfit
from experiments.report.verdict.decision import (INCONCLUSIVE, LONGCTX, MIN_DOCUMENTS, NO_DECISION, RAG, ROUTE,
                                                 Decision, decide)
from experiments.report.verdict.oracle import OracleResult, oracle_router
from experiments.report.pricing import Pricing, deployment_cost
from experiments.report.settings import ReportSettings
from experiments.report.runs import Run

ALL = "all"
SMALL_SAMPLE = 12  # fewer documents than this: the sentence says a decision rests on few documents
NOISE_FLOOR = 0.10  # measured (time-priced) costs closer than this share are ties: a shared machine drifts more


@dataclass
class VerdictRow:
    benchmark: str
    level: str
    lc: Run | None = None
    lc_score: float | None = None
    rag: Run | None = None  # the cheapest RAG config within tolerance of the best RAG config
    rag_score: float | None = None
    within_tolerance: bool = False
    best_rag: Run | None = None
    best_rag_score: float | None = None
    n_shared: int = 0
    diff: float | None = None  # RAG - long context, points
    ci: tuple[float, float] | None = None
    p_value: float | None = None
    token_ratio: float | None = None
    latency_ratio: float | None = None
    cost_ratio: float | None = None
    oracle: OracleResult | None = None
    decision: Decision | None = None
    selection: str = ""  # how the configs were chosen
    configs_compared: int = 0  # long-context plus RAG candidate configs
    n_groups: int = 0  # documents the interval resamples
    naive_lc: Run | None = None  # the same-sample picks on all samples (not selection-adjusted)
    naive_rag: Run | None = None
    naive_diff: float | None = None
    correct_shares: tuple[float, float] | None = None  # (RAG, long context) share answered correctly
    recommendation: str = ""
    halves_agree: bool | None = None  # cross-fitted: the halves chose the configs shown in most splits
    halves_agreement: float | None = None  # cross-fitted: share of the splits whose two halves chose them
    estimate: Estimate | None = None  # the difference's t distribution: interval and claim p-values
    ci_family: tuple[float, float] | None = None  # the interval at the family-adjusted level (family.py)
    ci_family_confidence: float | None = None  # its confidence: the level the decision was tested at
    candidates: Candidates | None = None  # every config of both arms at this level: what the plan simulates
    pooled: list[tuple[str, float]] | None = None  # (document, RAG - long context in points) per pooled sample
    tested: bool = False  # the row's decision is one of the report's family of tests
    p_decision: float | None = None  # p-value of the boundary test of the row's decision (report.verdict.family)
    p_holm: float | None = None  # the same, Holm-adjusted over the family
    family_size: int = 0  # decisions in the family
    router: Any = None  # experiments.report.router.evaluate.RouterRow: the learned router over this row's configs
    arm_decision: Decision | None = None  # a row decided `route`: the decision between the single arms

    @property
    def rag_cheaper(self) -> bool | None:
        """As the decision reads it: the cost ratio, else the prompt-token ratio (None: unknown)."""
        cheaper = self.cost_ratio if self.cost_ratio is not None else self.token_ratio
        return None if cheaper is None else cheaper < 1

    @property
    def known_correct_shares(self) -> tuple[float, float] | None:
        """(RAG, long context) shares answered correctly, when both are known."""
        return self.correct_shares if self.correct_shares and None not in self.correct_shares else None

    @property
    def naive_picks_matter(self) -> bool:
        """The same-sample picks say something beside the verdict: both exist and more than two configs
        were compared (with one config per arm they are the verdict's own)."""
        return self.naive_lc is not None and self.naive_rag is not None and self.configs_compared > 2

    def router_csv(self) -> dict[str, Any]:
        """The learned router's columns of verdict.csv (empty without one)."""
        rr = self.router
        r = rr.result if rr is not None else None
        return {"arm_decision": self.arm_decision.kind if self.arm_decision else "",
                "router_features": rr.features_kind if rr else "", "router_score": _r(r.router_mean) if r else None,
                "router_best_arm_score": _r(r.best_arm_mean) if r else None,
                "router_oracle_score": _r(r.oracle_mean) if r else None,
                "router_diff": _r(r.diff) if r else None, "router_ci95_low": _r(r.ci[0]) if r else None,
                "router_ci95_high": _r(r.ci[1]) if r else None,
                "router_gap_closed": _r(r.gap_closed, 4) if r and r.gap_closed_ci is not None else None,
                "router_gap_closed_low": _r(r.gap_closed_ci[0], 4) if r and r.gap_closed_ci else None,
                "router_gap_closed_high": _r(r.gap_closed_ci[1], 4) if r and r.gap_closed_ci else None,
                "router_share_rag": _r(r.share_rag, 4) if r else None,
                "router_p_holm": _r(rr.p_route_holm, 4) if rr and rr.p_route_holm is not None else None,
                "router_file": rr.file.name if rr and rr.file else ""}

    def as_csv(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark, "level": self.level,
            "longctx_config": self.lc.label if self.lc else "", "longctx_score": _r(self.lc_score),
            "rag_config": self.rag.label if self.rag else "", "rag_score": _r(self.rag_score),
            "rag_within_tolerance": self.within_tolerance, "n_shared": self.n_shared,
            "diff_rag_minus_longctx": _r(self.diff), "ci95_low": _r(self.ci[0]) if self.ci else None,
            "ci95_high": _r(self.ci[1]) if self.ci else None, "p_value": _r(self.p_value, 4),
            "prompt_token_ratio": _r(self.token_ratio, 4), "latency_ratio": _r(self.latency_ratio, 4),
            "cost_ratio": _r(self.cost_ratio, 4),
            "best_rag_config": self.best_rag.label if self.best_rag else "", "best_rag_score": _r(self.best_rag_score),
            "oracle_router_score": _r(self.oracle.score) if self.oracle else None,
            "oracle_router_share_rag": _r(self.oracle.share_first, 4) if self.oracle else None,
            "decision": self.decision.kind if self.decision else "",
            "selection": self.selection, "configs_compared": self.configs_compared, "n_groups": self.n_groups,
            "naive_longctx_config": self.naive_lc.label if self.naive_lc else "",
            "naive_rag_config": self.naive_rag.label if self.naive_rag else "",
            "naive_diff_rag_minus_longctx": _r(self.naive_diff),
            "rag_share_correct": _r(self.correct_shares[0], 4) if self.correct_shares else None,
            "longctx_share_correct": _r(self.correct_shares[1], 4) if self.correct_shares else None,
            "oracle_router_share_tie": _r(self.oracle.share_tie, 4) if self.oracle else None,
            **self.router_csv(),
            "halves_agree": "" if self.halves_agree is None else self.halves_agree,
            "halves_agreement": _r(self.halves_agreement, 4),
            "ci_family_low": _r(self.ci_family[0]) if self.ci_family else None,
            "ci_family_high": _r(self.ci_family[1]) if self.ci_family else None,
            "ci_family_confidence": _r(self.ci_family_confidence, 5),
            "oracle_corrected_score": (_r(self.oracle.corrected.score) if self.oracle and self.oracle.corrected
                                       else None),
            "oracle_gain_real": bool(self.oracle and self.oracle.corrected and self.oracle.corrected.real),
            "p_decision": _r(self.p_decision, 4), "p_holm": _r(self.p_holm, 4), "family_size": self.family_size,
            "recommendation": self.recommendation,
        }


def _r(v: float | None, digits: int = 2) -> float | None:
    return None if v is None else round(float(v), digits)


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b not in (None, 0) else None


def longctx_candidates(runs: list[Run]) -> list[Run]:
    return [r for r in runs if r.spec.role == ROLE_LONGCTX and not r.budget_matched and r.scores()]


def rag_candidates(runs: list[Run]) -> list[Run]:
    return [r for r in runs if r.spec.role == ROLE_RAG and not r.upper_bound and r.scores()]


def oracle_runs(runs: list[Run]) -> list[Run]:
    """RAG runs that read the gold evidence (retriever=oracle): retrieval's upper bound."""
    return [r for r in runs if r.spec.role == ROLE_RAG and r.upper_bound and r.scores()]


def _groups_of(runs: list[Run], level: str | None) -> dict[str, str]:
    """Sample id -> its document (`group`; the id itself when the record has none)."""
    out: dict[str, str] = {}
    for run in runs:
        for r in run.records_at(level):
            out.setdefault(str(r["id"]), str(r.get("group") or f"sample:{r['id']}"))
    return out


def _mean_over(run: Run, level: str | None, ids: set[str] | None) -> float | None:
    s = run.scores(level)
    vals = [v for i, v in s.items() if ids is None or i in ids]
    return 100 * sum(vals) / len(vals) if vals else None


def _best(runs: list[Run], level: str | None, ids: set[str] | None = None) -> tuple[Run | None, float | None]:
    scored = [(_mean_over(r, level, ids), r) for r in runs]
    scored = [(s, r) for s, r in scored if s is not None]
    if not scored:
        return None, None
    s, r = max(scored, key=lambda sr: (round(sr[0], 9), -(sr[1].mean_of("prompt_tokens", level) or 0)))
    return r, s


def _choose(lcs: list[Run], rags: list[Run], table: Candidates | None,
            level: str | None) -> tuple[Run | None, Run | None, bool]:
    """(long context, RAG, RAG within tolerance) chosen on all samples, by the cross-fit's own rule
    (`Candidates.choose`): the best long context, and the cheapest RAG config within the tolerance of the best RAG
    config (costs inside their measurement's noise count as equal: the better score wins); the third value: the
    RAG config is within the tolerance of long context."""
    if table is None:
        return _best(lcs, level)[0], _best(rags, level)[0], False
    n = len(table.documents)
    lc, rag, within = (int(x[0]) for x in table.choose(np.arange(n), np.ones((1, n))))
    return (lcs[lc] if lc >= 0 else None), (rags[rag] if rag >= 0 else None), bool(within)


def _paired(a_run: Run, b_run: Run, level: str | None, ids: set[str] | None,
            groups: dict[str, str]) -> tuple[list[str], Estimate | None]:
    """The shared sample ids of two runs and the estimate of mean(a) - mean(b) in points over them
    (eval.metrics.confidence.cluster_t over documents; None with fewer than 2 documents)."""
    a, b = a_run.scores(level), b_run.scores(level)
    shared = sorted(i for i in set(a) & set(b) if ids is None or i in ids)
    if not shared:
        return shared, None
    return shared, cluster_t([100 * (a[i] - b[i]) for i in shared], [groups.get(i, i) for i in shared], unit=100.0)


def _share_correct(run: Run, level: str | None, ids: list[str], threshold: float) -> float | None:
    s = run.scores(level)
    vals = [s[i] >= threshold - 1e-12 for i in ids if i in s]
    return sum(vals) / len(vals) if vals else None


def _candidates(lcs: list[Run], rags: list[Run], level: str | None, groups: dict[str, str], pricing: Pricing,
                settings: ReportSettings) -> Candidates:
    """The selection's inputs: each config's scores, prompt tokens, (RAG) cost key and which RAG configs are
    dearer than others beyond the cost's noise (`costlier`)."""
    tokens = lambda r: r.mean_of("prompt_tokens", level) or 0.0  # noqa: E731

    def cost_key(r: Run) -> tuple[float, float]:
        c = deployment_cost(r, pricing, settings, level)
        return (c if c is not None else tokens(r), tokens(r))

    keys = [cost_key(r) for r in rags]
    return Candidates([r.scores(level) for r in lcs], [r.scores(level) for r in rags], [tokens(r) for r in lcs],
                      [tokens(r) for r in rags], keys, groups, sorted(set(groups.values())), settings.tolerance,
                      costlier=_costlier(rags, keys, level, groups, pricing))


def _costlier(rags: list[Run], keys: list[tuple[float, float]], level: str | None, groups: dict[str, str],
              pricing: Pricing) -> np.ndarray:
    """costlier[i, j]: RAG config i costs more than config j beyond the measurement's noise.

    A price per token is exact: any gap counts. A cost from measured time (an hourly price) is noisy on a
    shared machine: the gap counts only when the paired per-question costs (same questions) differ by more
    than twice their cluster-robust standard error and by more than NOISE_FLOOR of the cheaper one; closer
    configs are equally cheap, and the choice takes the better-scoring of them."""
    n = len(rags)
    costlier = np.array([[keys[i] > keys[j] for j in range(n)] for i in range(n)], dtype=bool).reshape(n, n)
    if not pricing.time_priced():
        return costlier
    costs = [{str(r["id"]): c for r in run.answered(level) if (c := pricing.answer_cost(r)) is not None}
             for run in rags]
    for i in range(n):
        for j in range(n):
            if not costlier[i, j]:
                continue
            shared = sorted(set(costs[i]) & set(costs[j]))
            est = cluster_t([costs[i][q] - costs[j][q] for q in shared], [groups.get(q, q) for q in shared])
            cheaper = keys[j][0]
            costlier[i, j] = est is not None and est.value > max(2 * est.se, NOISE_FLOOR * abs(cheaper))
    return costlier


def _crossfit_row(row: VerdictRow, lcs: list[Run], rags: list[Run], lvl: str | None,
                  settings: ReportSettings) -> bool:
    """Choose on each half of the documents and score on the other, over `settings.splits` partitions
    (experiments.report.verdict.crossfit); the configs shown are the choice on all documents. False when the
    documents are too few to split."""
    table = row.candidates
    row.lc, row.rag, row.within_tolerance = _choose(lcs, rags, table, lvl)
    lc_pick, rag_pick = lcs.index(row.lc), rags.index(row.rag)
    per_split = max(200, settings.resamples // settings.splits)
    rep = repeated_crossfit(table, settings.splits, per_split, settings.seed)
    if rep is None:
        return False
    fit = rep.first
    agreement = rep.agreement(lc_pick, rag_pick)
    (lc_a, rag_a, _), (lc_b, rag_b, _) = fit.choices
    chose = (f"in {round(agreement * len(rep.fits))} of {len(rep.fits)} splits both halves chose the configs shown "
             "(the choice on all documents)")
    if not fit.halves_agree(lc_pick, rag_pick):
        chose += (f"; in the first, half A chose {lcs[lc_a].label} | {rags[rag_a].label}, half B {lcs[lc_b].label} | "
                  f"{rags[rag_b].label}")
    half_a = len(table.documents) // 2
    row.selection = (f"cross-fitted by document over {len(rep.fits)} splits (seeds {settings.seed}-"
                     f"{settings.seed + len(rep.fits) - 1}, averaged): {row.configs_compared} configs chosen "
                     f"on each half (about {half_a} documents) and scored on the other; {chose}")
    row.halves_agreement, row.halves_agree = agreement, agreement >= 0.5
    row.lc_score = 100 * float(np.mean([s[3] for s in fit.samples]))
    row.rag_score = 100 * float(np.mean([s[2] for s in fit.samples]))
    row.n_shared, row.n_groups = len(fit.samples), rep.estimate.n_groups
    _set_estimate(row, rep.estimate)
    row.pooled = [(s[1], 100 * (s[2] - s[3])) for s in fit.samples]
    threshold = settings.correct_threshold - 1e-12
    row.correct_shares = (float(np.mean([s[2] >= threshold for s in fit.samples])),
                          float(np.mean([s[3] >= threshold for s in fit.samples])))
    return True


def _set_estimate(row: VerdictRow, estimate: Estimate | None) -> None:
    row.estimate = estimate
    if estimate is not None:
        row.diff, row.ci, row.p_value = estimate.value, estimate.interval(0.95), estimate.p_two_sided(0.0)


def _fixed_pair_row(row: VerdictRow, lvl: str | None, groups: dict[str, str], settings: ReportSettings) -> None:
    """One config per arm (nothing chosen), or too few documents to split (chosen on all): all samples."""
    a, b = row.rag.scores(lvl), row.lc.scores(lvl)
    shared, estimate = _paired(row.rag, row.lc, lvl, None, groups)
    row.lc_score, row.rag_score = _mean_over(row.lc, lvl, None), _mean_over(row.rag, lvl, None)
    row.n_shared = len(shared)
    if not shared:
        return
    docs = [groups.get(i, i) for i in shared]
    row.n_groups = len(set(docs))
    if estimate is None:  # one document: its mean, no interval
        row.diff = 100 * float(np.mean([a[i] - b[i] for i in shared]))
    _set_estimate(row, estimate)
    row.pooled = [(d, 100 * (a[i] - b[i])) for i, d in zip(shared, docs)]
    row.correct_shares = (_share_correct(row.rag, lvl, shared, settings.correct_threshold),
                          _share_correct(row.lc, lvl, shared, settings.correct_threshold))


def row_decision(estimate: Estimate | None, n_groups: int, naive: bool, rag_cheaper: bool | None,
                 correct_shares: tuple[float, float] | None, settings: ReportSettings) -> tuple[Decision, bool]:
    """(the decision a row's own interval makes, whether it joins the report's family): `decide`, then the
    rules that withhold a decision whatever the interval says: configs chosen on the samples reported on
    (`naive`), and fewer than MIN_DOCUMENTS documents. perf/small_sample_verdict.py calls it as the report does."""
    decision = decide(estimate, settings.tolerance, rag_cheaper, correct_shares, settings.floor_share)
    if naive and decision.kind not in (INCONCLUSIVE, NO_DECISION):
        decision = Decision(INCONCLUSIVE, f"the interval would say {decision.kind}, but the configs were "
                                          "chosen on the same samples (too few documents to split)")
    few = n_groups < MIN_DOCUMENTS
    if few and decision.kind not in (INCONCLUSIVE, NO_DECISION):
        decision = Decision(INCONCLUSIVE, f"the interval would say {decision.kind}, but {n_groups} document(s) are "
                                          f"fewer than the {MIN_DOCUMENTS} a decision needs: questions about one "
                                          "document rise and fall together, so few documents say little about "
                                          "others; add documents")
    return decision, not naive and not few and estimate is not None and decision.kind != NO_DECISION


def verdict_row(benchmark: str, level: str, runs: list[Run], pricing: Pricing, settings: ReportSettings) -> VerdictRow:
    """The row of one benchmark and level: its configs, difference, interval and the decision its interval
    alone makes (the family's correction and the router come after, experiments.report.decisions)."""
    lvl = None if level == ALL else level
    row = VerdictRow(benchmark, level)
    lcs, rags = longctx_candidates(runs), rag_candidates(runs)
    row.configs_compared = len(lcs) + len(rags)
    row.best_rag, row.best_rag_score = _best(rags, lvl)
    if not lcs or not rags:
        row.lc, row.lc_score = _best(lcs, lvl)
        row.rag, row.rag_score = row.best_rag, row.best_rag_score
        row.recommendation = recommend(row, settings)
        return row
    groups = _groups_of(lcs + rags, lvl)
    row.candidates = _candidates(lcs, rags, lvl, groups, pricing, settings)
    row.naive_lc, row.naive_rag, _ = _choose(lcs, rags, row.candidates, lvl)
    naive = False
    if len(lcs) == 1 and len(rags) == 1:
        row.lc, row.rag, row.within_tolerance = _choose(lcs, rags, row.candidates, lvl)
        row.selection = "single config per arm (nothing chosen): all samples"
        _fixed_pair_row(row, lvl, groups, settings)
    elif not _crossfit_row(row, lcs, rags, lvl, settings):
        naive = True
        row.lc, row.rag, row.within_tolerance = _choose(lcs, rags, row.candidates, lvl)
        row.selection = (f"naive: {len(set(groups.values()))} documents are too few to split, "
                         f"so the {row.configs_compared} configs were chosen on the samples reported on")
        _fixed_pair_row(row, lvl, groups, settings)
    if row.naive_lc is not None and row.naive_rag is not None:
        _, naive_est = _paired(row.naive_rag, row.naive_lc, lvl, None, groups)
        row.naive_diff = naive_est.value if naive_est is not None else None
    row.token_ratio = _ratio(row.rag.mean_of("prompt_tokens", lvl), row.lc.mean_of("prompt_tokens", lvl))
    row.latency_ratio = _ratio(row.rag.mean_of("latency_s", lvl), row.lc.mean_of("latency_s", lvl))
    row.cost_ratio = _ratio(deployment_cost(row.rag, pricing, settings, lvl),
                            deployment_cost(row.lc, pricing, settings, lvl))
    row.oracle = oracle_router(row.best_rag, row.lc, lvl)
    row.decision, row.tested = row_decision(row.estimate, row.n_groups, naive, row.rag_cheaper,
                                            row.known_correct_shares, settings)
    row.recommendation = recommend(row, settings)
    return row


def _times(ratio: float) -> str:
    return f"{1 / ratio:.1f}x fewer" if ratio < 1 else f"{ratio:.1f}x more"


def recommend(row: VerdictRow, settings: ReportSettings) -> str:
    """One sentence a team can act on; it follows the row's decision."""
    if row.lc is None and row.rag is None:
        return "No long-context or RAG run with scores for this benchmark and level."
    if row.lc is None:
        return f"No long-context run to compare with; the best RAG config is {row.rag.label} ({row.rag_score:.1f})."
    if row.rag is None:
        return f"No scored RAG run to compare with; long context ({row.lc.label}) scores {row.lc_score:.1f}."
    ci = _interval_words(row)
    diff = f"{row.diff:+.1f} points" if row.diff is not None else "no difference measured"
    tokens = f"{_times(row.token_ratio)} prompt tokens" if row.token_ratio else "unknown prompt tokens"
    cost = f", {row.cost_ratio:.2f}x the cost" if row.cost_ratio is not None else ""
    decision = row.decision or Decision(INCONCLUSIVE, "no interval")
    if decision.kind == RAG:
        text = f"Use RAG ({row.rag.label}): {decision.why}; RAG - long context = {diff} ({ci}), {tokens}{cost}."
    elif decision.kind == LONGCTX:
        text = (f"Use long context ({row.lc.label}): {decision.why}; RAG ({row.rag.label}) - long context = "
                f"{diff} ({ci}).")
    elif decision.kind == NO_DECISION:
        text = (f"No decision: {decision.why}. RAG ({row.rag.label}) - long context ({row.lc.label}) = {diff} "
                f"over {row.n_groups} documents with both arms at the {decision.bound or 'floor or ceiling'}: "
                "no interval says anything there.")
    elif decision.kind == ROUTE:
        arm = row.arm_decision.kind if row.arm_decision else INCONCLUSIVE
        text = (f"Route each question between RAG ({row.rag.label}) and long context ({row.lc.label}): {decision.why}. "
                f"Between the single arms alone the decision is {arm}: RAG - long context = {diff} ({ci}).")
    else:
        text = (f"Inconclusive: {decision.why}. RAG ({row.rag.label}) - long context ({row.lc.label}) = {diff} "
                f"({ci}), {tokens}{cost}.")
    if 0 < row.n_groups < SMALL_SAMPLE and decision.kind in (RAG, LONGCTX):
        text += (f" It rests on {row.n_groups} documents: settled at the 5% level, but a team with other documents "
                 "should check a few of theirs.")
    corrected = row.oracle.corrected if row.oracle else None
    if corrected is not None and corrected.real and corrected.excess.value > settings.tolerance:
        lo = corrected.excess.interval(0.95)[0]
        text += (f" Routing by document could gain: answering each question with the arm that did better on the "
                 f"other questions of its document reaches {corrected.score:.1f}, {corrected.excess.value:+.1f} "
                 f"(at least {lo:+.1f}) over the better single arm.")
    target = settings.latency_target_s
    lc_lat, rag_lat = row.lc.mean_of("latency_s", _lvl(row)), row.rag.mean_of("latency_s", _lvl(row))
    if target is not None and lc_lat is not None and rag_lat is not None:
        if lc_lat > target >= rag_lat:
            text += f" Only RAG meets the {target:g} s latency target."
        elif rag_lat > target >= lc_lat:
            text += f" Only long context meets the {target:g} s latency target."
    return text


def _interval_words(row: VerdictRow) -> str:
    """The interval the sentence quotes: the one the decision was tested at, with its confidence (the first
    screen's), else the nominal 95% one of a row that decides nothing, said so."""
    if not row.ci:
        return "no shared samples"
    if row.ci_family is not None and row.ci_family_confidence:
        lo, hi = row.ci_family
        level = f"{100 * row.ci_family_confidence:.1f}".rstrip("0").rstrip(".")
        return f"{level}% CI [{lo:+.1f}, {hi:+.1f}] over {row.n_groups} documents"
    return f"nominal 95% CI [{row.ci[0]:+.1f}, {row.ci[1]:+.1f}] over {row.n_groups} documents, untested"


def _lvl(row: VerdictRow) -> str | None:
    return None if row.level == ALL else row.level


@dataclass
class BudgetPair:
    """A RAG config and long context cut to the same token budget: "better text" vs "less text"."""
    benchmark: str
    budget: int
    rag: Run
    rag_score: float
    budget_lc: Run
    budget_lc_score: float
    full_lc_score: float | None
    n_shared: int
    diff: float | None  # RAG - budget-matched long context, points
    ci: tuple[float, float] | None


def budget_pairs(runs: list[Run], settings: ReportSettings) -> list[BudgetPair]:
    """Each budget-matched long-context run against the best RAG config with that budget
    (the token budget its spec states: top_k x chunk_size, or the RAG arm's own)."""
    pairs = []
    for bench in sorted({r.scope for r in runs}):
        mine = [r for r in runs if r.scope == bench]
        full, full_score = _best(longctx_candidates(mine), None)
        for blc in sorted((r for r in mine if r.budget_matched and r.scores()), key=lambda r: r.token_budget or 0):
            budget = blc.token_budget
            same = [r for r in rag_candidates(mine) if r.token_budget == budget]
            rag, rag_score = _best(same, None)
            if rag is None:
                continue
            shared, est = _paired(rag, blc, None, None, _groups_of([rag, blc], None))
            diff = ci = None
            if est is not None:
                diff, ci = est.value, est.interval(0.95)
            pairs.append(BudgetPair(bench, budget, rag, rag_score, blc, blc.score_at(), full_score, len(shared),
                                    diff, ci))
    return pairs


def oracle_rows(rows: list[VerdictRow]) -> list[VerdictRow]:
    """The rows whose oracle router is listed beside the configs: each benchmark's row over all levels, or
    its only row."""
    return [v for v in rows if v.oracle and (v.level == ALL or sum(x.benchmark == v.benchmark for x in rows) == 1)]


def overall_row(rows: list[VerdictRow], benchmark: str) -> VerdictRow | None:
    """A benchmark's row over all levels, else its first row."""
    mine = [v for v in rows if v.benchmark == benchmark]
    return next((v for v in mine if v.level == ALL), mine[0] if mine else None)
