"""A verdict row: the composition of the frozen results of the verdict's stages, in the order
experiments.report.decision_order makes them: what one benchmark and length level compared (`comparison`,
experiments.report.verdict.compare), the decision its own interval makes (`own`), the learned router over its two
configs (`router`, experiments.report.router.evaluate), the decision after the report's family of tests (`family`,
experiments.report.verdict.family) and the sentence a team can act on (`words`, experiments.report.verdict.sentence).
No stage changes another's result; the row is made once all are. Its verdict.csv columns, its plan, and finding
rows (a benchmark's row over all levels, the rows whose oracle router is shown) are here too."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from experiments.report.router.evaluate import RouterRow
from experiments.report.runs import Run
from experiments.report.settings import ReportSettings
from experiments.report.verdict.decision import Decision, OwnDecision
from experiments.report.verdict.family import Family
from experiments.report.verdict.oracle import OracleResult
from experiments.report.verdict.power import plan_row
from experiments.report.verdict.row import ALL, Comparison
from experiments.report.verdict.sentence import Words


@dataclass(frozen=True)
class VerdictRow:
    comparison: Comparison
    own: OwnDecision
    family: Family
    router: RouterRow | None = None  # None: the row lacks an arm, or its documents are too few to learn one
    words: Words = Words()

    # what most readers need, from the stage that made it
    @property
    def benchmark(self) -> str:
        return self.comparison.benchmark

    @property
    def level(self) -> str:
        return self.comparison.level

    @property
    def lc(self) -> Run | None:
        return self.comparison.lc

    @property
    def rag(self) -> Run | None:
        return self.comparison.rag

    @property
    def diff(self) -> float | None:
        return self.comparison.diff

    @property
    def ci(self) -> tuple[float, float] | None:
        return self.comparison.ci

    @property
    def n_groups(self) -> int:
        return self.comparison.n_groups

    @property
    def oracle(self) -> OracleResult | None:
        return self.comparison.oracle

    @property
    def decision(self) -> Decision | None:
        """The row's decision, after the family's correction."""
        return self.family.decision

    @property
    def arm_decision(self) -> Decision | None:
        """A row decided `route`: the decision between the single arms; None otherwise."""
        return self.family.arm_decision

    @property
    def tested(self) -> bool:
        """The row's own decision is one of the report's family of tests."""
        return self.own.tested

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
                "router_file": rr.file_name if rr else ""}

    def as_csv(self) -> dict[str, Any]:
        c, f = self.comparison, self.family
        return {
            "benchmark": c.benchmark, "level": c.level,
            "longctx_config": c.lc.label if c.lc else "", "longctx_score": _r(c.lc_score),
            "rag_config": c.rag.label if c.rag else "", "rag_score": _r(c.rag_score),
            "longctx_own_score": _r(c.lc_own_score), "rag_own_score": _r(c.rag_own_score),
            "rag_within_tolerance": c.within_tolerance, "n_shared": c.n_shared,
            "diff_rag_minus_longctx": _r(c.diff), "ci95_low": _r(c.ci[0]) if c.ci else None,
            "ci95_high": _r(c.ci[1]) if c.ci else None, "p_value": _r(c.p_value, 4),
            "prompt_token_ratio": _r(c.token_ratio, 4), "latency_ratio": _r(c.latency_ratio, 4),
            "cost_ratio": _r(c.cost_ratio, 4), "cost_ratio_low": _r(c.cost_ratio_low, 4),
            "cost_ratio_high": _r(c.cost_ratio_high, 4), "cost_tie": c.cost_tie,
            "best_rag_config": c.best_rag.label if c.best_rag else "", "best_rag_score": _r(c.best_rag_score),
            "oracle_router_score": _r(c.oracle.score) if c.oracle else None,
            "oracle_router_share_rag": _r(c.oracle.share_first, 4) if c.oracle else None,
            "decision": self.decision.kind if self.decision else "",
            "selection": c.selection, "configs_compared": c.configs_compared, "n_groups": c.n_groups,
            "naive_longctx_config": c.naive_lc.label if c.naive_lc else "",
            "naive_rag_config": c.naive_rag.label if c.naive_rag else "",
            "naive_diff_rag_minus_longctx": _r(c.naive_diff),
            "rag_share_correct": _r(c.correct_shares[0], 4) if c.correct_shares else None,
            "longctx_share_correct": _r(c.correct_shares[1], 4) if c.correct_shares else None,
            "oracle_router_share_tie": _r(c.oracle.share_tie, 4) if c.oracle else None,
            **self.router_csv(),
            "halves_agree": "" if c.halves_agree is None else c.halves_agree,
            "halves_agreement": _r(c.halves_agreement, 4),
            "ci_family_low": _r(f.ci[0]) if f.ci else None,
            "ci_family_high": _r(f.ci[1]) if f.ci else None,
            "ci_family_confidence": _r(f.confidence, 5),
            "oracle_corrected_score": _r(c.oracle.corrected.score) if c.oracle and c.oracle.corrected else None,
            "oracle_gain_real": bool(c.oracle and c.oracle.corrected and c.oracle.corrected.real),
            "p_decision": _r(f.p_decision, 4), "p_holm": _r(f.p_holm, 4), "family_size": f.size,
            "recommendation": self.words.recommendation,
        }


def _r(v: float | None, digits: int = 2) -> float | None:
    return None if v is None else round(float(v), digits)


def plan_rows(vrows: list[VerdictRow], settings: ReportSettings, power: float = 0.8,
              difference: float | None = None, observed: bool = False) -> list[dict[str, Any]]:
    """The plan of every verdict row, in the rows' order (experiments.report.verdict.power.plan_row): a `route` row
    plans its single-arm decision."""
    return [plan_row(v.comparison, v.arm_decision or v.decision, v.family.size, settings, power, difference, observed)
            for v in vrows]


def oracle_rows(rows: list[VerdictRow]) -> list[VerdictRow]:
    """The rows whose oracle router is listed beside the configs: each benchmark's row over all levels, or
    its only row."""
    return [v for v in rows if v.oracle and (v.level == ALL or sum(x.benchmark == v.benchmark for x in rows) == 1)]


def overall_row(rows: list[VerdictRow], benchmark: str) -> VerdictRow | None:
    """A benchmark's row over all levels, else its first row."""
    mine = [v for v in rows if v.benchmark == benchmark]
    return next((v for v in mine if v.level == ALL), mine[0] if mine else None)
