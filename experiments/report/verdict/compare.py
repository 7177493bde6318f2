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
  what a team would deploy; `selection` says whether both halves chose them too, and the scores
  (`lc_score`, `rag_score`) are the cross-fitted ones (the halves' choices on the documents they were
  not chosen on) averaged over the splits as the difference is, so that RAG - long context = the
  difference on every row; each shown config's own mean on all its samples is `lc_own_score` /
  `rag_own_score` (not selection-adjusted). With one config per arm the scores are over the shared samples.
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

import numpy as np

from eval.metrics.confidence import Estimate
from experiments.report import pricing_words
from experiments.report.pricing import Pricing
from experiments.report.runs import Run
from experiments.report.settings import ReportSettings
from experiments.report.verdict.cost_ratio import cost_ratio
from experiments.report.verdict.crossfit import Candidates, document_weights, repeated_crossfit
from experiments.report.verdict.decision import INCONCLUSIVE, MIN_DOCUMENTS, NO_DECISION, Decision, OwnDecision, decide
from experiments.report.verdict.oracle import oracle_router
from experiments.report.verdict.row import ALL, Comparison
from experiments.report.verdict.selection import (
    best_config,
    candidate_table,
    choose_pair,
    groups_of,
    longctx_candidates,
    mean_score,
    paired_difference,
    rag_candidates,
    share_correct,
)


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b not in (None, 0) else None


@dataclass(frozen=True)
class Paired:
    """What the chosen pair's samples measure (the fields of Comparison it fills): the scores on Δ's basis, the
    difference and its interval, the pooled samples and the shares answered correctly."""
    lc_score: float | None = None
    rag_score: float | None = None
    n_shared: int = 0
    n_groups: int = 0
    diff: float | None = None
    ci: tuple[float, float] | None = None
    p_value: float | None = None
    estimate: Estimate | None = None
    pooled: list[tuple[str, float]] | None = None
    correct_shares: tuple[float | None, float | None] | None = None


@dataclass(frozen=True)
class CrossFitted:
    """The cross-fit's pair: the configs chosen on all documents, how the halves chose, and what they measure."""
    lc: Run
    rag: Run
    within_tolerance: bool
    selection: str
    halves_agree: bool
    halves_agreement: float
    paired: Paired


def _crossfit(lcs: list[Run], rags: list[Run], table: Candidates, lvl: str | None, configs_compared: int,
              settings: ReportSettings) -> CrossFitted | None:
    """Choose on each half of the documents and score on the other, over `settings.splits` partitions
    (experiments.report.verdict.crossfit); the configs shown are the choice on all documents. None when the
    documents are too few to split."""
    lc, rag, within = choose_pair(lcs, rags, table, lvl)
    assert lc is not None and rag is not None  # each arm has a scored candidate: one is picked
    lc_pick, rag_pick = lcs.index(lc), rags.index(rag)
    per_split = max(200, settings.resamples // settings.splits)
    rep = repeated_crossfit(table, settings.splits, per_split, settings.seed)
    if rep is None:
        return None
    fit = rep.first
    agreement = rep.agreement(lc_pick, rag_pick)
    (lc_a, rag_a, _), (lc_b, rag_b, _) = fit.choices
    chose = (f"in {round(agreement * len(rep.fits))} of {len(rep.fits)} splits both halves chose the configs shown "
             "(the choice on all documents)")
    if not fit.halves_agree(lc_pick, rag_pick):
        chose += (f"; in the first, half A chose {lcs[lc_a].label} | {rags[rag_a].label}, half B {lcs[lc_b].label} | "
                  f"{rags[rag_b].label}")
    half_a = len(table.documents) // 2
    selection = (f"cross-fitted by document over {len(rep.fits)} splits (seeds {settings.seed}-"
                 f"{settings.seed + len(rep.fits) - 1}, averaged): {configs_compared} configs chosen "
                 f"on each half (about {half_a} documents) and scored on the other; {chose}")
    # each split's pooled means (over documents' means with weight: document), averaged as Δ is: RAG - long context
    # = Δ on every row
    def pooled_mean(samples: list, k: int) -> float:
        weights = document_weights([x[1] for x in samples]) if table.per_document else None
        return float(np.average([x[k] for x in samples], weights=weights))

    threshold = settings.correct_threshold - 1e-12
    diff, ci, p_value = _read(rep.estimate, None)
    paired = Paired(lc_score=100 * float(np.mean([pooled_mean(f.samples, 3) for f in rep.fits])),
                    rag_score=100 * float(np.mean([pooled_mean(f.samples, 2) for f in rep.fits])),
                    n_shared=len(fit.samples), n_groups=rep.estimate.n_groups, diff=diff, ci=ci, p_value=p_value,
                    estimate=rep.estimate, pooled=[(s[1], 100 * (s[2] - s[3])) for s in fit.samples],
                    correct_shares=(float(np.mean([s[2] >= threshold for s in fit.samples])),
                                    float(np.mean([s[3] >= threshold for s in fit.samples]))))
    return CrossFitted(lc, rag, within, selection, agreement >= 0.5, agreement, paired)


def _read(estimate: Estimate | None,
          diff: float | None) -> tuple[float | None, tuple[float, float] | None, float | None]:
    """(Δ, its 95% interval, its two-sided p-value) from an estimate; without one `diff` and neither."""
    if estimate is None:
        return diff, None, None
    return estimate.value, estimate.interval(0.95), estimate.p_two_sided(0.0)


def _fixed_pair(lc: Run, rag: Run, lvl: str | None, groups: dict[str, str], settings: ReportSettings) -> Paired:
    """One config per arm (nothing chosen), or too few documents to split (chosen on all): all samples."""
    a, b = rag.scores(lvl), lc.scores(lvl)
    shared, estimate = paired_difference(rag, lc, lvl, None, groups, settings.per_document)
    if settings.per_document:  # on Δ's basis: the documents' means, each document once
        lc_score, rag_score = (_documents_mean(x, shared, groups) for x in (b, a))
    else:
        lc_score, rag_score = mean_score(lc, lvl, set(shared)), mean_score(rag, lvl, set(shared))
    if not shared:
        return Paired(lc_score=lc_score, rag_score=rag_score)
    docs = [groups.get(i, i) for i in shared]
    # one document: its mean, no interval
    diff, ci, p_value = _read(estimate, 100 * float(np.mean([a[i] - b[i] for i in shared])))
    return Paired(lc_score=lc_score, rag_score=rag_score, n_shared=len(shared), n_groups=len(set(docs)), diff=diff,
                  ci=ci, p_value=p_value, estimate=estimate,
                  pooled=[(d, 100 * (a[i] - b[i])) for i, d in zip(shared, docs, strict=True)],
                  correct_shares=(share_correct(rag, lvl, shared, settings.correct_threshold),
                                  share_correct(lc, lvl, shared, settings.correct_threshold)))



def _documents_mean(scores: dict[str, float], ids: list[str], groups: dict[str, str]) -> float | None:
    """100 x the mean over documents of each document's mean score over `ids` (None without any)."""
    per_doc: dict[str, list[float]] = {}
    for i in ids:
        per_doc.setdefault(groups.get(i, i), []).append(scores[i])
    return 100 * float(np.mean([np.mean(v) for v in per_doc.values()])) if per_doc else None



def row_decision(estimate: Estimate | None, n_groups: int, naive: bool, rag_cheaper: bool | None,
                 correct_shares: tuple[float, float] | None, settings: ReportSettings) -> tuple[Decision, bool]:
    """(the decision a row's own interval makes, whether it joins the report's family): `decide`, then the
    rules that withhold a decision whatever the interval says: configs chosen on the samples reported on
    (`naive`), and fewer than MIN_DOCUMENTS documents. perf/small_sample_verdict.py calls it as the report does."""
    decision = decide(estimate, settings.tolerance, rag_cheaper, correct_shares, settings.floor_share)
    few = n_groups < MIN_DOCUMENTS
    if estimate is None and n_groups == 1 and decision.kind == INCONCLUSIVE:  # a difference, but no interval
        decision = Decision(INCONCLUSIVE, f"one document: nothing is decided below {MIN_DOCUMENTS} documents, since "
                                          "questions about one document rise and fall together and say little "
                                          "about others; add documents")
    elif naive and decision.kind not in (INCONCLUSIVE, NO_DECISION):
        decision = Decision(INCONCLUSIVE, f"the interval would say {decision.kind}, but the configs were "
                                          "chosen on the same samples (too few documents to split)")
    elif few and decision.kind not in (INCONCLUSIVE, NO_DECISION):
        decision = Decision(INCONCLUSIVE, f"the interval would say {decision.kind}, but {n_groups} document(s) are "
                                          f"fewer than the {MIN_DOCUMENTS} a decision needs: questions about one "
                                          "document rise and fall together, so few documents say little about "
                                          "others; add documents")
    elif few and estimate is not None and decision.kind == INCONCLUSIVE:  # undecided twice over: say both
        decision = Decision(INCONCLUSIVE, f"{n_groups} documents are fewer than the {MIN_DOCUMENTS} a decision "
                                          f"needs, and {decision.why}")
    return decision, not naive and not few and estimate is not None and decision.kind != NO_DECISION



def verdict_row(benchmark: str, level: str, runs: list[Run], pricing: Pricing,
                settings: ReportSettings) -> tuple[Comparison, OwnDecision]:
    """The comparison of one benchmark and level (its configs, difference, interval) and the decision its interval
    alone makes (the family's correction, the router and the words come after, experiments.report.decision_order)."""
    lvl = None if level == ALL else level
    lcs, rags = longctx_candidates(runs), rag_candidates(runs)
    best_rag, best_rag_score = best_config(rags, lvl)
    if not lcs or not rags:
        lc, lc_score = best_config(lcs, lvl)
        return Comparison(benchmark, level, lc=lc, lc_score=lc_score, rag=best_rag, rag_score=best_rag_score,
                          best_rag=best_rag, best_rag_score=best_rag_score, lc_own_score=lc_score,
                          rag_own_score=best_rag_score, configs_compared=len(lcs) + len(rags)), OwnDecision()
    groups = groups_of(lcs + rags, lvl)
    table = candidate_table(lcs, rags, lvl, groups, pricing, settings)
    naive_lc, naive_rag, _ = choose_pair(lcs, rags, table, lvl)
    compared = len(lcs) + len(rags)
    fitted = None if len(lcs) == 1 and len(rags) == 1 else _crossfit(lcs, rags, table, lvl, compared, settings)
    naive = fitted is None and not (len(lcs) == 1 and len(rags) == 1)
    halves: tuple[bool | None, float | None]
    if fitted is not None:
        lc, rag, within, paired = fitted.lc, fitted.rag, fitted.within_tolerance, fitted.paired
        selection, halves = fitted.selection, (fitted.halves_agree, fitted.halves_agreement)
    else:
        picked_lc, picked_rag, within = choose_pair(lcs, rags, table, lvl)
        assert picked_lc is not None and picked_rag is not None  # each arm has a scored candidate: one is picked
        lc, rag = picked_lc, picked_rag
        paired, halves = _fixed_pair(lc, rag, lvl, groups, settings), (None, None)
        selection = ("single config per arm (nothing chosen): all samples" if not naive else
                     f"naive: {len(set(groups.values()))} documents are too few to split, "
                     f"so the {compared} configs were chosen on the samples reported on")
    naive_est = (paired_difference(naive_rag, naive_lc, lvl, None, groups)[1]
                 if naive_lc is not None and naive_rag is not None else None)
    cost = cost_ratio(rag, lc, pricing, settings, lvl)  # with its interval: a tie is neither arm cheaper
    comparison = Comparison(
        benchmark, level, lc=lc, rag=rag, within_tolerance=within, best_rag=best_rag, best_rag_score=best_rag_score,
        lc_own_score=mean_score(lc, lvl, None), rag_own_score=mean_score(rag, lvl, None),
        token_ratio=_ratio(rag.mean_of("prompt_tokens", lvl), lc.mean_of("prompt_tokens", lvl)),
        latency_ratio=_ratio(rag.mean_of("latency_s", lvl), lc.mean_of("latency_s", lvl)),
        cost_ratio=cost.point if cost else None, cost_ratio_low=cost.low if cost else None,
        cost_ratio_high=cost.high if cost else None, cost_basis=pricing_words.basis(pricing) if cost else "",
        oracle=oracle_router(best_rag, lc, lvl) if best_rag is not None else None, configs_compared=compared,
        naive_lc=naive_lc, naive_rag=naive_rag,
        naive_diff=naive_est.value if naive_est is not None else None, candidates=table, selection=selection,
        halves_agree=halves[0], halves_agreement=halves[1], lc_score=paired.lc_score, rag_score=paired.rag_score,
        n_shared=paired.n_shared, n_groups=paired.n_groups, diff=paired.diff, ci=paired.ci, p_value=paired.p_value,
        estimate=paired.estimate, pooled=paired.pooled, correct_shares=paired.correct_shares)
    decision, tested = row_decision(comparison.estimate, comparison.n_groups, naive, comparison.rag_cheaper,
                                    comparison.known_correct_shares, settings)
    return comparison, OwnDecision(decision, tested)
