"""The decision a verdict row states, read from its interval's test, never from a point estimate.

With `d` = RAG minus long context (points, x100), its estimate (eval.metrics.confidence.Estimate: a t
distribution whose 95% interval is [lo, hi]), the tolerance `tol` (points a team accepts to lose for a
cheaper arm) and which arm is cheaper at the report's queries per document, each decision is a
one-sided claim against a boundary (`boundaries`), decided when its p-value is below alpha (0.05); the
interval and the p-value come from the same distribution, so "lo > b" and "p < 0.05" never disagree:

decision and when:

- `no_decision`: the generator is at the floor (both chosen configs answer at most `floor_share` of
  their samples correctly) or at the ceiling (both at least 1 - `floor_share`): the benchmark cannot
  separate the arms with this model
- `rag`: RAG is better (lo > 0), or non-inferior (lo > -tol) and cheaper
- `longctx`: long context is better by more than the tolerance (hi < -tol), or long context is
  non-inferior (hi < tol) and cheaper
- `inconclusive`: anything else: the interval allows both (more documents would settle it), or there
  is no interval

- `route` (set by experiments.report.verdict.family, not by `decide`): a router learned over the two configs
  beats the better single arm by more than the tolerance (its interval's lower end), and Holm keeps
  that claim in the report's family

Both arms are held to the same rule: every claim is tested at one-sided 1.5% (1% on a cross-fitted
estimate: `claim_levels`), so that a wrong `rag` (RAG truly worse by more than the tolerance, or not better)
or a wrong `longctx` happens in at most 2.5% of sweeps even where the differences between documents are
lopsided; where the arms rarely disagree the exact bound of eval.metrics.discordance must clear the boundary
too. Below `MIN_DOCUMENTS` documents nothing is decided (perf/small_sample_verdict.py: the intervals keep
their coverage from there up).
"""

from __future__ import annotations

from dataclasses import dataclass

from eval.metrics.confidence import Estimate
from experiments.arms.base import ROLE_LONGCTX, ROLE_RAG

# decision kinds (values of verdict.csv's `decision`), named after the arm roles they recommend
RAG, LONGCTX = ROLE_RAG, ROLE_LONGCTX
INCONCLUSIVE, NO_DECISION = "inconclusive", "no_decision"
# a learned router beats the better single arm by more than the tolerance (experiments.report.router.evaluate)
ROUTE = "route"
DECISIONS = (RAG, LONGCTX, ROUTE, INCONCLUSIVE, NO_DECISION)
FLOOR, CEILING = "floor", "ceiling"  # where both arms sit when there is no decision


@dataclass(frozen=True)
class Decision:
    kind: str  # one of DECISIONS
    why: str  # the reason, in words, for the recommendation sentence
    bound: str | None = None  # no_decision: "floor" or "ceiling", where both arms sit (the page says it in words)


@dataclass(frozen=True)
class OwnDecision:
    """The decision stage of a verdict row: what its own interval decides (experiments.report.verdict.compare.
    row_decision; None for a row without both arms), and whether it joins the report's family of tests
    (experiments.report.verdict.family, which may restate or withhold it)."""
    decision: Decision | None = None
    tested: bool = False


ALPHA = 0.05  # the level on the common scale; the report's family keeps the family-wise error at this rate too
# Every one-sided claim is tested at this share of the level: one-sided 1.5% instead of 2.5%, whichever arm it
# favours and whichever is cheaper. Where the per-document differences are lopsided (an arm failing badly on a few
# documents and slightly better on the rest, or accuracy near 0.1 or 0.9) the symmetric t interval misses on the
# side of the arm that usually looks better, and at 2.5% such claims were made falsely in 3.0-4.3% of simulated
# sweeps: `rag` where retrieval fails on 15% of documents, whether RAG was the cheaper arm or the dearer one,
# and `longctx` where long context fails on a minority of documents (truncation, lost in the middle). The skew
# comes from the data, not from the price, so the stricter level applies to every claim; its price is power
# (perf/small_sample_verdict.py prints both; the statistics page of the docs has the tables).
CLAIM_SHARE = 0.6
# On a cross-fitted estimate (several configs, a choice made on half the documents: `Estimate.strict`) every claim
# is tested at one-sided 1%. Its error is skewed towards the arm with the chosen configs, whatever the data: a sweep
# whose estimate comes out high gets a smaller standard error (corr -0.1 to -0.6 over 800 simulated sweeps of 12
# RAG configs, one config: +0.01), so the 98.5% quantile of (estimate - truth) / se was 2.7-3.4 where the t says
# 2.4-2.8; at one-sided 1.5% a RAG truly 2 points worse was called `rag` in up to 3.5% of sweeps at 8-40
# documents, at 1% (with the cross-fit's wider interval, eval.metrics.confidence.SPLIT_NOISE_SHARE) in at most 2.1%.
STRICT_SHARE = 0.4
MIN_DOCUMENTS = 6  # a decision needs at least this many documents, on every path (README "The verdict")


def boundaries(tolerance: float, rag_cheaper: bool | None) -> tuple[float, float]:
    """(b_rag, b_lc): `rag` claims RAG - long context > b_rag, `longctx` claims it is < b_lc (points)."""
    return (-tolerance if rag_cheaper else 0.0), (tolerance if rag_cheaper is False else -tolerance)


def claim_levels(rag_cheaper: bool | None, alpha: float = ALPHA, strict: bool = False) -> dict[str, float]:
    """{decision: the level its claim is tested at (twice the one-sided tail)}: `alpha` x CLAIM_SHARE for every
    claim, whichever arm is cheaper; `alpha` x STRICT_SHARE on an estimate that needs the stricter level
    (`Estimate.strict`: cross-fitted). `rag_cheaper` names the claims by the price for the callers; it does not
    change the level."""
    share = STRICT_SHARE if strict else CLAIM_SHARE
    return {RAG: alpha * share, LONGCTX: alpha * share}


def claim_p_values(estimate: Estimate, tolerance: float, rag_cheaper: bool | None) -> dict[str, float]:
    """{decision: p-value of its boundary claim on the common scale}: below ALPHA exactly when the claim's own
    p-value is below its level (claim_levels), so one Holm procedure can take claims of both kinds."""
    b_rag, b_lc = boundaries(tolerance, rag_cheaper)
    levels = claim_levels(rag_cheaper, strict=estimate.strict)
    return {RAG: min(1.0, estimate.p_above(b_rag) * ALPHA / levels[RAG]),
            LONGCTX: min(1.0, estimate.p_below(b_lc) * ALPHA / levels[LONGCTX])}


def percent(confidence: float) -> str:
    """"95%", "97%", "98.8%": a confidence level as the words show it."""
    return f"{100 * confidence:.1f}".rstrip("0").rstrip(".") + "%"


def held_by_exact_bound(estimate: Estimate, bounds: tuple[float, float], level: dict[str, float]) -> str:
    """Why a claim the t interval alone would make is held back by the exact bound for rare discordant answers
    (eval.metrics.discordance), in words; "" when none is."""
    for arm, side, b, t_p in ((RAG, estimate.rare_low, bounds[0], estimate.t_p_above(bounds[0])),
                              (LONGCTX, estimate.rare_high, bounds[1], estimate.t_p_below(bounds[1]))):
        if side is None or t_p >= level[arm] or side.p_beyond(b) < level[arm]:
            continue
        worse = "RAG" if side.side < 0 else "long context"
        where = "no document" if side.documents == 0 else f"only {side.documents} document(s)"
        return (f"the arms answer almost alike: {where} with an answer where {worse} did worse, so the claim for "
                f"{arm} rests on the exact bound from that count, {side.bound(level[arm] / 2):+.1f} at the "
                f"{percent(1 - level[arm])} level, which does not clear {b:+g}; more documents would settle it")
    return ""


def decide(estimate: Estimate | None, tolerance: float, rag_cheaper: bool | None,
           correct_shares: tuple[float, float] | None = None, floor_share: float = 0.05,
           alpha: float = ALPHA) -> Decision:
    """`estimate`: of RAG - long context (points); `rag_cheaper`: None when neither arm is known to be the
    cheaper one (a cost tie, experiments.report.verdict.cost_ratio, or an unknown cost);
    `correct_shares`: (RAG, long context) share of samples answered correctly; `alpha`: the level on the
    common scale (the family passes its adjusted one). Every word is judged at the level of the interval the
    decision reads (the claim's level), so "the whole interval is above 0" is said of that interval."""
    if correct_shares is not None:
        top = max(correct_shares)
        if top <= floor_share:
            return Decision(NO_DECISION, f"the generator answers {100 * top:.0f}% of questions correctly with either "
                                         "arm (floor): use a stronger model before deciding", FLOOR)
        if min(correct_shares) >= 1 - floor_share:
            return Decision(NO_DECISION, f"both arms answer at least {100 * min(correct_shares):.0f}% of questions "
                                         "correctly (ceiling): this benchmark cannot separate them; choose on cost",
                            CEILING)
    if estimate is None:
        return Decision(INCONCLUSIVE, "no shared samples to compare on")
    b_rag, b_lc = boundaries(tolerance, rag_cheaper)
    level = claim_levels(rag_cheaper, alpha, estimate.strict)
    if estimate.p_above(b_rag) < level[RAG]:
        shown = percent(1 - level[RAG])
        if estimate.p_above(0.0) < level[RAG]:
            return Decision(RAG, f"RAG is better (the whole {shown} interval is above 0)")
        return Decision(RAG, f"RAG is no more than {tolerance:g} points worse (the {shown} interval's lower end) "
                             "and cheaper")
    if estimate.p_below(b_lc) < level[LONGCTX]:
        shown = percent(1 - level[LONGCTX])
        if estimate.p_below(-tolerance) < level[LONGCTX]:
            return Decision(LONGCTX, f"long context is better by more than {tolerance:g} points (the whole {shown} "
                                     "interval)")
        return Decision(LONGCTX, f"long context is no more than {tolerance:g} points worse (the {shown} interval's "
                                 "upper end) and cheaper")
    held = held_by_exact_bound(estimate, (b_rag, b_lc), level)
    if held:
        return Decision(INCONCLUSIVE, held)
    if estimate.se == 0:
        return Decision(INCONCLUSIVE, "no variation between documents: nothing to read an interval from")
    near = [arm for arm, b, p in ((RAG, b_rag, estimate.p_above(b_rag)), (LONGCTX, b_lc, estimate.p_below(b_lc)))
            if level[arm] < alpha and p < alpha]
    if near:
        return Decision(INCONCLUSIVE, f"the {percent(1 - alpha)} interval clears the boundary for {near[0]}, but "
                                      f"every claim is tested at the stricter {percent(1 - level[near[0]])} interval "
                                      "(differences between documents can be lopsided), which does not; more "
                                      "documents would settle it")
    unknown = ", or neither arm is known to be the cheaper one" if rag_cheaper is None else ""
    return Decision(INCONCLUSIVE, f"the interval allows a difference of more than {tolerance:g} points either "
                                  f"way{unknown}; more documents would settle it")
