"""Many rows, one family: a report with several verdict rows (length levels x benchmarks x
generators) makes several decisions, and the chance that at least one of them is wrong grows with
their number (8 rows each wrong 2.5% of the time: about 18%). Holm's step-down procedure (Holm
1979) keeps the family-wise error rate, the chance of any wrong decision, at 5%, whatever the
dependence between the rows (the all-levels row shares its samples with the level rows).

Each row's decision is a one-sided test against a boundary of experiments.report.verdict.decision.decide,
given which arm is cheaper (`boundaries`): `rag` claims RAG - long context > b_rag (0, or
-tolerance when RAG is cheaper), `longctx` claims it is < b_lc (-tolerance, or +tolerance when long
context is cheaper). The p-value of a claim is twice the share of the interval's resampled
differences on the wrong side of its boundary, so p < 0.05 exactly when the row's 95% interval
clears the boundary; the row's p-value (`p_decision`) is that of the decision the interval makes
(else the smaller of the two). The family is every row that can decide: one with an interval from
honestly chosen configs (not `naive`) and not at the floor or ceiling (`no_decision`). Holm orders
the family's m p-values p(1) <= ... <= p(m) and keeps decision k while p(j) x (m - j + 1) < 0.05
for every j <= k (the Holm-adjusted p-value, `p_holm`, is below 0.05). A row whose 95% interval
decides but whose adjusted p-value does not is shown as inconclusive, saying why. With one row
nothing changes. A row with a learned router adds one more test to the family: "router minus the
better single arm > tolerance" (experiments.report.router.evaluate); where Holm keeps it the row decides
`route`. Holm rather than Bonferroni-widened simultaneous intervals: it makes the same
guarantee and decides at least as often; the intervals shown stay the rows' own 95% intervals.
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence

import numpy as np

from experiments.report.settings import ReportSettings
from experiments.report.verdict.decision import INCONCLUSIVE, LONGCTX, RAG, Decision

ALPHA = 0.05  # family-wise error rate


class Claim(Protocol):
    """A test of the family besides the rows' decisions: its p-value, and what follows from its
    Holm-adjusted p-value once the whole family is known."""

    p_value: float

    def settle(self, p_holm: float) -> None: ...


def boundaries(tolerance: float, rag_cheaper: bool | None) -> tuple[float, float]:
    """(b_rag, b_lc): `rag` is decided above b_rag, `longctx` below b_lc (points)."""
    return (-tolerance if rag_cheaper else 0.0), (tolerance if rag_cheaper is False else -tolerance)


def claim_p_values(resampled: np.ndarray, tolerance: float, rag_cheaper: bool | None) -> dict[str, float]:
    """{decision: p-value of its boundary test} from the interval's resampled differences (points)."""
    b_rag, b_lc = boundaries(tolerance, rag_cheaper)
    res = np.asarray(resampled, dtype=float)
    return {RAG: float(min(1.0, 2 * np.mean(res <= b_rag))), LONGCTX: float(min(1.0, 2 * np.mean(res >= b_lc)))}


def holm(p_values: list[float]) -> list[float]:
    """Holm-adjusted p-values, in the input's order: max over j <= k of min(1, (m - j + 1) p(j))."""
    m = len(p_values)
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(sorted(range(m), key=lambda i: p_values[i])):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def control_family(rows: list[Any], settings: ReportSettings, claims: Sequence[Claim] = ()) -> int:
    """Set each tested row's p_decision, p_holm and family_size and downgrade the decisions Holm does not
    keep to inconclusive. `claims`: further tests of the same family (a learned router's "router - best arm
    > tolerance", experiments.report.router.evaluate), each told its Holm-adjusted p-value. Returns the
    number of tests in the family."""
    family = [r for r in rows if r.tested]
    for row in family:
        p = claim_p_values(row.resampled, settings.tolerance, row.rag_cheaper)
        row.p_decision = p[row.decision.kind] if row.decision.kind in p else min(p.values())
    adjusted = holm([r.p_decision for r in family] + [c.p_value for c in claims])
    size = len(adjusted)
    for row, p_holm in zip(family, adjusted):
        row.p_holm = p_holm
        if size > 1 and row.decision.kind in (RAG, LONGCTX) and p_holm >= ALPHA:
            row.decision = Decision(INCONCLUSIVE, f"the 95% interval alone says {row.decision.kind}, but this report "
                                                  f"makes {size} tests and with Holm's correction its "
                                                  f"p-value ({p_holm:.3f}) is not below {ALPHA:g}")
    for claim, p_holm in zip(claims, adjusted[len(family):]):
        claim.settle(p_holm)
    for row in rows:
        row.family_size = size
    return size
