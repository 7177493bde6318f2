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

Both arms are held to the same rule, so with a correct 95% interval a wrong `rag` (RAG truly
worse by more than the tolerance) or a wrong `longctx` happens in at most about 2.5% of sweeps.
Below `MIN_DOCUMENTS` documents nothing is decided (perf/small_sample_verdict.py: the intervals keep
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


@dataclass(frozen=True)
class Decision:
    kind: str  # one of DECISIONS
    why: str  # the reason, in words, for the recommendation sentence


ALPHA = 0.05  # each claim's level; the report's family keeps the family-wise error at this rate too
MIN_DOCUMENTS = 6  # a decision needs at least this many documents, on every path (README "The verdict")


def boundaries(tolerance: float, rag_cheaper: bool | None) -> tuple[float, float]:
    """(b_rag, b_lc): `rag` claims RAG - long context > b_rag, `longctx` claims it is < b_lc (points)."""
    return (-tolerance if rag_cheaper else 0.0), (tolerance if rag_cheaper is False else -tolerance)


def claim_p_values(estimate: Estimate, tolerance: float, rag_cheaper: bool | None) -> dict[str, float]:
    """{decision: p-value of its boundary claim}."""
    b_rag, b_lc = boundaries(tolerance, rag_cheaper)
    return {RAG: estimate.p_above(b_rag), LONGCTX: estimate.p_below(b_lc)}


def decide(estimate: Estimate | None, tolerance: float, rag_cheaper: bool | None,
           correct_shares: tuple[float, float] | None = None, floor_share: float = 0.05,
           alpha: float = ALPHA) -> Decision:
    """`estimate`: of RAG - long context (points); `rag_cheaper`: None when the cost is unknown;
    `correct_shares`: (RAG, long context) share of samples answered correctly."""
    if correct_shares is not None:
        top = max(correct_shares)
        if top <= floor_share:
            return Decision(NO_DECISION, f"the generator answers {100 * top:.0f}% of questions correctly with either "
                                         "arm (floor): use a stronger model before deciding")
        if min(correct_shares) >= 1 - floor_share:
            return Decision(NO_DECISION, f"both arms answer at least {100 * min(correct_shares):.0f}% of questions "
                                         "correctly (ceiling): this benchmark cannot separate them; choose on cost")
    if estimate is None:
        return Decision(INCONCLUSIVE, "no shared samples to compare on")
    p = claim_p_values(estimate, tolerance, rag_cheaper)
    if p[RAG] < alpha:
        if estimate.p_above(0.0) < alpha:
            return Decision(RAG, "RAG is better (the whole interval is above 0)")
        return Decision(RAG, f"RAG is no more than {tolerance:g} points worse (the interval's lower end) and cheaper")
    if p[LONGCTX] < alpha:
        if estimate.p_below(-tolerance) < alpha:
            return Decision(LONGCTX, f"long context is better by more than {tolerance:g} points (the whole interval)")
        return Decision(LONGCTX, f"long context is no more than {tolerance:g} points worse (the interval's upper end) "
                                 "and cheaper")
    return Decision(INCONCLUSIVE, f"the interval allows a difference of more than {tolerance:g} points either way "
                                  "or the cost is unknown; more documents would settle it")
