"""The comparison stage of a verdict row (experiments.report.verdict.compare makes it): what one benchmark and
length level compared (configs, scores, difference, interval, ratios, oracle, how the configs were chosen). The
later stages (the decision, the family, the router, the words) are their own frozen results, and the row is their
composition (experiments.report.verdict_row.VerdictRow)."""

from __future__ import annotations

from dataclasses import dataclass, field

from eval.metrics.confidence import Estimate
from experiments.report.runs import Run
from experiments.report.verdict.crossfit import Candidates
from experiments.report.verdict.oracle import OracleResult

ALL = "all"


@dataclass(frozen=True)
class Comparison:
    benchmark: str
    level: str
    lc: Run | None = None
    lc_score: float | None = None
    rag: Run | None = None  # the cheapest RAG config within tolerance of the best RAG config
    rag_score: float | None = None
    within_tolerance: bool = False
    best_rag: Run | None = None
    best_rag_score: float | None = None
    # each shown config's own mean score on all its samples (cross-fitted rows: not selection-adjusted, and not
    # what lc_score / rag_score are: those are on the samples Δ is over, so that rag_score - lc_score = diff)
    lc_own_score: float | None = None
    rag_own_score: float | None = None
    n_shared: int = 0
    diff: float | None = None  # RAG - long context, points
    ci: tuple[float, float] | None = None
    p_value: float | None = None
    token_ratio: float | None = None
    latency_ratio: float | None = None
    cost_ratio: float | None = None
    cost_basis: str = ""  # what the cost ratio is priced by (experiments.report.pricing.Pricing.basis); "" without one
    # the cost ratio's interval (experiments.report.verdict.cost_ratio): the probe's uncertainty under price=cpu, the
    # point itself for exact token prices
    cost_ratio_low: float | None = None
    cost_ratio_high: float | None = None
    oracle: OracleResult | None = None
    selection: str = ""  # how the configs were chosen
    configs_compared: int = 0  # long-context plus RAG candidate configs
    n_groups: int = 0  # documents the interval resamples
    naive_lc: Run | None = None  # the same-sample picks on all samples (not selection-adjusted)
    naive_rag: Run | None = None
    naive_diff: float | None = None
    correct_shares: tuple[float | None, float | None] | None = None  # (RAG, long context) share answered correctly
    halves_agree: bool | None = None  # cross-fitted: the halves chose the configs shown in most splits
    halves_agreement: float | None = None  # cross-fitted: share of the splits whose two halves chose them
    estimate: Estimate | None = None  # the difference's t distribution: interval and claim p-values
    # every config of both arms at this level: what the plan simulates (not in summary.json: the plans are)
    candidates: Candidates | None = field(default=None, metadata={"summary_json": False})
    pooled: list[tuple[str, float]] | None = None  # (document, RAG - long context in points) per pooled sample

    @property
    def cost_tie(self) -> bool:
        """The cost ratio's interval holds 1: neither arm is the cheaper one."""
        return cost_tie(self.cost_ratio_low, self.cost_ratio_high)

    @property
    def rag_cheaper(self) -> bool | None:
        """As the decision reads it: the cost ratio, else the prompt-token ratio; None where neither arm is the
        cheaper one (a cost tie: the cost ratio's interval holds 1) or the cost is unknown."""
        if self.cost_tie:
            return None
        cheaper = self.cost_ratio if self.cost_ratio is not None else self.token_ratio
        return None if cheaper is None else cheaper < 1

    @property
    def cost_words(self) -> str:
        """Which arm is cheaper, in words: "RAG cheaper", "long context cheaper", "cost tie" (the interval holds 1)
        or "cost unknown"."""
        if self.cost_tie:
            return "cost tie"
        cheaper = self.rag_cheaper
        return "cost unknown" if cheaper is None else "RAG cheaper" if cheaper else "long context cheaper"

    def cost_phrase(self) -> str:
        """", 0.54x the cost per answer [0.48-0.61] (priced by ...)", ", a cost tie: 0.98x the cost per answer
        [0.85-1.12] ..." (exact prices: no interval), or "" without a cost ratio: what a sentence says of the cost."""
        if self.cost_ratio is None:
            return ""
        low, high = self.cost_ratio_low, self.cost_ratio_high
        shown = f"{self.cost_ratio:.2f}x the cost per answer" + (
            f" [{low:.2f}-{high:.2f}]" if low is not None and high is not None and low < high else "")
        shown += f" (priced by {self.cost_basis})" if self.cost_basis else ""
        return f", a cost tie: {shown}" if self.cost_tie else f", {shown}"

    @property
    def known_correct_shares(self) -> tuple[float, float] | None:
        """(RAG, long context) shares answered correctly, when both are known."""
        rag, lc = self.correct_shares or (None, None)
        return (rag, lc) if rag is not None and lc is not None else None

    @property
    def naive_picks_matter(self) -> bool:
        """The same-sample picks say something beside the verdict: both exist and more than two configs
        were compared (with one config per arm they are the verdict's own)."""
        return self.naive_lc is not None and self.naive_rag is not None and self.configs_compared > 2


def cost_tie(low: float | None, high: float | None) -> bool:
    """An interval of RAG ÷ long context's cost that holds 1: neither arm is the cheaper one."""
    return low is not None and high is not None and low <= 1.0 <= high


def on_scale(ci: tuple[float, float]) -> tuple[float, float]:
    """An interval of a difference of 0..1 scores in points, cut to the [-100, +100] it can take (a t with one
    degree of freedom over two documents gave [-292.7, +342.7])."""
    return max(-100.0, ci[0]), min(100.0, ci[1])


def level_filter(row: Comparison) -> str | None:
    """The level a row reads records at: None (every level) for the row over all levels."""
    return None if row.level == ALL else row.level
