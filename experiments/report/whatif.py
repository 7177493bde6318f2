"""Deployment what-if: the cost per 1,000 answers of each arm at a given number of queries per
document (RAG's one-off indexing cost spread over them), latency against a target, and the number
of queries per document from which a RAG config is cheaper than long context (break-even).

    total(q) for one document and q questions:  long context  q * c_lc
                                                RAG           I + q * c_rag
    break-even q* = I / (c_lc - c_rag) when c_rag < c_lc (RAG is cheaper from q* on), else never.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import mean

from experiments.aggregate import quantile
from experiments.report.oracle import oracle_router
from experiments.arms import ROLE_OTHER, specs
from experiments.report.pricing import Pricing
from experiments.report.settings import ReportSettings
from experiments.report.run_dirs import Run
from experiments import records as schema
from experiments.report.verdict import VerdictRow, longctx_candidates, rag_candidates


@dataclass
class WhatIfRow:
    benchmark: str
    role: str  # why this config is in the table
    label: str
    arm: str
    score: float | None
    answer_cost: float | None  # USD per answer, generation only
    index_cost_per_doc: float  # USD, one-off per document
    cost_per_1000: float | None  # USD per 1,000 answers at the configured queries per document
    latency_mean: float | None
    latency_p95: float | None
    meets_target: bool | None
    break_even: float | None  # queries per document from which this config is cheaper than long context
    break_even_note: str = ""


def _latencies(records: list[dict]) -> list[float]:
    return [r["latency_s"] for r in records if schema.is_answered(r) and r.get("latency_s") is not None]


def _row(bench: str, role: str, run: Run, pricing: Pricing, settings: ReportSettings) -> WhatIfRow:
    c = pricing.mean_answer_cost(run)
    ix = pricing.index_cost_per_doc(run)
    lats = _latencies(run.records)
    lat = mean(lats) if lats else None
    return WhatIfRow(bench, role, run.label, run.arm, run.score_at(), c, ix,
                     None if c is None else 1000 * (c + ix / settings.queries_per_doc), lat, quantile(lats, 0.95),
                     None if lat is None or settings.latency_target_s is None else lat <= settings.latency_target_s,
                     None)


def break_even(index_cost: float, answer_cost: float | None, lc_answer_cost: float | None) -> tuple[float | None, str]:
    if answer_cost is None or lc_answer_cost is None:
        return None, "-"
    if answer_cost >= lc_answer_cost:
        return None, "never (no cheaper per answer)"
    if index_cost <= 0:
        return 0.0, "from the first query (no indexing cost)"
    q = index_cost / (lc_answer_cost - answer_cost)
    return q, f"{q:.2f}"


def _oracle_row(bench: str, lc: Run, rag: Run, pricing: Pricing, settings: ReportSettings) -> WhatIfRow | None:
    res = oracle_router(rag, lc)
    if res is None:
        return None
    rag_by, lc_by = {str(r["id"]): r for r in rag.records}, {str(r["id"]): r for r in lc.records}
    chosen = [rag_by[i] if c in ("first", "tie") else lc_by[i] for i, c in res.choice.items()]
    costs = [x for x in (pricing.answer_cost(r) for r in chosen) if x is not None]
    lats = _latencies(chosen)
    c = mean(costs) if costs else None
    ix = pricing.index_cost_per_doc(rag)
    lat = mean(lats) if lats else None
    return WhatIfRow(bench, "oracle router (upper bound, not deployable)", f"oracle: {rag.label} | {lc.label}", "oracle",
                     res.score, c, ix, None if c is None else 1000 * (c + ix / settings.queries_per_doc), lat,
                     quantile(lats, 0.95),
                     None if lat is None or settings.latency_target_s is None else lat <= settings.latency_target_s, None)


def what_if(runs: list[Run], verdict_rows: list[VerdictRow], pricing: Pricing, settings: ReportSettings) -> list[WhatIfRow]:
    """Per benchmark, over all its samples: best long context, the verdict's RAG pick, the best RAG,
    and the best run of each other arm (closedbook, selfroute, budget-matched long context), plus
    the oracle router."""
    rows: list[WhatIfRow] = []
    for bench in sorted({r.scope for r in runs}):
        mine = [r for r in runs if r.scope == bench]
        overall = [v for v in verdict_rows if v.benchmark == bench]
        overall_row = next((v for v in overall if v.level == "all"), overall[-1] if overall else None)

        def best(cands: list[Run]) -> Run | None:
            scored = [r for r in cands if r.score_at() is not None]
            return max(scored, key=lambda r: r.score_at()) if scored else None

        picks: list[tuple[str, Run]] = []
        lc = best(longctx_candidates(mine))
        if lc:
            picks.append(("best long context", lc))
        if overall_row and overall_row.rag and overall_row.within_tolerance and overall_row.lc is lc:
            picks.append((f"cheapest RAG within {settings.tolerance:g} points", overall_row.rag))
        best_rag = best(rag_candidates(mine))
        if best_rag:
            picks.append(("best RAG", best_rag))
        for spec in (s for s in specs() if s.role == ROLE_OTHER):
            r = best([x for x in mine if x.arm == spec.name])
            if r:
                picks.append((spec.pick_title(), r))
        r = best([x for x in mine if x.budget_matched])
        if r:
            picks.append(("best budget-matched long context", r))
        seen: set[int] = set()
        lc_cost = pricing.mean_answer_cost(lc) if lc else None
        for role, run in picks:
            if id(run) in seen:
                continue
            seen.add(id(run))
            row = _row(bench, role, run, pricing, settings)
            if run is not lc and run.spec.indexed:  # what indexing once buys against long context
                row.break_even, row.break_even_note = break_even(row.index_cost_per_doc, row.answer_cost, lc_cost)
            rows.append(row)
        if lc and best_rag:
            orow = _oracle_row(bench, lc, best_rag, pricing, settings)
            if orow:
                rows.append(orow)
    return rows
