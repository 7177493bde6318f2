"""RAG ÷ long context's cost per answer, with the interval its prices carry, and the cost tie.

Under `price=cpu` every answer is charged its tokens at the per-token CPU rates one probe measured
(llm/work_probe.py), and those rates are uncertain: the probe's batches are noisy, and long prompts are priced where
the probe measured few. The probe refits its rates on its own residuals (`llm.work_model.WorkModel.draws`); the ratio
is priced at every draw. How far a refit moves the ratio (on a log scale, either way: the non-negative fit makes the
refits lopsided where a rate sits at zero) has a `LEVEL` quantile; another probe's ratio differs from this one's by
the noise of both probes, sqrt(2) times that (`REPEAT`), and the interval is the point times and divided by it: where
another probe of the same setup would put the ratio, 95% of the time (perf/probe_spread.py measures how often five
probes' intervals hold each other's points). A deployment cost is affine in the rates (each answer's features times the
rates, plus its measured retrieval and the index's cost), so the costs at every draw come from the costs at the rates'
unit vectors, exactly (checked against the point; where the check fails, each draw is priced in full).

Token and API prices (a per-token price, or the records' own cost_usd under one) are exact counts at published
prices: the interval is the point. So is time measured without a probe (nothing models its noise); the report says
which (`Pricing.basis`).

A **cost tie**: the interval holds 1, so neither arm is the cheaper one. `Comparison.rag_cheaper` is then None, and
the decision tests only the claims that need no cheaper arm (experiments.report.verdict.decision): `rag` when RAG is
better (its interval above 0), `longctx` when long context is better by more than the tolerance; neither "no worse
than the tolerance and cheaper" claim.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from experiments.report.pricing import Pricing, deployment_cost
from experiments.report.runs import Run
from experiments.report.settings import ReportSettings

LEVEL = 0.95
# another probe's ratio differs from this one's by the noise of both: sqrt(2) times one probe's own
REPEAT = 2 ** 0.5


@dataclass(frozen=True)
class CostRatio:
    point: float
    low: float
    high: float

    @property
    def tie(self) -> bool:
        """Neither arm is the cheaper one: the interval holds 1."""
        return self.low <= 1.0 <= self.high


def cost_ratio(rag: Run, lc: Run, pricing: Pricing, settings: ReportSettings, level: str | None) -> CostRatio | None:
    """RAG ÷ long context's deployment cost (`deployment_cost`) with its interval; None when either is unknown."""
    rag_cost, lc_cost = deployment_cost(rag, pricing, settings, level), deployment_cost(lc, pricing, settings, level)
    if rag_cost is None or not lc_cost:
        return None
    point = rag_cost / lc_cost
    draws = pricing.rate_draws
    if not draws:
        return CostRatio(point, point, point)
    at_rag, at_lc = (_costs_at_draws(run, pricing, settings, level, draws) for run in (rag, lc))
    keep = (at_lc > 0) & (at_rag > 0)
    if not keep.any() or point <= 0:
        return CostRatio(point, point, point)
    moved = np.abs(np.log(at_rag[keep] / at_lc[keep] / point))  # how far a refit moves the ratio, either way
    reach = REPEAT * float(np.quantile(moved, LEVEL))
    return CostRatio(point, point * float(np.exp(-reach)), point * float(np.exp(reach)))


def _costs_at_draws(run: Run, pricing: Pricing, settings: ReportSettings, level: str | None,
                    draws: tuple[tuple[float, ...], ...]) -> np.ndarray:
    """The run's deployment cost at every draw of the rates: from its costs at zero and at each unit vector (the cost
    is affine in the rates), checked at the point rates; priced draw by draw where the check fails."""
    n = len(draws[0])

    def at(rates) -> float:
        cost = deployment_cost(run, pricing.at_rates(rates), settings, level)
        return float("nan") if cost is None else cost

    base = at(np.zeros(n))
    slopes = np.array([at(np.eye(n)[i]) - base for i in range(n)])
    assert pricing.work is not None  # the draws are the work model's (Pricing.rate_draws)
    point, rates = deployment_cost(run, pricing, settings, level), np.asarray(pricing.work.rates)
    if point is not None and np.isfinite(slopes).all() and abs(base + slopes @ rates - point) <= 1e-6 * abs(point):
        return base + np.asarray(draws) @ slopes
    return np.array([at(d) for d in draws])
