"""A verdict row: what one benchmark and length level compared (configs, difference, interval, decision,
router), and its verdict.csv columns. experiments.report.verdict.compare fills it in."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from eval.metrics.confidence import Estimate
from experiments.report.runs import Run
from experiments.report.verdict.crossfit import Candidates
from experiments.report.verdict.decision import Decision
from experiments.report.verdict.oracle import OracleResult

ALL = "all"


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
    decision: Decision | None = None
    selection: str = ""  # how the configs were chosen
    configs_compared: int = 0  # long-context plus RAG candidate configs
    n_groups: int = 0  # documents the interval resamples
    naive_lc: Run | None = None  # the same-sample picks on all samples (not selection-adjusted)
    naive_rag: Run | None = None
    naive_diff: float | None = None
    correct_shares: tuple[float | None, float | None] | None = None  # (RAG, long context) share answered correctly
    recommendation: str = ""
    halves_agree: bool | None = None  # cross-fitted: the halves chose the configs shown in most splits
    halves_agreement: float | None = None  # cross-fitted: share of the splits whose two halves chose them
    estimate: Estimate | None = None  # the difference's t distribution: interval and claim p-values
    ci_family: tuple[float, float] | None = None  # the interval at the family-adjusted level (family.py)
    ci_family_confidence: float | None = None  # its confidence: the level the decision was tested at
    # every config of both arms at this level: what the plan simulates (not in summary.json: the plans are)
    candidates: Candidates | None = field(default=None, metadata={"summary_json": False})
    pooled: list[tuple[str, float]] | None = None  # (document, RAG - long context in points) per pooled sample
    tested: bool = False  # the row's decision is one of the report's family of tests
    p_decision: float | None = None  # p-value of the boundary test of the row's decision (report.verdict.family)
    p_holm: float | None = None  # the same, Holm-adjusted over the family
    family_size: int = 0  # decisions in the family
    router: Any = None  # experiments.report.router.evaluate.RouterRow: the learned router over this row's configs
    arm_decision: Decision | None = None  # a row decided `route`: the decision between the single arms

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
            "longctx_own_score": _r(self.lc_own_score), "rag_own_score": _r(self.rag_own_score),
            "rag_within_tolerance": self.within_tolerance, "n_shared": self.n_shared,
            "diff_rag_minus_longctx": _r(self.diff), "ci95_low": _r(self.ci[0]) if self.ci else None,
            "ci95_high": _r(self.ci[1]) if self.ci else None, "p_value": _r(self.p_value, 4),
            "prompt_token_ratio": _r(self.token_ratio, 4), "latency_ratio": _r(self.latency_ratio, 4),
            "cost_ratio": _r(self.cost_ratio, 4), "cost_ratio_low": _r(self.cost_ratio_low, 4),
            "cost_ratio_high": _r(self.cost_ratio_high, 4), "cost_tie": self.cost_tie,
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



def cost_tie(low: float | None, high: float | None) -> bool:
    """An interval of RAG ÷ long context's cost that holds 1: neither arm is the cheaper one."""
    return low is not None and high is not None and low <= 1.0 <= high


def _r(v: float | None, digits: int = 2) -> float | None:
    return None if v is None else round(float(v), digits)


def on_scale(ci: tuple[float, float]) -> tuple[float, float]:
    """An interval of a difference of 0..1 scores in points, cut to the [-100, +100] it can take (a t with one
    degree of freedom over two documents gave [-292.7, +342.7])."""
    return max(-100.0, ci[0]), min(100.0, ci[1])


def level_filter(row: VerdictRow) -> str | None:
    """The level a row reads records at: None (every level) for the row over all levels."""
    return None if row.level == ALL else row.level
