"""How much data a decision needs: per verdict row, the minimum detectable difference at the
current number of documents, and the number of documents at which the observed difference would
be decided at the tolerance (a power analysis of a pilot sweep).

The numbers come from the paired per-sample differences d = RAG score - long-context score (points,
x100) of the row's chosen configs over their shared samples, grouped by document (`group`; a
sample without one is its own document), because questions about one document rise and fall
together:

- per document g with m_g questions, the mean difference dbar_g; the row's difference is the mean
  over all samples, and its document-clustered standard error is the cluster-robust (CR1) one,
  SE^2 = G / (G - 1) x sum_g m_g^2 (dbar_g - dbar)^2 / N^2 over G documents and N samples, which
  for equal m is the between-document variance of the dbar_g over G. At a fixed number of
  questions per document SE scales as 1 / sqrt(G): `document_sd` = SE x sqrt(G) is what a plan
  scales.
- the intra-document correlation (ICC) of the differences, the one-way ANOVA estimator with
  unequal sizes, (MSB - MSW) / (MSB + (m0 - 1) MSW), clipped to 0..1, and the design effect
  1 + (mbar - 1) x ICC: how many times larger the variance is than if the N questions were
  independent.
- the minimum detectable difference (MDD) at G documents, power `power`, for the claim the plan aims at,
  tested at that claim's level (experiments.report.verdict.decision.claim_levels: 5% two-sided for "an arm is
  better", one-sided 1.5% for the claim that favours the cheaper arm): (t_{G-1}(1 - level / 2) + t_{G-1}(power))
  x SE, e.g. (t_{G-1}(0.975) + t_{G-1}(power)) x SE at 5%. A t rather than a normal quantile because the verdict's
  interval is a cluster bootstrap widened for few documents like a t interval with G - 1 degrees
  of freedom (eval.metrics.confidence.few_groups_factor); with many documents it is z_{0.975} +
  z_{power} = 2.80 at 80% power (3.01 at the cheaper arm's 1.5%).
- the documents a sweep needs (`documents_needed`) come from simulating the verdict's whole rule on a
  bootstrap of this sweep's documents (experiments.report.verdict.sizing.size_by_assurance): selection,
  cross-fitting and the family's correction included, in plausible worlds drawn from the pilot (the size at
  which the power is reached in 4 of 5 of them, and the size for 9 of 10: `sure_documents`), for the
  difference that matters to the team (report.yaml `plan.difference`, `--difference`; the sign is the
  observed difference's) unless the observed difference is asked for (`--observed`). A small pilot's
  observed difference is noisy: planned on the observed difference of an 8-document pilot, sweeps decided
  78.6% when the truth was +25 but 51.8% when it was +10, so the default plans for a difference chosen in
  advance, and every sentence says which.
  The formula of one fixed pair (`documents_for`) is kept for the minimum detectable difference.

perf/plan_check.py checks the promise on simulated sweeps run through the report's own verdict.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from eval.metrics.confidence import t_quantile
from experiments.report.halves import MIN_GROUPS
from experiments.report.settings import ReportSettings
from experiments.report.verdict.decision import (
    ALPHA,
    INCONCLUSIVE,
    LONGCTX,
    MIN_DOCUMENTS,
    NO_DECISION,
    RAG,
    Decision,
    claim_levels,
)
from experiments.report.verdict.row import Comparison
from experiments.report.verdict.sizing import ASSURANCE, SURE, size_by_assurance
from experiments.report.verdict.sizing import MAX_DOCUMENTS as SIZING_MAX

CONFIDENCE = 0.95  # the verdict's interval: 5% two-sided
MAX_DOCUMENTS = 10_000_000  # a plan larger than this is reported as this bound (a difference near a boundary)
SMALL_PILOT = 16  # below this many pilot documents the plan's detail says the size is a first guess


@dataclass(frozen=True)
class ClusteredVariance:
    """The document-clustered variance of a mean of paired differences (points)."""
    n_samples: int
    n_documents: int
    mean: float  # mean difference over all samples
    questions_per_document: float  # mbar = N / G
    between_sd: float  # sd of the per-document mean differences
    se: float  # cluster-robust standard error of `mean`
    icc: float  # intra-document correlation of the differences, 0..1
    design_effect: float  # 1 + (mbar - 1) x icc

    @property
    def document_sd(self) -> float:
        """SE x sqrt(G): the SE of a sweep of G documents (same questions per document) is this / sqrt(G)."""
        return self.se * math.sqrt(self.n_documents)


def clustered_variance(diffs: Sequence[float], groups: Sequence[object]) -> ClusteredVariance:
    """Clustered SE, ICC and design effect of the mean of `diffs` (groups[i]: sample i's document).
    Needs at least 2 documents."""
    d = np.asarray(diffs, dtype=float)
    if len(groups) != d.size:
        raise ValueError(f"groups has {len(groups)} entries for {d.size} differences")
    index: dict[object, int] = {}
    g = np.array([index.setdefault(x, len(index)) for x in groups], dtype=np.int64)
    n_docs, n = len(index), d.size
    if n_docs < 2:
        raise ValueError(f"a clustered variance needs at least 2 documents, got {n_docs}")
    sizes = np.bincount(g, minlength=n_docs).astype(float)
    doc_means = np.bincount(g, weights=d, minlength=n_docs) / sizes
    mean = float(d.mean())
    se = math.sqrt(n_docs / (n_docs - 1) * float(np.sum(sizes**2 * (doc_means - mean) ** 2)) / n**2)
    icc = anova_icc(d, g, sizes, doc_means)
    return ClusteredVariance(n_samples=n, n_documents=n_docs, mean=mean, questions_per_document=n / n_docs,
                             between_sd=float(np.std(doc_means, ddof=1)), se=se, icc=icc,
                             design_effect=1 + (n / n_docs - 1) * icc)


def anova_icc(d: np.ndarray, g: np.ndarray, sizes: np.ndarray, doc_means: np.ndarray) -> float:
    """One-way ANOVA intra-class correlation with unequal group sizes (0 when not estimable)."""
    n, n_docs = d.size, sizes.size
    if n <= n_docs:  # one question per document: no within-document variation to compare with
        return 0.0
    msb = float(np.sum(sizes * (doc_means - d.mean()) ** 2)) / (n_docs - 1)
    msw = float(np.sum((d - doc_means[g]) ** 2)) / (n - n_docs)
    m0 = (n - float(np.sum(sizes**2)) / n) / (n_docs - 1)
    denom = msb + (m0 - 1) * msw
    return 0.0 if denom <= 0 else min(1.0, max(0.0, (msb - msw) / denom))


def critical_sum(n_documents: int, power: float, confidence: float = CONFIDENCE) -> float:
    """t_{G-1}(1 - alpha/2) + t_{G-1}(power): how many SEs a difference must clear (2.80 for many
    documents at 80% power). Degrees of freedom at least 2, where the t expansion is accurate."""
    df = max(2, n_documents - 1)
    return t_quantile(1 - (1 - confidence) / 2, df) + t_quantile(power, df)


def minimum_detectable_difference(se: float, n_documents: int, power: float, confidence: float = CONFIDENCE
                                  ) -> float:
    """The smallest distance from a decision boundary detected with probability `power` (points) by a claim
    tested at the interval of `confidence` (1 - the claim's level)."""
    return critical_sum(n_documents, power, confidence) * se


def documents_for(document_sd: float, margin: float, power: float, confidence: float = CONFIDENCE) -> int | None:
    """The smallest number of documents G (at least 2) with critical_sum(G, power, confidence) x document_sd /
    sqrt(G) <= margin (None when margin <= 0: never). That side shrinks as G grows, so a search from the
    normal approximation's answer (a lower bound: t quantiles exceed z's) finds it."""
    if margin <= 0:
        return None

    def decides(n: int) -> bool:
        return critical_sum(n, power, confidence) * document_sd / math.sqrt(n) <= margin

    lo = max(2, math.ceil((critical_sum(10**9, power, confidence) * document_sd / margin) ** 2))
    if lo >= MAX_DOCUMENTS:
        return MAX_DOCUMENTS
    if decides(lo):
        return lo
    hi = lo * 2
    while not decides(hi):
        if hi >= MAX_DOCUMENTS:
            return MAX_DOCUMENTS
        lo, hi = hi, hi * 2
    while hi - lo > 1:  # decides(hi), not decides(lo)
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if decides(mid) else (mid, hi)
    return hi


@dataclass(frozen=True)
class Target:
    """A boundary the interval can clear, and what clearing it decides."""
    decision: str
    boundary: float  # points
    margin: float  # how far the difference is from it, on the side that decides
    words: str
    level: float = ALPHA  # the claim's level (decision.claim_levels): its interval is the 1 - level one

    @property
    def confidence(self) -> float:
        return 1 - self.level

    @property
    def reach(self) -> float:
        """The largest standard error at which an estimate at the true difference clears the boundary at the
        claim's level: margin / z(1 - level / 2). The claim with the largest reach is decided first as
        documents accrue, so it is the one to plan for (a stricter level needs more margin)."""
        return self.margin / t_quantile(1 - self.level / 2, 10**9)


def targets(diff: float, tolerance: float, rag_cheaper: bool | None, strict: bool = False) -> list[Target]:
    """The boundaries of experiments.report.verdict.decision.decide for a difference `diff`, each with the level
    its claim is tested at (stricter on a cross-fitted row), best (largest reach) first."""
    level = claim_levels(rag_cheaper, strict=strict)
    out = [Target(RAG, 0.0, diff, "RAG better: interval above 0", level[RAG]),
           Target(LONGCTX, -tolerance, -tolerance - diff, f"long context better: interval below {-tolerance:+g}",
                  level[LONGCTX])]
    if rag_cheaper is True:
        out.append(Target(RAG, -tolerance, diff + tolerance,
                          f"RAG no more than {tolerance:g} points worse and cheaper: interval above {-tolerance:+g}",
                          level[RAG]))
    elif rag_cheaper is False:
        out.append(Target(LONGCTX, tolerance, tolerance - diff, f"long context no more than {tolerance:g} points "
                                                                f"worse and cheaper: interval below {tolerance:+g}",
                          level[LONGCTX]))
    return sorted(out, key=lambda t: -t.reach)


def _r(v: float | None, digits: int = 2) -> float | None:
    return None if v is None else round(float(v), digits)


def _pair(row: Comparison) -> tuple[list[float], list[str]] | None:
    """(differences in points, documents) the row's difference pools (cross-fitted: each half's choice
    on the other half), else those of its RAG and long-context configs over their shared samples."""
    if row.lc is None or row.rag is None:
        return None
    if row.pooled:
        return [d for _, d in row.pooled], [g for g, _ in row.pooled]
    level = None if row.level == "all" else row.level
    rag, lc = row.rag.scores(level), row.lc.scores(level)
    docs = {str(r["id"]): str(r.get("group") or f"sample:{r['id']}")
            for run in (row.rag, row.lc) for r in run.records_at(level)}
    shared = sorted(set(rag) & set(lc))
    return [100 * (rag[i] - lc[i]) for i in shared], [docs[i] for i in shared]


def plan_row(row: Comparison, arm: Decision | None, family_size: int, settings: ReportSettings, power: float = 0.8,
             difference: float | None = None, observed: bool = False) -> dict[str, Any]:
    """The plan of one verdict row (its comparison, the decision between the single arms, the size of the report's
    family: experiments.report.verdict_row.plan_rows) as a JSON-ready dict.
    `difference`: plan for this true difference (points; default: settings.plan_difference with the observed
    difference's sign); `observed`: plan for the observed difference instead."""
    if not 0 < power < 1:
        raise ValueError(f"power={power}: must be between 0 and 1 (e.g. 0.8)")
    decision = arm.kind if arm else INCONCLUSIVE
    out = _unplanned(row, decision, power)
    pair = _pair(row)
    if pair is None or row.diff is None:
        out["sentence"] = "No shared samples of a long-context and a RAG config: nothing to plan from."
        return out
    diffs, docs = pair
    if len(set(docs)) < 2 or not row.n_groups or row.n_groups < 2:
        out["n_documents"] = len(set(docs))
        out["sentence"] = (f"Only {len(set(docs))} document(s): a document-level variance needs at least 2; "
                           "run more documents before planning.")
        return out
    cv = clustered_variance(diffs, docs)
    se = cv.document_sd / math.sqrt(row.n_groups)  # the SE of the row's difference
    planned, assumed = _planned_difference(row, settings, difference, observed)
    best = targets(planned, settings.tolerance, row.rag_cheaper, bool(row.estimate and row.estimate.strict))[0]
    floor = max(MIN_DOCUMENTS, 2 * MIN_GROUPS if row.configs_compared > 2 else 2)
    needed, sized = _documents_needed(row, cv, best, planned, floor, settings, power, family_size)
    if decision == NO_DECISION:  # floor or ceiling: more documents would not help
        needed, best = None, Target(NO_DECISION, 0.0, 0.0, "")
    out.update({
        "n_documents": cv.n_documents, "questions_per_document": _r(cv.questions_per_document),
        "icc": _r(cv.icc, 3), "design_effect": _r(cv.design_effect), "between_document_sd": _r(cv.between_sd),
        "se": _r(se), "mdd": _r(minimum_detectable_difference(se, row.n_groups, power, best.confidence)),
        "planned_difference": _r(planned), "assumed": assumed, "documents_needed": needed, "selection_floor": floor,
        "simulated_share": _r(sized.mean_power(needed), 3) if sized and needed in sized.powers else None,
        "simulated_sweeps": sized.sweeps if sized else None, "worlds": sized.worlds if sized else None,
        "assurance": sized.assurance if sized else None,
        "worlds_reaching_power": _r(sized.share_of_worlds(needed, power), 3) if sized and needed in sized.powers
        else None,
        "sure_documents": (sized.sure_documents or SIZING_MAX) if sized and sized.documents else None,
        "sure_beyond_search": bool(sized and sized.documents and sized.sure_documents is None),
        "beyond_search": bool(sized and sized.documents is None),
        "more_documents": None if needed is None else max(0, needed - cv.n_documents),
        "target": {"decision": best.decision, "boundary": best.boundary, "margin": _r(best.margin),
                   "words": best.words} if best.margin > 0 else None,
    })
    out["sentence"] = plan_sentence(out, decision, power, row.diff)
    out["column"] = plan_column(out, decision)
    if decision != NO_DECISION:
        out["detail"] = _plan_detail(row, out, cv, power, observed)
    return out


def _unplanned(row: Comparison, decision: str, power: float) -> dict[str, Any]:
    """A plan's keys, before anything is planned."""
    return {
        "benchmark": row.benchmark, "level": row.level, "decision": decision,
        "longctx_config": row.lc.label if row.lc else None, "rag_config": row.rag.label if row.rag else None,
        "diff": _r(row.diff), "ci": [_r(row.ci[0]), _r(row.ci[1])] if row.ci else None,
        "n_documents": None, "interval_documents": row.n_groups or None, "questions_per_document": None,
        "icc": None, "design_effect": None, "between_document_sd": None, "se": None, "mdd": None, "power": power,
        "planned_difference": None, "documents_needed": None, "selection_floor": None, "more_documents": None,
        "target": None,
        "column": "-", "sentence": "", "detail": "",
    }


def _planned_difference(row: Comparison, settings: ReportSettings, difference: float | None, observed: bool
                        ) -> tuple[float, str]:
    """The true difference to plan for, and where it came from (observed, given, setting)."""
    if observed and row.diff is not None:
        return row.diff, "observed"
    if difference is not None:
        return float(difference), "given"
    return math.copysign(settings.plan_difference, row.diff or 1.0), "setting"


def _documents_needed(row: Comparison, cv: ClusteredVariance, best: Target, planned: float, floor: int,
                      settings: ReportSettings, power: float, family_size: int) -> tuple[int | None, Any]:
    """Documents needed to reach the best target with `power` (simulated over the row's candidates table, or the
    formula of one fixed pair for a row built by hand), and the simulation's result (None without one)."""
    if best.margin <= 0:
        return None, None
    table = row.candidates
    if table is not None:  # plausible worlds drawn from the pilot's documents (sizing.size_by_assurance)
        sized = size_by_assurance(table, planned, best.decision, settings.tolerance, row.rag_cheaper, power,
                                  max(1, family_size), settings.plan_sweeps, settings.seed,
                                  assurance=pilot_assurance(len(table.documents)))
        return (sized.documents if sized.documents is not None else SIZING_MAX), sized  # beyond_search: "more than"
    needed_interval = documents_for(cv.document_sd, best.margin, power, best.confidence)
    sweep_per_interval = cv.n_documents / row.n_groups  # > 1 when the verdict reports on a subset
    return (None if needed_interval is None else max(floor, math.ceil(needed_interval * sweep_per_interval))), None


def pilot_assurance(pilot_documents: int) -> float:
    """The share of plausible worlds a plan reaches its power in: 4 of 5 (ASSURANCE), and 9 of 10 (SURE) from a
    pilot of fewer than SMALL_PILOT documents, whose variance is too uncertain for the 4-of-5 size (from 8-document
    pilots 20% of single plans delivered below 65% where 80% was promised; perf/plan_check.py check F)."""
    return SURE if pilot_documents < SMALL_PILOT else ASSURANCE


def _plan_detail(row: Comparison, plan: dict[str, Any], cv: ClusteredVariance, power: float, observed: bool) -> str:
    detail = (f"With {row.n_groups} documents in the interval, a true difference {plan['mdd']:.1f} points or "
              f"more beyond a boundary is decided with {100 * power:.0f}% power (the minimum detectable "
              f"difference); intra-document correlation {cv.icc:.2f}, design effect "
              f"{cv.design_effect:.2f}." + _caveats(row, cv))
    if observed and row.ci:
        detail += (f" The observed difference is itself uncertain ({row.ci[0]:+.1f} to {row.ci[1]:+.1f}): "
                   "to be safe, plan for the smallest difference that matters (--difference).")
    return detail


def _caveats(row: Comparison, cv: ClusteredVariance) -> str:
    """What makes the plan a lower bound: no variation seen, or configs chosen on the samples reported on."""
    text = ""
    if cv.se == 0:
        text += " The differences did not vary at all in this sweep: the plan is a lower bound."
    if row.selection.startswith("naive"):
        text += (" The configs were chosen on the samples reported on (too few documents to keep them apart), so the "
                 "difference may favour the luckiest config and the plan be optimistic.")
    if cv.n_documents < SMALL_PILOT:
        text += (f" {cv.n_documents} documents say little about the spread between documents, so the plan is the "
                 "size reaching the power in 9 of 10 plausible worlds, not 4 of 5; take it as a first guess and plan "
                 f"again after {SMALL_PILOT} or more.")
    return text


def plan_sentence(plan: dict[str, Any], decision: str, power: float, observed_diff: float | None) -> str:
    """What more data would settle the row, in one plain sentence, saying which difference it assumed (the
    minimum detectable difference and caveats go to `detail`)."""
    pct, n, diff = f"{100 * power:.0f}%", plan["n_documents"], plan["planned_difference"]
    if plan["assumed"] == "observed":
        really = f"is really the observed {diff:+.1f} points"
    elif plan["assumed"] == "given":
        really = f"is {diff:+.1f} points (--difference)"
    else:
        seen = "" if observed_diff is None else f"; observed {observed_diff:+.1f}"
        really = (f"is {diff:+.1f} points (the difference that matters, report.yaml plan.difference{seen})")
    if decision == NO_DECISION:
        return ("No decision at the floor or ceiling of the generator's accuracy: more documents would not help; "
                "change the model or the benchmark.")
    if plan["documents_needed"] is None:
        return (f"A difference of {diff:+.1f} points sits on a decision boundary at this tolerance: no number of "
                "documents would decide it.")
    needed, more = plan["documents_needed"], plan["more_documents"]
    goal = plan["target"]["words"]
    worlds = assurance_words(plan)
    if decision in (RAG, LONGCTX):
        return (f"Already decided ({decision}) with {n} documents; a sweep of about {needed} documents decides it "
                f"with {pct} power{worlds} if the difference {really} ({goal}).")
    if plan.get("beyond_search"):
        return (f"More than {needed} documents: the simulated rule did not reach {pct} power{worlds} up to that size "
                f"if the difference {really} ({goal}).")
    if plan.get("selection_floor") == needed and more > 0 and needed > MIN_DOCUMENTS:
        more_words = (f"{more} more: choosing among several configs needs {needed // 2} documents in each half of "
                      "the selection split")
    elif plan.get("selection_floor") == needed and more > 0:
        more_words = f"{more} more: nothing is decided on fewer than {MIN_DOCUMENTS} documents"
    elif more == 0:
        more_words = "no more than this sweep has: its interval came out wider by chance"
    else:
        more_words = f"{more} more"
    return (f"About {needed} documents ({more_words}) would decide this at {pct} power{worlds} if the difference "
            f"{really} ({goal}); sized by simulating the verdict's rule on worlds drawn from this sweep's documents.")


def _of(share: float) -> str:
    """0.8 -> "4 of 5", 0.9 -> "9 of 10"."""
    f = Fraction(share).limit_denominator(20)
    return f"{f.numerator} of {f.denominator}"


def assurance_words(plan: dict[str, Any]) -> str:
    """" in 4 of 5 plausible worlds (M documents for 9 of 10)" for a plan sized over plausible worlds, else ""."""
    if not plan.get("worlds"):
        return ""
    words = f" in {_of(plan['assurance'])} plausible worlds"
    if plan.get("beyond_search") or not plan.get("sure_documents") or plan["assurance"] >= SURE:
        return words
    more = "more than " if plan.get("sure_beyond_search") else ""
    return words + f" ({more}{plan['sure_documents']} documents for {_of(SURE)})"


def plan_column(plan: dict[str, Any], decision: str) -> str:
    """The plan in a table cell: "~N docs (+M)", "decided", "never" or "-"."""
    if decision == NO_DECISION or plan["n_documents"] is None or plan["se"] is None:
        return "-"
    if decision in (RAG, LONGCTX):
        return "decided"
    if plan["documents_needed"] is None:
        return "never"
    if plan.get("beyond_search"):
        return f"> {plan['documents_needed']} docs"
    return f"~{plan['documents_needed']} docs (+{plan['more_documents']})"
