"""Section "Deployment what-if": each benchmark's chosen and best configs priced at the settings' queries per
document, with and without a prefix cache, their latency and break-even points, then what one user waits per config
and length level (experiments/report/latency.py).

The cost per 1,000 answers of each arm at the SAME number of queries per
document q (the report's `queries_per_doc`, not the benchmark's questions per haystack), latency
against a target, and the number of queries per document from which a RAG config is cheaper than
long context (break-even).

Long context appears twice: **no prefix cache** (every question pays its document's whole
prefill) and **with prefix cache** (one prefill per document, shared by its q questions; the
runs' prefix reuse measures it: records' `prefill_s` and `prefix_group_size`). For one document
and q questions:

    long context, no prefix cache   q * n_lc
    long context, with prefix cache P + q * d_lc     (P: one prefill, d_lc: the rest of an answer)
    long context, provider caching  W + q * r_lc     (W: the cache write's premium over a read, r_lc: an answer
                                                      that reads the document from the provider's cache)
    RAG                             I + q * c_rag    (I: measured index build time, when recorded)

break-even q* solves RAG = long context: I / (n_lc - c_rag) without a cache, (I - P) / (d_lc - c_rag)
with one, (I - W) / (r_lc - c_rag) with provider caching (RAG is cheaper from q* on; when d_lc < c_rag RAG is
cheaper only up to q*). Provider caching is priced only under a per-token price that names a cached rate
(experiments/report/pricing.py); the first question of a document writes it and the others read it within the
cache's time-to-live.
Latency columns: `latency_s` is what one user waits (retrieval + generation as served to one user,
the whole prefill included); the charged seconds (generation share + retrieval) are what a batch costs."""

from __future__ import annotations

from dataclasses import dataclass
from statistics import mean

from experiments import records as schema
from experiments.arms import ROLE_LONGCTX, ROLE_OTHER, specs
from experiments.report import pricing_words
from experiments.report.latency import LatencyRow, latency_rows
from experiments.report.page.cells import fmt, usd
from experiments.report.page.contents import Outline
from experiments.report.page.document import Document, Heading, Paragraph, Table
from experiments.report.page.report_summary import Facts, Summary
from experiments.report.pricing import Pricing
from experiments.report.runs import Run
from experiments.report.settings import ReportSettings
from experiments.report.verdict.oracle import oracle_router
from experiments.report.verdict.selection import longctx_candidates, rag_candidates
from experiments.report.verdict_row import VerdictRow
from experiments.run_metrics import quantile

ANCHOR, TITLE = "whatif", "Deployment what-if"
FEW_FOR_P90 = 10  # a p90 over fewer values is marked: it is one of the largest values, not a tail

HEAD = ["benchmark", "role", "config", "score", "cost/answer", "indexing/document", "cost per 1,000: no prefix cache",
        "cost per 1,000: with prefix cache", "cost per 1,000: provider caching", "user s mean", "user s p95",
        "charged s/answer", "index s/doc", "meets target", "break-even q/doc: no prefix cache",
        "break-even q/doc: with prefix cache", "break-even q/doc: provider caching"]
COSTS_EXPLAINED = (
    "Cost per 1,000 answers = 1000 x (generation cost per answer + indexing cost per document / "
    "queries per document), for long context **without** a prefix cache (each question pays its document's whole "
    "prefill) and **with** one (one prefill per document shared by its questions); RAG is the same in both. "
    "Break-even: queries per document from which the config is cheaper than the best long-context config, "
    "against each (q* = I / (c_long context - c); with a prefix cache (I - P) / (d - c), P one prefill). "
    "**Provider caching** (an API that bills a prompt prefix it has cached at a discount: a per-token price "
    "with a cached rate): a document's first question writes it to the cache and the others read it; its "
    "break-even is (I - W) / (r - c), W the write's premium over a read, r an answer that reads the document. "
    "Latency: *user s* is what one user waits (retrieval + generation served to that user alone, the whole "
    "prefill included); *charged s* is the machine time an answer costs in the measured batch (its share of a "
    "shared prefill and batched decode, plus retrieval); *index s/doc* is the measured index build time.")
LATENCY_EXPLAINED = (
    "What one user waits (retrieval + generation), as a distribution over the answers: the median (p50) and the "
    "90th percentile (p90) with the number of answers n. One timing per answer is noisy; `run.timing_repeats` "
    "re-times a sample of the answers with the response cache bypassed, and the re-timed columns give the same "
    "percentiles over each answer's median. A p90 marked * is over fewer than 10 values: it is the largest or "
    "next to largest, not a tail estimate. First answer against the others' median: a first answer much "
    "slower than the rest carried a device warm-up (runs made before the untimed warm-up existed).")


@dataclass
class WhatIfRow:
    benchmark: str
    role: str  # why this config is in the table
    label: str
    arm: str
    score: float | None
    answer_cost: float | None  # USD per answer, generation only
    index_cost_per_doc: float  # USD, one-off per document
    cost_per_1000: float | None  # USD per 1,000 answers at the configured queries per document, no prefix cache
    latency_mean: float | None  # what one user waits (s)
    latency_p95: float | None
    meets_target: bool | None
    # queries per document from which this config is cheaper than long context (no prefix cache)
    break_even: float | None
    break_even_note: str = ""
    cost_per_1000_prefix_cache: float | None = None  # the same with a prefix cache (long context differs; RAG does not)
    break_even_prefix_cache: float | None = None  # against long context with a prefix cache
    break_even_prefix_cache_note: str = ""
    # long context with provider prompt caching at the configured queries per document (per-token prices with a
    # cached rate; other rows: their cost, which caching does not change; None: not priced)
    cost_per_1000_provider_cache: float | None = None
    break_even_provider_cache: float | None = None  # against long context with provider caching
    break_even_provider_cache_note: str = ""
    charged_s_mean: float | None = None  # machine seconds an answer is charged (generation share + retrieval)
    index_s_per_doc: float | None = None  # measured index build seconds per document (metrics.json index_seconds)


def _latencies(records: list[dict]) -> list[float]:
    return [r["latency_s"] for r in records if schema.is_answered(r) and r.get("latency_s") is not None]


def _mean(xs: list) -> float | None:
    xs = [x for x in xs if x is not None]
    return mean(xs) if xs else None


def _costs_at(pricing: Pricing, records: list[dict], q: float, ix: float,
              shared_prefix: bool) -> tuple[float | None, float | None, float | None]:
    """USD per 1,000 answers at q queries per document: (no prefix cache, with prefix cache, with provider
    caching: only `shared_prefix` records, long context's, are cached; the others cost what they cost)."""
    answered = [r for r in records if schema.is_answered(r)]
    out = []
    for cache in (False, True):
        c = _mean([pricing.answer_cost_at(r, q, cache, shared_prefix) for r in answered])
        out.append(None if c is None else 1000 * (c + ix / q))
    provider = None
    if pricing.cache_model is not None:
        c = _mean([pricing.answer_cost_provider(r, q) if shared_prefix else pricing.answer_cost(r) for r in answered])
        provider = None if c is None else 1000 * (c + ix / q)
    return out[0], out[1], provider


def _index_s_per_doc(run: Run) -> float | None:
    secs, builds = run.metrics.get("index_seconds"), run.metrics.get("index_builds")
    return float(secs) / int(builds) if secs is not None and builds else None


def _make_row(bench: str, role: str, label: str, arm: str, score, records: list[dict], ix: float, pricing: Pricing,
              settings: ReportSettings, index_s: float | None = None, shared_prefix: bool = False) -> WhatIfRow:
    c = _mean([pricing.answer_cost(r) for r in records])
    lats = _latencies(records)
    lat = mean(lats) if lats else None
    no_cache, cached, provider = _costs_at(pricing, records, settings.queries_per_doc, ix, shared_prefix)
    charged = _mean([pricing.charged_seconds(r) for r in records if schema.is_answered(r)])
    return WhatIfRow(bench, role, label, arm, score, c, ix, no_cache, lat, quantile(lats, 0.95),
                     None if lat is None or settings.latency_target_s is None else lat <= settings.latency_target_s,
                     None, cost_per_1000_prefix_cache=cached, charged_s_mean=charged, index_s_per_doc=index_s,
                     cost_per_1000_provider_cache=provider)


def _row(bench: str, role: str, run: Run, pricing: Pricing, settings: ReportSettings) -> WhatIfRow:
    return _make_row(bench, role, run.label, run.arm, run.score_at(), run.answered(), pricing.index_cost_per_doc(run),
                     pricing, settings, _index_s_per_doc(run) if run.spec.indexed else None,
                     shared_prefix=run.spec.role == ROLE_LONGCTX)


def queries(q: float) -> str:
    """A break-even in queries per document with its significant digits: "0.0015", "0.42", "3.7", "12.4", "1,234"
    (two decimals printed a break-even of 0.0015 as "0.00")."""
    return f"{q:,.0f}" if q >= 100 else f"{q:.3g}"


def break_even(index_cost: float, answer_cost: float | None, lc_answer_cost: float | None) -> tuple[float | None, str]:
    if answer_cost is None or lc_answer_cost is None:
        return None, "-"
    if answer_cost >= lc_answer_cost:
        return None, "never (no cheaper per answer)"
    if index_cost <= 0:
        return 0.0, "from the first query (no indexing cost)"
    q = index_cost / (lc_answer_cost - answer_cost)
    return q, queries(q)


def break_even_cached(index_cost: float, answer_cost: float | None, lc_terms) -> tuple[float | None, str]:
    """Against long context with a prefix cache: I + q c = P + q d."""
    if answer_cost is None or lc_terms is None:
        return None, "-"
    prefill, rest, _ = lc_terms
    if answer_cost < rest:
        if index_cost <= prefill:
            return 0.0, "from the first query"
        q = (index_cost - prefill) / (rest - answer_cost)
        return q, queries(q)
    if answer_cost > rest and index_cost < prefill:
        q = (prefill - index_cost) / (answer_cost - rest)
        return q, f"cheaper only below {queries(q)}"
    return None, "never (no cheaper per answer)"


def _oracle_row(bench: str, lc: Run, rag: Run, pricing: Pricing, settings: ReportSettings) -> WhatIfRow | None:
    res = oracle_router(rag, lc)
    if res is None:
        return None
    rag_by, lc_by = {str(r["id"]): r for r in rag.records}, {str(r["id"]): r for r in lc.records}
    chosen = [rag_by[i] if c in ("first", "tie") else lc_by[i] for i, c in res.choice.items()]
    row = _make_row(bench, "oracle router (upper bound, not deployable)", f"oracle: {rag.label} | {lc.label}",
                    "oracle", res.score, chosen, pricing.index_cost_per_doc(rag), pricing, settings)
    row.cost_per_1000_provider_cache = None  # its long-context answers are a subset of a document's questions
    return row


def what_if(runs: list[Run], verdict_rows: list[VerdictRow], pricing: Pricing,
            settings: ReportSettings) -> list[WhatIfRow]:
    """Per benchmark, over all its samples: best long context, the verdict's RAG pick, the best RAG,
    and the best run of each other arm (closedbook, selfroute, budget-matched long context), plus
    the oracle router."""
    rows: list[WhatIfRow] = []
    for bench in sorted({r.scope for r in runs}):
        mine = [r for r in runs if r.scope == bench]
        overall = [v for v in verdict_rows if v.benchmark == bench]
        overall_row = next((v for v in overall if v.level == "all"), overall[-1] if overall else None)
        lc, best_rag = _best(longctx_candidates(mine)), _best(rag_candidates(mine))
        lc_terms = (pricing.lc_cost_terms(lc), pricing.lc_provider_terms(lc)) if lc else (None, None)
        seen: set[int] = set()
        for role, run in _picks(mine, lc, best_rag, overall_row, settings):
            if id(run) in seen:
                continue
            seen.add(id(run))
            row = _row(bench, role, run, pricing, settings)
            if run is not lc and run.spec.indexed:  # what indexing once buys against long context
                _set_break_evens(row, *lc_terms)
            rows.append(row)
        if lc and best_rag:
            orow = _oracle_row(bench, lc, best_rag, pricing, settings)
            if orow:
                rows.append(orow)
    return rows


def _best(cands: list[Run]) -> Run | None:
    scored = [r for r in cands if r.score_at() is not None]
    return max(scored, key=lambda r: r.score_at() or 0) if scored else None


def _picks(mine: list[Run], lc: Run | None, best_rag: Run | None, overall_row: VerdictRow | None,
           settings: ReportSettings) -> list[tuple[str, Run]]:
    """The configs a benchmark's what-if prices, by role (a config may hold several: the first is shown)."""
    picks: list[tuple[str, Run]] = [("best long context", lc)] if lc else []
    if overall_row and overall_row.rag and overall_row.comparison.within_tolerance and overall_row.lc is lc:
        picks.append((f"cheapest RAG within {settings.tolerance:g} points", overall_row.rag))
    if best_rag:
        picks.append(("best RAG", best_rag))
    for spec in (s for s in specs() if s.role == ROLE_OTHER):
        r = _best([x for x in mine if x.arm == spec.name])
        if r:
            picks.append((spec.pick_title(), r))
    r = _best([x for x in mine if x.budget_matched])
    return picks + [("best budget-matched long context", r)] if r else picks


def _set_break_evens(row: WhatIfRow, lc_terms: tuple[float, float, float] | None,
                     lc_provider: tuple[float, float, float] | None) -> None:
    """Queries per document from which an indexed config is cheaper than the best long context: without a prefix
    cache, with one, and with provider caching (where a cached price is known)."""
    lc_no_cache = lc_terms[2] if lc_terms else None
    row.break_even, row.break_even_note = break_even(row.index_cost_per_doc, row.answer_cost, lc_no_cache)
    row.break_even_prefix_cache, row.break_even_prefix_cache_note = break_even_cached(
        row.index_cost_per_doc, row.answer_cost, lc_terms)
    if lc_provider is not None:
        row.break_even_provider_cache, row.break_even_provider_cache_note = break_even_cached(
            row.index_cost_per_doc, row.answer_cost, lc_provider)


@dataclass(frozen=True)
class WhatIf:
    rows: list[WhatIfRow]  # whatif.csv
    pricing_note: str  # how the runs were priced
    latency: list[LatencyRow]  # p50 / p90 per config and level of the configs the rows name (latency.csv)


def rows(f: Facts) -> WhatIf:
    """The what-if rows (whatif.csv), how the runs were priced, and the latency of the configs they name
    (latency.csv)."""
    whatif = what_if(f.runs, f.vrows, f.pricing, f.settings)
    return WhatIf(whatif, pricing_words.describe(f.pricing),
                  latency_rows(f.runs, [(w.benchmark, w.label) for w in whatif]))


def render(doc: Document, s: Summary, outline: Outline) -> None:
    """The what-if table under its assumptions (`pricing_note`: how the runs were priced), then the latency."""
    mine: WhatIf = s.sections[ANCHOR]
    doc.add(Paragraph(assumptions(s.settings) + " " + COSTS_EXPLAINED),
            Paragraph(mine.pricing_note + " Measured times come from the machine that ran the sweep."),
            Table(HEAD, [_cells(r) for r in mine.rows]))
    if mine.latency:
        latency_table(doc, mine.latency)


def assumptions(settings: ReportSettings) -> str:
    target = ("no latency target" if settings.latency_target_s is None
              else f"a mean latency target of {settings.latency_target_s:g} s")
    return (f"At **{settings.queries_per_doc:g} queries per document** for every arm and {target}, over all samples "
            "of each benchmark.")


def _cells(r: WhatIfRow) -> list[str]:
    return [r.benchmark, r.role, r.label, fmt(r.score, 1), usd(r.answer_cost), usd(r.index_cost_per_doc),
            usd(r.cost_per_1000), usd(r.cost_per_1000_prefix_cache), usd(r.cost_per_1000_provider_cache),
            fmt(r.latency_mean), fmt(r.latency_p95), fmt(r.charged_s_mean), fmt(r.index_s_per_doc),
            fmt(r.meets_target), r.break_even_note or "-", r.break_even_prefix_cache_note or "-",
            r.break_even_provider_cache_note or "-"]


def few(cell: str, n: int) -> str:
    """A p90 cell, marked * when it is over fewer than FEW_FOR_P90 values."""
    return f"{cell}*" if 0 < n < FEW_FOR_P90 and cell != "-" else cell


def latency_table(doc: Document, rows: list[LatencyRow]) -> None:
    """What one user waits, as a distribution, per config and length level (experiments/report/latency.py)."""
    retimed = any(r.retimed_n for r in rows)
    head = ["benchmark", "config", "arm", "level", "n", "user s p50", "user s p90"]
    head += ["re-timed n", "re-timed p50", "re-timed p90"] if retimed else []
    head += ["first answer s", "others p50"]
    doc.add(Heading(3, "Latency per config and length level"), Table(head, [_latency_cells(r, retimed) for r in rows]),
            Paragraph(LATENCY_EXPLAINED))


def _latency_cells(r: LatencyRow, retimed: bool) -> list[str]:
    line = [r.benchmark, r.label, r.arm, r.level, str(r.n), fmt(r.p50), few(fmt(r.p90), r.n)]
    if retimed:
        line += [str(r.retimed_n) if r.retimed_n else "-", fmt(r.retimed_p50), few(fmt(r.retimed_p90), r.retimed_n)]
    return line + [fmt(r.first_s), fmt(r.rest_p50)]
