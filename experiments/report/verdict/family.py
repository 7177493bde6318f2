"""Many rows, one family: a report with several verdict rows (length levels x benchmarks x
generators) makes several decisions, and the chance that at least one of them is wrong grows with
their number (8 rows each wrong 2.5% of the time: about 18%). Holm's step-down procedure (Holm
1979) keeps the family-wise error rate, the chance of any wrong decision, at 5%, whatever the
dependence between the rows (the all-levels row shares its samples with the level rows).

Each row's decision is a one-sided claim against a boundary (experiments.report.verdict.decision:
`boundaries`, `claim_p_values`), whose p-value comes from the row's estimate, so p < 0.05 exactly when
the row's 95% interval clears the boundary; the row's p-value (`p_decision`) is that of the decision
the interval makes (else the smaller of the two). The family is every row that can decide: one with
an interval from honestly chosen configs (not `naive`), at least MIN_DOCUMENTS documents, and not at
the floor or ceiling (`no_decision`). Holm orders the family's m p-values p(1) <= ... <= p(m) and keeps
decision k while p(j) x (m - j + 1) < 0.05 for every j <= k (the Holm-adjusted p-value, `p_holm`, is
below 0.05). A row whose own interval decides but whose adjusted p-value does not is shown as
inconclusive, saying why, and the interval the first screen shows for a tested row is the
family-adjusted one (`ci_family`): the interval at confidence 1 - 0.05 x p / p_holm, which clears the
boundary exactly when Holm keeps the decision, so the screen never shows an interval that decides
beside a decision that does not.

The router waits its turn (serial gatekeeping, a closed testing procedure): the learned routers' claims
"router - better single arm > tolerance" (experiments.report.router.evaluate) form a second family,
tested with Holm at 5% only once every decision of the first family is kept; otherwise they are not
tested. Asking about a router therefore costs the arm decisions no power, and the family-wise error of
both families together stays at 5%.
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence

from experiments.report.settings import ReportSettings
from experiments.report.verdict.decision import ALPHA, INCONCLUSIVE, LONGCTX, RAG, Decision, claim_p_values



class Claim(Protocol):
    """A test of the second family: its p-value, and what follows from its Holm-adjusted p-value (None:
    not tested, the gate stayed shut)."""

    p_value: float

    def settle(self, p_holm: float | None) -> None: ...


def holm(p_values: list[float]) -> list[float]:
    """Holm-adjusted p-values, in the input's order: max over j <= k of min(1, (m - j + 1) p(j))."""
    m = len(p_values)
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(sorted(range(m), key=lambda i: p_values[i])):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def control_family(rows: list[Any], settings: ReportSettings) -> int:
    """The first family, the rows' decisions: set each tested row's p_decision, p_holm, ci_family and
    family_size, and downgrade the decisions Holm does not keep to inconclusive. Returns the number of
    tests in the family."""
    family = [r for r in rows if r.tested]
    for row in family:
        p = claim_p_values(row.estimate, settings.tolerance, row.rag_cheaper)
        row.p_decision = p[row.decision.kind] if row.decision.kind in p else min(p.values())
    adjusted = holm([r.p_decision for r in family])
    size = len(adjusted)
    for row, p_holm in zip(family, adjusted):
        row.p_holm = p_holm
        if p_holm > row.p_decision > 0:  # the interval whose boundary test is Holm's
            row.ci_family = row.estimate.interval(1 - ALPHA * row.p_decision / p_holm)
        if size > 1 and row.decision.kind in (RAG, LONGCTX) and p_holm >= ALPHA:
            row.decision = Decision(INCONCLUSIVE, f"the 95% interval alone says {row.decision.kind}, but this report "
                                                  f"makes {size} decisions and with Holm's correction its "
                                                  f"p-value ({p_holm:.3f}) is not below {ALPHA:g}")
    for row in rows:
        row.family_size = size
    return size


def gatekeep(rows: list[Any], claims: Sequence[Claim]) -> bool:
    """The second family (the routers' claims), after the first: tested with Holm only when every tested
    row's decision was kept (serial gatekeeping); each claim is settled with its adjusted p-value, or
    with None when the gate stayed shut. Returns whether the gate opened."""
    open_ = all(r.decision is not None and r.decision.kind in (RAG, LONGCTX) for r in rows if r.tested)
    adjusted = holm([c.p_value for c in claims]) if open_ else [None] * len(claims)
    for claim, p_holm in zip(claims, adjusted):
        claim.settle(p_holm)
    return open_
