"""Many rows, one family: a report with several verdict rows (length levels x benchmarks x
generators) makes several decisions, and the chance that at least one of them is wrong grows with
their number (8 rows each wrong 2.5% of the time: about 18%). Holm's step-down procedure (Holm
1979) keeps the family-wise error rate, the chance of any wrong decision, at 5%, whatever the
dependence between the rows (the all-levels row shares its samples with the level rows).

Each row's decision is a one-sided claim against a boundary (experiments.report.verdict.decision:
`boundaries`, `claim_p_values`, on one scale whatever the claim's own level), so p < 0.05 exactly when
the interval the claim reads clears the boundary; the row's p-value (`p_decision`) is that of the decision
the interval makes (else the smaller of the two). The family is every row that can decide: one with
an interval from honestly chosen configs (not `naive`), at least MIN_DOCUMENTS documents, and not at
the floor or ceiling (`no_decision`).

The routers speak when the arms tie. The learned routers' claims "router - better single arm > tolerance"
(experiments.report.router.evaluate), one per tested row, form a second family, tested whatever the arm
decisions say (the serial gate this replaces tested a router only once every arm decision stood, so it never
spoke where the arms tie, which is where routing earns its place). `settings.router_family` says how:

- "own" (the default): the routers' own pre-declared family, Holm at 5%, beside the arm decisions' Holm at 5%.
  The chance of any wrong arm decision is at most 5%, and of any wrong `route` at most 5%; of any wrong
  statement of either kind at most 10% (Bonferroni over the two families). The arm decisions keep all their
  power, and a router its own.
- "shared": one family-wise error of 5% for both, by a Bonferroni-based graph (Bretz et al. 2009; parallel
  gatekeeping with recycling): the arm decisions start at level 0.05 x (1 - ROUTER_SHARE) and the routers at
  0.05 x ROUTER_SHARE, Holm within each family; a family whose every claim is kept passes its whole level to
  the other, which is then tested again at 0.05. A family with no claim passes its level at once (a report
  without routers tests its arm decisions at 0.05). This is a closed testing procedure of weighted Bonferroni
  tests, so the chance of any wrong statement, arm decision or `route`, is at most 5%, whatever the
  dependence between the tests; the price is the arm decisions' level, 4% instead of 5% while a router claim
  is open, and the router's, 1% while an arm decision is open: on split truths where the arms tie
  (perf/router_simulation.py, 40 documents) it said `route` in 13 of 40 sweeps where "own" said it in 29.
  The share of 0.2 is a choice, not a fitted value.

`p_holm` is each claim's adjusted p-value: the smallest family-wise level at which the whole procedure keeps
it (below 0.05 exactly when it is kept). A row whose own interval decides but whose adjusted p-value does
not is shown as inconclusive, saying why; the interval the first screen shows for a tested row (`Family.ci`)
is the one at confidence 1 - level x p_decision / p_holm (level: its claim's own), which clears the boundary
exactly when the decision stands, and the decision's words ("the whole interval is above 0") are judged on
that same interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from eval.metrics.confidence import Estimate
from experiments.report.settings import ReportSettings
from experiments.report.verdict.decision import (
    ALPHA,
    INCONCLUSIVE,
    LONGCTX,
    RAG,
    Decision,
    OwnDecision,
    claim_levels,
    claim_p_values,
    decide,
)
from experiments.report.verdict.row import Comparison

ROUTER_SHARE = 0.2  # of the family-wise level the routers' claims start with (the arm decisions: the rest)


@dataclass(frozen=True)
class Family:
    """The family stage of a verdict row: the decision after the report's correction (its own where the row is not
    tested; restated at its adjusted level where the procedure keeps it; inconclusive, saying why, where it does
    not; `route`, with the single-arm decision kept as `arm_decision`, where the row's router claim stands) and,
    for a tested row, its test's p-values and the interval at the adjusted level."""
    size: int  # decisions in the family
    decision: Decision | None
    p_decision: float | None = None  # p-value of the boundary test of the row's own decision
    p_holm: float | None = None  # the same, adjusted over the family
    ci: tuple[float, float] | None = None  # the interval at the family-adjusted level
    confidence: float | None = None  # its confidence: the level the decision was tested at
    arm_decision: Decision | None = None  # a row decided `route`: the decision between the single arms


def holm(p_values: list[float]) -> list[float]:
    """Holm-adjusted p-values, in the input's order: max over j <= k of min(1, (m - j + 1) p(j))."""
    m = len(p_values)
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(sorted(range(m), key=lambda i: p_values[i])):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def two_families(arm_p: list[float], router_p: list[float],
                 router_share: float = ROUTER_SHARE) -> tuple[list[float], list[float]]:
    """Adjusted p-values (arm claims, router claims) of the graph described above: claim k is kept at
    family-wise level a exactly when its adjusted p-value is below a.

    At level a, with h the Holm-adjusted p-values inside a family and H the family's largest: the arm family
    is all kept when H_arm < a (1 - w), or the routers are all kept and H_arm < a; the routers are all kept
    when H_r < a w, or H_arm < a (1 - w) and H_r < a. Arm claim i is kept when h_i < a (1 - w), or the
    routers are all kept and h_i < a; in thresholds on a:
    routers all kept from a_r = min(H_r / w, max(H_r, H_arm / (1 - w))), arm i from
    min(h_i / (1 - w), max(h_i, a_r)); the same the other way round. An empty family counts as all kept."""
    w = router_share
    if not 0 < w < 1:
        raise ValueError(f"router_share={w}: between 0 and 1")
    h_arm, h_r = holm(arm_p), holm(router_p)
    top_arm, top_r = max(h_arm, default=0.0), max(h_r, default=0.0)
    routers_kept_from = min(top_r / w, max(top_r, top_arm / (1 - w))) if h_r else 0.0
    arms_kept_from = min(top_arm / (1 - w), max(top_arm, top_r / w)) if h_arm else 0.0
    arms = [min(1.0, h / (1 - w), max(h, routers_kept_from)) for h in h_arm]
    routers = [min(1.0, h / w, max(h, arms_kept_from)) for h in h_r]
    return arms, routers


def control_family(rows: Sequence[tuple[Comparison, OwnDecision]], settings: ReportSettings,
                   router_p: Sequence[float] = ()) -> tuple[list[Family], list[float]]:
    """Both families: each row's Family (a tested row's p_decision, p_holm and adjusted interval, its decision
    restated at its adjusted level or downgraded to inconclusive where the procedure does not keep it), and the
    adjusted p-value of each router claim (`router_p`: the p-values of the claims, one per tested row with a
    router)."""
    tested = [i for i, (_, own) in enumerate(rows) if own.tested]
    arm_p = [_p_decision(*rows[i], settings) for i in tested]
    if settings.router_family == "shared":
        arm_adjusted, router_adjusted = two_families(arm_p, list(router_p))
    else:
        arm_adjusted, router_adjusted = holm(arm_p), holm(list(router_p))
    size = len(arm_adjusted)
    tests = size + (len(router_p) if settings.router_family == "shared" else 0)
    adjusted = dict(zip(tested, zip(arm_p, arm_adjusted, strict=True), strict=True))
    families = [_adjusted(c, own, *adjusted[i], size, tests, settings) if i in adjusted
                else Family(size, own.decision) for i, (c, own) in enumerate(rows)]
    return families, router_adjusted


def _tested(c: Comparison, own: OwnDecision) -> tuple[Estimate, Decision]:
    """A tested row's estimate and own decision (experiments.report.verdict.compare.row_decision tests only a row
    with both)."""
    if c.estimate is None or own.decision is None:
        raise ValueError(f"{c.benchmark} {c.level}: a tested row without an estimate or a decision")
    return c.estimate, own.decision


def _p_decision(c: Comparison, own: OwnDecision, settings: ReportSettings) -> float:
    """The p-value of the row's own decision's boundary test (else the smaller of the two)."""
    estimate, decision = _tested(c, own)
    p = claim_p_values(estimate, settings.tolerance, c.rag_cheaper)
    return p[decision.kind] if decision.kind in p else min(p.values())


def _adjusted(c: Comparison, own: OwnDecision, p_decision: float, p_holm: float, size: int, tests: int,
              settings: ReportSettings) -> Family:
    estimate, decision = _tested(c, own)
    p = claim_p_values(estimate, settings.tolerance, c.rag_cheaper)
    kind = decision.kind if decision.kind in p else min(p, key=lambda k: p[k])
    ratio = p_decision / p_holm if p_holm > 0 else 1.0
    level = claim_levels(c.rag_cheaper, strict=estimate.strict)[kind]
    confidence = 1 - level * ratio
    ci = estimate.interval(confidence)  # the interval whose test is the family's
    if decision.kind in (RAG, LONGCTX) and p_holm >= ALPHA:
        what = "tests (arm decisions and router claims)" if tests > size else "decisions"
        decision = Decision(INCONCLUSIVE, f"the row's own interval alone says {decision.kind}, but this "
                                          f"report makes {tests} {what} and with their correction its p-value "
                                          f"({p_holm:.3f}) is not below {ALPHA:g}")
    elif decision.kind in (RAG, LONGCTX):  # the same decision, its words judged on the interval it is shown with
        decision = decide(estimate, settings.tolerance, c.rag_cheaper, alpha=ALPHA * ratio)
    return Family(size, decision, p_decision, p_holm, ci, confidence)
