"""The verdict: per benchmark and length level, the best long-context config against the cheapest
RAG config whose score is within a tolerance of it, with a paired bootstrap over shared samples.

- Long-context candidates: arm `longctx` runs without a token budget (budget-matched runs are a
  control, shown elsewhere). The best is the highest score at that level (ties: fewer tokens).
- RAG candidates: arm `rag` runs with scores (retrieval-only runs have none). The chosen one is
  the cheapest (deployment cost per answer: generation plus indexing spread over the configured
  queries per document; ties: fewer prompt tokens) whose score is at least the long-context score
  minus the tolerance; when none is, the best-scoring RAG config.
- The difference is RAG minus long context, in points (x100), with its paired-bootstrap 95%
  interval over the samples both configs scored (eval.metrics.confidence.paired_bootstrap).
- Ratios are RAG / long context of mean prompt tokens, mean latency and cost per answer.
- The oracle router is the per-sample better of the best long-context and the best RAG config.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from eval.metrics.confidence import paired_bootstrap
from experiments.arms import ROLE_LONGCTX, ROLE_RAG
from experiments.report.oracle import OracleResult, oracle_router
from experiments.report.pricing import Pricing
from experiments.report.settings import ReportSettings
from experiments.report.run_dirs import Run, levels_of

ALL = "all"
SMALL_SAMPLE = 30  # fewer shared samples than this: the sentence says the verdict is only indicative


@dataclass
class VerdictRow:
    benchmark: str
    level: str
    lc: Run | None = None
    lc_score: float | None = None
    rag: Run | None = None  # cheapest RAG within tolerance, else the best RAG
    rag_score: float | None = None
    within_tolerance: bool = False
    best_rag: Run | None = None
    best_rag_score: float | None = None
    n_shared: int = 0
    diff: float | None = None  # RAG - long context, points
    ci: tuple[float, float] | None = None
    p_value: float | None = None
    token_ratio: float | None = None
    latency_ratio: float | None = None
    cost_ratio: float | None = None
    oracle: OracleResult | None = None
    recommendation: str = ""

    def as_csv(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark, "level": self.level,
            "longctx_config": self.lc.label if self.lc else "", "longctx_score": _r(self.lc_score),
            "rag_config": self.rag.label if self.rag else "", "rag_score": _r(self.rag_score),
            "rag_within_tolerance": self.within_tolerance, "n_shared": self.n_shared,
            "diff_rag_minus_longctx": _r(self.diff), "ci95_low": _r(self.ci[0]) if self.ci else None,
            "ci95_high": _r(self.ci[1]) if self.ci else None, "p_value": _r(self.p_value, 4),
            "prompt_token_ratio": _r(self.token_ratio, 4), "latency_ratio": _r(self.latency_ratio, 4),
            "cost_ratio": _r(self.cost_ratio, 4),
            "best_rag_config": self.best_rag.label if self.best_rag else "", "best_rag_score": _r(self.best_rag_score),
            "oracle_router_score": _r(self.oracle.score) if self.oracle else None,
            "oracle_router_share_rag": _r(self.oracle.share_first, 4) if self.oracle else None,
            "recommendation": self.recommendation,
        }


def _r(v: float | None, digits: int = 2) -> float | None:
    return None if v is None else round(float(v), digits)


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b not in (None, 0) else None


def longctx_candidates(runs: list[Run]) -> list[Run]:
    return [r for r in runs if r.spec.role == ROLE_LONGCTX and not r.budget_matched and r.scores()]


def rag_candidates(runs: list[Run]) -> list[Run]:
    return [r for r in runs if r.spec.role == ROLE_RAG and r.scores()]


def deployment_cost(run: Run, pricing: Pricing, settings: ReportSettings, level: str | None = None) -> float | None:
    """Cost per answer: generation plus the run's indexing cost per document over queries per document."""
    gen = pricing.mean_answer_cost(run, level)
    if gen is None:
        return None
    return gen + pricing.index_cost_per_doc(run) / settings.queries_per_doc


def _best(runs: list[Run], level: str | None) -> tuple[Run | None, float | None]:
    scored = [(r.score_at(level), r) for r in runs]
    scored = [(s, r) for s, r in scored if s is not None]
    if not scored:
        return None, None
    s, r = max(scored, key=lambda sr: (round(sr[0], 9), -(sr[1].mean_of("prompt_tokens", level) or 0)))
    return r, s


def verdict_row(benchmark: str, level: str, runs: list[Run], pricing: Pricing, settings: ReportSettings) -> VerdictRow:
    lvl = None if level == ALL else level
    row = VerdictRow(benchmark, level)
    row.lc, row.lc_score = _best(longctx_candidates(runs), lvl)
    rags = rag_candidates(runs)
    row.best_rag, row.best_rag_score = _best(rags, lvl)
    if row.best_rag is None:
        row.recommendation = recommend(row, settings)
        return row
    if row.lc is None:
        row.rag, row.rag_score = row.best_rag, row.best_rag_score
        row.recommendation = recommend(row, settings)
        return row
    within = [r for r in rags if (r.score_at(lvl) is not None and r.score_at(lvl) >= row.lc_score - settings.tolerance - 1e-9)]
    if within:
        def cost_key(r: Run) -> tuple[float, float]:
            c = deployment_cost(r, pricing, settings, lvl)
            toks = r.mean_of("prompt_tokens", lvl) or 0.0
            return (c if c is not None else toks, toks)

        row.rag = min(within, key=cost_key)
        row.rag_score, row.within_tolerance = row.rag.score_at(lvl), True
    else:
        row.rag, row.rag_score = row.best_rag, row.best_rag_score
    a, b = row.rag.scores(lvl), row.lc.scores(lvl)
    shared = sorted(set(a) & set(b))
    row.n_shared = len(shared)
    if shared:
        res = paired_bootstrap([a[i] for i in shared], [b[i] for i in shared], n_resamples=settings.resamples,
                               seed=settings.seed)
        row.diff, row.ci, row.p_value = 100 * res.diff, (100 * res.ci95[0], 100 * res.ci95[1]), res.p_value
    row.token_ratio = _ratio(row.rag.mean_of("prompt_tokens", lvl), row.lc.mean_of("prompt_tokens", lvl))
    row.latency_ratio = _ratio(row.rag.mean_of("latency_s", lvl), row.lc.mean_of("latency_s", lvl))
    row.cost_ratio = _ratio(deployment_cost(row.rag, pricing, settings, lvl), deployment_cost(row.lc, pricing, settings, lvl))
    row.oracle = oracle_router(row.best_rag, row.lc, lvl)
    row.recommendation = recommend(row, settings)
    return row


def _times(ratio: float) -> str:
    return f"{1 / ratio:.1f}x fewer" if ratio < 1 else f"{ratio:.1f}x more"


def recommend(row: VerdictRow, settings: ReportSettings) -> str:
    """One sentence a team can act on."""
    tol = settings.tolerance
    if row.lc is None and row.rag is None:
        return "No long-context or RAG run with scores for this benchmark and level."
    if row.lc is None:
        return f"No long-context run to compare with; the best RAG config is {row.rag.label} ({row.rag_score:.1f})."
    if row.rag is None:
        return f"No scored RAG run to compare with; long context ({row.lc.label}) scores {row.lc_score:.1f}."
    ci = f"95% CI [{row.ci[0]:+.1f}, {row.ci[1]:+.1f}]" if row.ci else "no shared samples"
    diff = f"{row.diff:+.1f} points" if row.diff is not None else f"{row.rag_score - row.lc_score:+.1f} points"
    tokens = f"{_times(row.token_ratio)} prompt tokens" if row.token_ratio else "unknown prompt tokens"
    cost = f", {row.cost_ratio:.2f}x the cost" if row.cost_ratio is not None else ""
    latency = ""
    target = settings.latency_target_s
    lc_lat, rag_lat = row.lc.mean_of("latency_s", _lvl(row)), row.rag.mean_of("latency_s", _lvl(row))
    if target is not None and lc_lat is not None and rag_lat is not None:
        if lc_lat > target >= rag_lat:
            latency = f" Only RAG meets the {target:g} s latency target."
        elif rag_lat > target >= lc_lat:
            latency = f" Only long context meets the {target:g} s latency target."
    if row.within_tolerance:
        if row.ci and row.ci[0] > 0:
            text = f"Use RAG ({row.rag.label}): it beats long context by {diff} ({ci}) with {tokens}{cost}."
        elif (row.cost_ratio if row.cost_ratio is not None else row.token_ratio or 1) >= 1:
            text = (f"Either arm: RAG ({row.rag.label}) is within {tol:g} points of long context ({diff}, {ci}) but "
                    f"saves nothing ({tokens}{cost}); long context is simpler.")
        else:
            text = f"Use RAG ({row.rag.label}): within {tol:g} points of long context ({diff}, {ci}) with {tokens}{cost}."
            if row.ci and row.ci[0] < -tol:
                text += f" The interval still allows a loss of more than {tol:g} points; more samples would settle it."
    else:
        text = f"Use long context ({row.lc.label}): the best RAG config ({row.rag.label}) is {diff} ({ci})."
        if row.ci and row.ci[1] >= 0:
            text += " The interval includes no difference, so more samples could change this."
    if 0 < row.n_shared < SMALL_SAMPLE:
        text += f" Only {row.n_shared} shared samples: indicative, not settled."
    if row.oracle and row.oracle.score - row.lc_score > tol:
        text += f" A perfect router would reach {row.oracle.score:.1f} ({row.oracle.score - row.lc_score:+.1f} over long context)."
    return text + latency


def _lvl(row: VerdictRow) -> str | None:
    return None if row.level == ALL else row.level


def verdicts(runs: list[Run], pricing: Pricing, settings: ReportSettings) -> list[VerdictRow]:
    """One row per benchmark and length level, then one per benchmark over all levels."""
    rows = []
    for bench in sorted({r.scope for r in runs}):
        mine = [r for r in runs if r.scope == bench]
        levels = levels_of(mine)
        for level in levels + ([ALL] if len(levels) > 1 else []):
            rows.append(verdict_row(bench, level, mine, pricing, settings))
    return rows


@dataclass
class BudgetPair:
    """A RAG config and long context cut to the same token budget: "better text" vs "less text"."""
    benchmark: str
    budget: int
    rag: Run
    rag_score: float
    budget_lc: Run
    budget_lc_score: float
    full_lc_score: float | None
    n_shared: int
    diff: float | None  # RAG - budget-matched long context, points
    ci: tuple[float, float] | None


def _rag_budget(run: Run) -> int | None:
    k = run.knobs
    if k.get("rag_budget_tokens") is not None:
        return int(k["rag_budget_tokens"])
    if k.get("top_k") is not None and k.get("chunk_size") is not None:
        return int(k["top_k"]) * int(k["chunk_size"])
    return None


def budget_pairs(runs: list[Run], settings: ReportSettings) -> list[BudgetPair]:
    """Each budget-matched long-context run against the best RAG config with that budget
    (top_k x chunk_size, or the RAG arm's own token budget)."""
    pairs = []
    for bench in sorted({r.scope for r in runs}):
        mine = [r for r in runs if r.scope == bench]
        full, full_score = _best(longctx_candidates(mine), None)
        for blc in sorted((r for r in mine if r.budget_matched and r.scores()), key=lambda r: int(r.knobs["budget_tokens"])):
            budget = int(blc.knobs["budget_tokens"])
            same = [r for r in rag_candidates(mine) if _rag_budget(r) == budget]
            rag, rag_score = _best(same, None)
            if rag is None:
                continue
            a, b = rag.scores(), blc.scores()
            shared = sorted(set(a) & set(b))
            diff = ci = None
            if shared:
                res = paired_bootstrap([a[i] for i in shared], [b[i] for i in shared], n_resamples=settings.resamples,
                                       seed=settings.seed)
                diff, ci = 100 * res.diff, (100 * res.ci95[0], 100 * res.ci95[1])
            pairs.append(BudgetPair(bench, budget, rag, rag_score, blc, blc.score_at(), full_score, len(shared), diff, ci))
    return pairs
