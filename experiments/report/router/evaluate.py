"""The router beside each verdict row (issue 26): a learned router over the row's two configs,
measured on documents it never saw, with what it costs, against the better single arm, the oracle
and any routing arm that was run (Self-Route, a live `arm=router`); and the `route` decision.

Per verdict row with both arms, the router (experiments.report.router.fit: cross-fitted ridge on the
features of experiments.report.router.features) is trained on the row's long-context and RAG configs
(the configs the row shows). Its per-answer costs:
- prompt tokens and latency: each question's own record of the arm it was routed to; a router that
  reads retrieval scores retrieves for every question, so a question it sends to long context also
  waits for RAG's `retrieval_s`;
- cost per answer: each routed question at its arm's cost per answer (experiments.report.pricing.
  deployment_cost: generation plus that arm's index cost spread over the report's queries per
  document); a router that reads retrieval scores builds RAG's index for every document, so the
  questions it sends to long context carry RAG's index share too.
The best single arm is the cross-fitted one each question was measured against (chosen on the other
half of the documents), priced the same way.

The `route` decision: the router is better than the best single arm by more than the tolerance, a
one-sided test at 5% (`route_p_value` says why one-sided; the 90% interval's lower end above +tolerance);
the test joins the verdict's family of decisions
(experiments.report.verdict.family: the routers' own family beside the arm decisions', one family-wise
error for both), so asking it costs the arm decisions a little of their level (4% instead of 5% while a
router claim is open). A row decided `route` keeps the single-arm decision it would have had (`arm_decision`)
for its sentence.

Other routing arms (Self-Route, a live router run: any arm whose records carry `route`) are measured
on the same questions against the same per-question best arm, with a paired cluster bootstrap over
documents (their configs were not chosen on these questions, so no refitting is needed).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import t as t_dist

from eval.metrics.confidence import cluster_t
from experiments.arms import ROLE_LONGCTX, ROLE_RAG
from experiments.arms.router_model import POST_RETRIEVAL, Router, save_router
from experiments.report.router.features import router_features
from experiments.report.router.fit import RouterResult, route
from experiments.report.runs import Run
from experiments.report.settings import ReportSettings
from experiments.report.verdict.family import ALPHA


@dataclass(frozen=True)
class OtherRouter:
    """A routing arm that was run (Self-Route, a live router), on the learned router's questions."""
    label: str
    title: str
    score: float  # points, over the shared questions
    diff: float  # its score - the best single arm's on the same questions
    ci: tuple[float, float]
    n: int
    n_groups: int
    prompt_tokens: float | None
    latency_s: float | None
    cost: float | None
    share_longctx: float | None  # share of its answers that took the long-context route


@dataclass(frozen=True)
class RouterRow:
    """The router stage of a verdict row: the learned router over its two configs, its costs, the routing arms run
    beside it, and its `route` test (set by the report's family: experiments.report.decision_order.tested)."""
    benchmark: str
    level: str
    lc_label: str
    rag_label: str
    result: RouterResult
    post_retrieval: bool  # it reads retrieval scores (so it retrieves for every question)
    tokens: tuple[float | None, float | None]  # (router, best arm) mean prompt tokens per answer
    latency: tuple[float | None, float | None]  # (router, best arm) mean latency per answer, seconds
    cost: tuple[float | None, float | None]  # (router, best arm) cost per answer, USD
    others: list[OtherRouter] = field(default_factory=list)
    decided: bool = False  # `route` kept after the family's correction
    gated: bool = False  # not tested: its row decides nothing (naive, too few documents, floor or ceiling)
    p_route: float | None = None  # p-value of "router - best arm > tolerance"
    p_route_holm: float | None = None  # the same, adjusted over the report's tests (experiments.report.verdict.family)
    cost_note: str = ""  # how the report's router_points_per_1k_tokens entered the routing ("" without)

    @property
    def features_kind(self) -> str:
        return "pre-route + post-retrieval" if self.post_retrieval else "pre-route only"

    @property
    def file_name(self) -> str:
        """The deployable router's file beside the report (`write_routers` writes it)."""
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{self.benchmark}_{self.level}").strip("_")
        return f"router_{slug}.json"

    @property
    def shown_interval(self) -> tuple[float, float]:
        """The interval the page shows: at the level the claim was tested at (`tested_interval`)."""
        return tested_interval(self)


def route_p_value(result: RouterResult, tolerance: float) -> float:
    """One-sided p-value of the claim router - best arm > tolerance, from Δ's t distribution: below 0.05
    exactly when the 90% interval's lower end (the 95% lower bound) clears the tolerance.

    One-sided, at the report's whole level, because the claim has one direction only: there is no opposite
    claim ("route: worse") for an error to fall on. An arm decision is a two-sided test of two directional
    claims (`Estimate.p_above` doubles the tail), and at most one of them can be wrong; a `route` claim
    tested the same way would keep its wrong-claim rate at 2.5% where the report states 5%, at a cost in power
    (perf/router_simulation.py, split truths: 72% `route` against 80% with the one-sided test)."""
    est = result.estimate
    if est is None:
        return 1.0
    margin = est.value - tolerance
    if est.se == 0:
        return 0.0 if margin > 0 else 1.0
    return float(t_dist.sf(margin / est.se, est.df))


def routes_better(result: RouterResult | None, tolerance: float) -> bool:
    """The router's own test says `route`: p < 0.05 for "router - best arm > tolerance"."""
    return result is not None and route_p_value(result, tolerance) < ALPHA


def tested_interval(row: RouterRow) -> tuple[float, float]:
    """The router's interval at the level its claim was tested at: two-sided at 1 - 2 x (the level its
    one-sided claim met after the report's correction), so its lower end clears +tolerance exactly when
    `route` stands; the 95% interval when it was not tested."""
    r = row.result
    if row.p_route_holm is None or r.estimate is None or not row.p_route or row.p_route_holm <= 0:
        return r.ci
    return r.estimate.interval(1 - 2 * ALPHA * row.p_route / row.p_route_holm)


def settled(router: RouterRow, p_route: float, p_holm: float, tolerance: float) -> RouterRow:
    """The router of a tested row after the report's family (experiments.report.verdict.family): its claim's
    p-value ("router - best arm > tolerance", `route_p_value`), its adjusted p-value, and whether `route` stands."""
    return replace(router, p_route=p_route, p_route_holm=p_holm, gated=False,
                   decided=routes_better(router.result, tolerance) and p_holm < ALPHA)


def _by_id(run: Run, level: str | None) -> dict[str, dict[str, Any]]:
    return {str(r["id"]): r for r in run.records_at(level)}


def _mean(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return float(np.mean(known)) if values and len(known) == len(values) else None


def _per_answer(picks_rag: list[bool], lc: dict[str, dict], rag: dict[str, dict], ids: list[str], key: str,
                retrieval_first: bool) -> float | None:
    """Mean of `key` over the questions, each from the record of the arm it went to (plus RAG's retrieval
    time for those sent to long context when `retrieval_first`)."""
    out = []
    for i, to_rag in zip(ids, picks_rag, strict=True):
        value = (rag if to_rag else lc)[i].get(key)
        if value is not None and key == "latency_s" and retrieval_first and not to_rag:
            value = value + (rag[i].get("retrieval_s") or 0.0)
        out.append(value)
    return _mean(out)


def _cost(picks_rag: list[bool], cost_lc: float | None, cost_rag: float | None, index_share: float) -> float | None:
    if cost_lc is None or cost_rag is None or not picks_rag:
        return None
    share = float(np.mean(picks_rag))
    return share * cost_rag + (1 - share) * (cost_lc + index_share)


def _other_router(run: Run, level: str | None, result: RouterResult, lc: dict, rag: dict, groups: dict[str, str],
                  settings: ReportSettings, cost_of: Callable[[Run], float | None]) -> OtherRouter | None:
    scores = run.scores(level)
    ids = [i for i in result.routes if i in scores]
    if not ids:
        return None
    best = [result.best_by_id[i] for i in ids]  # the learned router's best arm, averaged over its splits
    mine = [scores[i] for i in ids]
    est = cluster_t([100 * (m - b) for m, b in zip(mine, best, strict=True)], [groups[i] for i in ids])
    routes = [r.get("route") for r in run.answered(level) if r.get("route")]
    diff = 100 * float(np.mean(mine) - np.mean(best))
    return OtherRouter(run.label, run.spec.display(), 100 * float(np.mean(mine)), diff,
                       est.interval(0.95) if est else (diff, diff), len(ids), len({groups[i] for i in ids}),
                       run.mean_of("prompt_tokens", level), run.mean_of("latency_s", level), cost_of(run),
                       routes.count(ROLE_LONGCTX) / len(routes) if routes else None)


def cost_weight(settings: ReportSettings, features) -> tuple[float, str]:
    """The router's cost weight in score (0..1) per prompt token, from the report's points per 1,000
    tokens; 0 with a note when the records lack prompt tokens."""
    points = settings.router_points_per_1k_tokens
    if not points:
        return 0.0, ""
    if features.cost_lc is None:
        return 0.0, (f"router_points_per_1k_tokens={points:g} ignored: not every paired record has prompt_tokens; "
                     "routed on score alone")
    return points / 100 / 1000, f"routes on score minus {points:g} points per 1,000 prompt tokens"


def router_row(benchmark: str, level: str, lvl: str | None, lc_run: Run, rag_run: Run, runs: list[Run],
               settings: ReportSettings, cost_of: Callable[[Run], float | None],
               index_share: Callable[[Run], float]) -> RouterRow | None:
    """The learned router of a verdict row (None when the documents are too few to cross-fit it).
    `cost_of(run)`: a run's cost per answer at this level; `index_share(run)`: its index cost per answer."""
    lc, rag = _by_id(lc_run, lvl), _by_id(rag_run, lvl)
    features = router_features(lc, rag, cost_unit="prompt_tokens")
    if not features.n:
        return None
    weight, note = cost_weight(settings, features)
    result = route(features, seed=settings.seed, n_resamples=settings.resamples, cost_weight=weight,
                   splits=settings.splits)
    if result is None:
        return None
    ids = features.ids
    post = any(name in POST_RETRIEVAL for name in result.used)
    picks = [result.routes[i] == ROLE_RAG for i in ids]
    best = [result.arm_rag[i] for i in ids]
    tokens = (_per_answer(picks, lc, rag, ids, "prompt_tokens", post),
              _per_answer(best, lc, rag, ids, "prompt_tokens", False))
    latency = (_per_answer(picks, lc, rag, ids, "latency_s", post), _per_answer(best, lc, rag, ids, "latency_s", False))
    c_lc, c_rag = cost_of(lc_run), cost_of(rag_run)
    cost = (_cost(picks, c_lc, c_rag, index_share(rag_run) if post else 0.0), _cost(best, c_lc, c_rag, 0.0))
    groups = dict(zip(features.ids, features.groups, strict=True))
    others = [_other_router(run, lvl, result, lc, rag, groups, settings, cost_of) for run in runs
              if run not in (lc_run, rag_run) and any(r.get("route") for r in run.answered(lvl))]
    return RouterRow(benchmark, level, lc_run.label, rag_run.label, result, post, tokens, latency, cost,
                     [o for o in others if o is not None], cost_note=note)


def money(usd: float | None) -> str:
    return "-" if usd is None else f"${usd:.6f}" if usd < 0.01 else f"${usd:.4f}"


def cost_words(row: RouterRow) -> str:
    """What the router costs per answer against the best single arm, in words."""
    parts = []
    for name, (mine, best), fmt in (("prompt tokens", row.tokens, "{:,.0f}"), ("latency", row.latency, "{:.2f} s"),
                                    ("cost", row.cost, None)):
        if mine is not None and best is not None:
            show = money if fmt is None else fmt.format
            parts.append(f"{name} {show(mine)} vs {show(best)}")
    return "per answer, router vs best arm: " + ("; ".join(parts) if parts else "costs unknown")


def route_why(row: RouterRow, tolerance: float) -> str:
    r = row.result
    lo, hi = tested_interval(row)
    return (f"a router learned over these two configs ({row.features_kind} features) beats the better single arm by "
            f"{r.diff:+.1f} points [{lo:+.1f}, {hi:+.1f}], more than {tolerance:g}, on documents it was not "
            f"trained on; it sends {100 * r.share_rag:.0f}% of questions to RAG; {cost_words(row)}")


# ---------------------------------------------------------------- the deployable file
def deployable(row: RouterRow) -> Router:
    """The router a deployment runs: one fit on every question of the row (the cross-fitted figures are
    its honest estimate and travel with it)."""
    r = row.result
    if r.model is None:  # (the fit on all questions is always made: experiments.report.router.fit.route)
        raise ValueError(f"{row.benchmark} {row.level}: the router has no fit on all questions to deploy")
    return Router(r.model, cost_weight=r.cost_weight, cost_unit=r.cost_unit if r.cost_weight else None,
                  trained_on={"benchmark": row.benchmark, "level": row.level, ROLE_LONGCTX: row.lc_label,
                              ROLE_RAG: row.rag_label, "questions": r.n, "documents": r.n_groups},
                  estimate={"router": round(r.router_mean, 2), "best_arm": round(r.best_arm_mean, 2),
                            "oracle": round(r.oracle_mean, 2), "diff": round(r.diff, 2),
                            "ci95": [round(r.ci[0], 2), round(r.ci[1], 2)], "share_rag": round(r.share_rag, 4),
                            "features": row.features_kind})


def write_routers(rows: list[RouterRow], out: Path) -> list[Path]:
    """One router file per row, beside the report (its name: `RouterRow.file_name`)."""
    return [save_router(deployable(row), out / row.file_name) for row in rows]
