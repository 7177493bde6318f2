"""Section "Deployment what-if": each benchmark's chosen and best configs priced at the settings' queries per
document, with and without a prefix cache, their latency and break-even points (rows: experiments.report.whatif),
then what one user waits per config and length level (experiments.report.latency)."""

from __future__ import annotations

from dataclasses import dataclass

from experiments.report.latency import LatencyRow, latency_rows
from experiments.report.page.cells import fmt, usd
from experiments.report.page.contents import Outline
from experiments.report.page.document import Document, Heading, Paragraph, Table
from experiments.report.page.report_summary import Facts, Summary
from experiments.report import pricing_words
from experiments.report.settings import ReportSettings
from experiments.report.whatif import WhatIfRow, what_if

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
