"""The report's opening, what a reader sees first: the answer per benchmark and length level in a
compact table whose cells hold values only, the forest plot of the same rows, then what the report
read and its contents.

Why this order: a team asks first "which arm, how sure, at what price, and what would settle it",
then "why". The method, the full verdict table (verdict.csv's columns, the selection and the
recommendation sentences) and the plan sentences follow in section 1 under "How the verdict was
reached". A row's interval over one document is no interval (its bootstrap draws that document
every time, so the interval collapses to the point): such a cell shows "-" and a note below the
table says why, rather than an interval of zero width that reads like certainty.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from experiments.report.page.cells import ratio
from experiments.report.page.document import Bullets, Document, Image, Paragraph, Table
from experiments.report.plots.forest import ForestRow, forest_plot
from experiments.report.runs import Run
from experiments.report.settings import ReportSettings
from experiments.report.verdict.rows import VerdictRow

ANSWER_HEAD = ["benchmark", "level", "decision", "Δ RAG−LC [95% CI]", "long context", "RAG",
               "prompt tokens RAG÷LC", "latency RAG÷LC", "cost RAG÷LC", "to decide"]
MAX_LABEL = 28  # a config label longer than this is cut and tagged with its config hash
FOREST_FILE = "verdict_forest.png"


def short_label(run: Run | None) -> str:
    """A config's label, cut to MAX_LABEL characters with its config hash when longer (the full
    label is in the verdict table and verdict.csv)."""
    if run is None:
        return "-"
    label = run.label
    if len(label) <= MAX_LABEL:
        return label
    tag = str(run.metrics.get("config_hash") or "")[:6]
    return (label[:MAX_LABEL - 9].rstrip() + "… #" + tag) if tag else label[:MAX_LABEL - 1].rstrip() + "…"


def row_name(v: VerdictRow) -> str:
    return f"{v.benchmark} · {v.level}"


def no_interval_reason(v: VerdictRow) -> str | None:
    """Why a row has no interval to show; None when it has one."""
    if v.lc is None:
        return "no scored long-context run"
    if v.rag is None:
        return "no scored RAG run"
    if v.diff is None or v.ci is None:
        return "no sample scored by both arms"
    if v.n_groups < 2:
        return (f"Δ is {v.diff:+.1f} over one document ({v.n_shared} questions), and a bootstrap over one document "
                "cannot vary, so there is no interval and no decision")
    return None


def delta_cell(v: VerdictRow) -> str:
    """"+3.1 [-1.2, +7.4]", or "-" when the row has no interval (no_interval_reason says why)."""
    if no_interval_reason(v) is not None:
        return "-"
    return f"{v.diff:+.1f} [{v.ci[0]:+.1f}, {v.ci[1]:+.1f}]"


def answer_rows(vrows: list[VerdictRow], plans: list[dict[str, Any]]) -> list[list[str]]:
    """One line of values per verdict row, in ANSWER_HEAD's order."""
    return [[v.benchmark, v.level, f"**{v.decision.kind}**" if v.decision else "-", delta_cell(v), short_label(v.lc),
             short_label(v.rag), ratio(v.token_ratio), ratio(v.latency_ratio), ratio(v.cost_ratio), plan["column"]]
            for v, plan in zip(vrows, plans)]


def answer_notes(vrows: list[VerdictRow]) -> list[str]:
    """The reason of every "-" in the Δ column."""
    return [f"{row_name(v)}, no Δ interval: {reason}." for v in vrows if (reason := no_interval_reason(v))]


def forest_rows(vrows: list[VerdictRow]) -> list[ForestRow]:
    rows = []
    for v in vrows:
        one_doc = v.diff is not None and v.ci is not None and v.n_groups < 2
        rows.append(ForestRow(row_name(v), v.diff, None if one_doc else v.ci, v.decision.kind if v.decision else "",
                              "no interval: one document" if one_doc else ""))
    return rows


def add_answer(doc: Document, vrows: list[VerdictRow], plans: list[dict[str, Any]], settings: ReportSettings,
               out: Path, cost_basis: str = "") -> list[Path]:
    """The answer table, its notes and the forest plot; returns the plot file (if drawn)."""
    doc.add(Table(ANSWER_HEAD, answer_rows(vrows, plans), "The answer, per benchmark and length level",
                  css_class="answer"))
    notes = answer_notes(vrows)
    if notes:
        doc.add(Bullets(notes))
    path = forest_plot(forest_rows(vrows), settings.tolerance, out / FOREST_FILE)
    left_out = [f"{row_name(v)} ({no_interval_reason(v)})" for v in vrows if v.diff is None]
    if path is None:
        doc.add(Paragraph("Not drawn: the verdict plot (no row with a difference)."))
    else:
        doc.add(Image(path, "verdict forest plot: Δ RAG−LC with its 95% interval per row; shaded: the tolerance"))
        if left_out:
            doc.add(Paragraph("Not in the plot (no difference): " + "; ".join(left_out) + "."))
    doc.add(Paragraph(
        "Δ: RAG minus long context in points (x100) with its 95% interval over documents; "
        f"ratios: RAG ÷ long context (cost per answer at {settings.queries_per_doc:g} queries per document"
        + (f", priced by {cost_basis}" if cost_basis else "") + "); "
        "to decide: documents a sweep needs to decide at 80% power. How the configs were chosen, the decision "
        "rule and the full table: section 1."))
    return [path] if path else []


def add_overview(doc: Document, runs: list[Run], missing: list[Path], dupes: dict[str, list[Path]],
                 sections: list[str]) -> None:
    """What the report read (config points, records, merged or skipped run dirs, imported predictions)
    and its contents."""
    scopes = sorted({r.scope for r in runs})
    generators = sorted({str(r.knobs.get("generator", "?")) for r in runs if not r.retrieval_only}) or ["no generator"]
    arms = Counter(r.arm for r in runs)
    doc.add(Paragraph(
        f"{len(runs)} config points ({', '.join(f'{n} {a}' for a, n in sorted(arms.items()))}) on {', '.join(scopes)} "
        f"with {', '.join(generators)}; {sum(len(r.records) for r in runs)} records."
        + (f" {sum(len(v) for v in dupes.values())} duplicate run(s) merged." if dupes else "")
        + (f" {len(missing)} run dir(s) without records.jsonl left out." if missing else "")))
    imported = sorted({(str(m.get("format")), str(m.get("path")), str(m.get("metric")))
                       for m in (r.metrics.get("imported_from") for r in runs) if isinstance(m, dict)})
    if imported:
        doc.add(Paragraph(
            "Imported predictions (`python -m experiments.import`): " + "; ".join(
                f"{fmt} from {path}, scored with `{metric}`" for fmt, path, metric in imported)
            + ". Tokens, latency and cost are shown only where the files gave them. A judge-free stand-in for a "
            "benchmark's LLM judge (e.g. `lara_auto`) is not comparable with the benchmark's published numbers."))
    doc.add(Bullets(sections))
