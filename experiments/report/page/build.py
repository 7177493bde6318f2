"""Many run directories -> the decision report: report.md, report.html (same content, plots
embedded), summary.csv (one row per config), verdict.csv, whatif.csv, agreement.csv (long context vs
the best RAG config per question, per benchmark and length level), lost_answers.csv (why answers were lost),
summary.json (every row of the page), questions.html (every question, the arms side by side) and the plots as PNG files.

    python -m experiments.report outputs/demo
    python -m experiments.report outputs/multirun/2026-01-01_10-00-00 outputs/runs/other_run --out my_report
    python -m experiments.report outputs/demo --tolerance 1 --queries-per-doc 50 --price-in 3 --price-out 15
    python -m experiments.report outputs/demo --gpu-hour-price 2.5 --latency-target 2

Defaults come from conf/report.yaml (or --settings FILE); flags override them.

The report opens with the answer (experiments.report.page.first_screen): one line of values per benchmark
and length level, and the forest plot of the same rows (verdict_forest.png). Sections: 1 verdict per
benchmark and length level, how it was reached (page/verdict.py); 2 deployment what-if; 3 plots;
4 diagnostics; 5 reproducibility (page/sections.py).

Summarize, then present (as HELM does): `summarize` reads the runs and computes every row of the report
(the decisions in experiments.report.decision_order); `draw_files` writes what the page shows as files (the
router files, the PNG figures); `present(summary)` renders the rows into one document, written as Markdown and
HTML, reading nothing but the summary; the CSV files come from the same rows. The summary is written as
summary.json (experiments.report.page.summary_file), from which `present` draws the same page.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval.storage import atomic_write_text
from experiments.report.data_mix import DataSet
from experiments.report.decision_order import verdicts
from experiments.report.diagnostics import Diagnostics, diagnose
from experiments.report.export import DETAILS_DIR, EXPORTS, export_details
from experiments.report.losses import Losses, losses
from experiments.report.latency import LatencyRow, latency_rows
from experiments.report.other_arms import OtherArmsRow, other_arms
from experiments.report.overlap import SplitRow, question_groups, split_rows, spread
from experiments.report.overview import Overview, overview
from experiments.report.page.document import Document, to_html, to_markdown
from experiments.report.page.drawing import Figures, draw_figures
from experiments.report.page.first_screen import add_answer, add_data_mix, add_overview, add_timing_notes
from experiments.report.page.lost_answers import (lost_answers_section, main_loss_line, row_links,
                                                   upper_bound_section)
from experiments.report.page.questions_html import QUESTIONS_FILE, questions_html
from experiments.report.page.router import router_section
from experiments.report.page.summary_file import NOT_IN_JSON, SUMMARY_FILE, save_summary
from experiments.report.page.contents import contents
from experiments.report.page.sections import (diagnostics_section, overlap_section, pairwise_section,
                                              plots_section, reproducibility_section, whatif_section)
from experiments.report.page.verdict import budget_section, configs_section, other_arms_section, verdict_section
from experiments.report.loading import load_runs
from experiments.report.pairwise import PairwiseRow, pairwise_rows, waiting
from experiments.report.pricing import Pricing
from experiments.report.questions.reasons import LossRow, loss_rows
from experiments.report.questions.rows import question_rows
from experiments.report.router.evaluate import write_routers
from experiments.report.reproducibility import Reproducibility, reproducibility
from experiments.report.runs import Run
from experiments.report.settings import ReportSettings, load_settings
from experiments.report.summary import summary_rows
from experiments.report.upper_bound import UpperBoundRow, upper_bound_rows
from experiments.report.timing_notes import timing_notes
from experiments.report.verdict.power import plan_rows
from experiments.report.verdict.budget import BudgetPair, budget_pairs
from experiments.report.verdict.row import VerdictRow
from experiments.report.whatif import WhatIfRow, what_if


def default_out_dir(paths: list[str]) -> Path:
    resolved = [Path(p).resolve() for p in paths]
    if len(resolved) == 1 and not (resolved[0] / "metrics.json").exists():
        return resolved[0]  # a multirun folder: the report sits beside its runs
    return Path(os.path.commonpath([p.parent if (p / "metrics.json").exists() else p for p in resolved]))


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    fields: list[str] = []
    for row in rows:
        fields += [k for k in row if k not in fields]
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=fields)
    writer.writeheader()
    writer.writerows(rows)
    atomic_write_text(path, text.getvalue())


# ---------------------------------------------------------------- entry points


@dataclass(kw_only=True)
class Summary:
    """Everything the report shows, computed before anything is rendered (summarize, then present): `present`
    reads nothing else. `runs` and `pricing` are what the rows were computed from (the figures and the details
    export draw on them); the page does not read them."""
    settings: ReportSettings
    out: str  # the report's folder: run folders and figures are named relative to it
    runs: list[Run] = field(metadata=NOT_IN_JSON)
    pricing: Pricing = field(metadata=NOT_IN_JSON)
    overview: Overview  # what the report read (the first screen)
    summary: list[dict[str, Any]]  # one row per config point (summary.csv)
    levels: list[str]
    recall_ns: list[str]
    vrows: list[VerdictRow]
    plans: list[dict[str, Any]]
    other: list[OtherArmsRow]
    budget: list[BudgetPair]
    pairwise: list[PairwiseRow]
    unjudged: int
    whatif: list[WhatIfRow]
    pricing_note: str  # how the runs were priced (the what-if)
    cost_basis: str  # what the cost ratios are priced by (the first screen)
    diagnostics: Diagnostics
    splits: list[SplitRow]
    overlap_spread: dict[str, float]  # per config: recall high - low overlap
    question_groups: dict[str, tuple[int, int]]
    reproducibility: Reproducibility
    lost: Losses | None = None  # documents cut to fit the window, what the load left out
    latency: list[LatencyRow] = field(default_factory=list)  # p50 / p90 per config and level (latency.csv)
    data_mix: list[DataSet] = field(default_factory=list)  # the data sets pooled (--pool-data); empty: one
    lost_answers: list[LossRow] = field(default_factory=list)  # why answers were lost (lost_answers.csv)
    questions: dict[str, Any] = field(default_factory=dict, metadata=NOT_IN_JSON)  # the viewer's rows (questions.html)
    upper_bound: list[UpperBoundRow] = field(default_factory=list)  # the oracle retriever: what retrieval costs
    timing: list[str] = field(default_factory=list)  # how the runs' costs were not measured alike (first screen)
    figures: Figures = field(default_factory=Figures)  # the PNG files build_report drew (draw_files)


def summarize(paths: list[str], settings: ReportSettings, pool_data: bool = False, out: Path | None = None) -> Summary:
    """Read the runs under `paths` and compute every row of the report (runs over different documents or
    questions only with `pool_data`: experiments/report/data_mix.py); `out`: the report's folder (default: beside
    the runs)."""
    out = Path(out) if out else default_out_dir(paths)
    loaded = load_runs(paths, pool_data)  # questions without references get their scores from pairwise judgments
    if not loaded.runs:
        raise ValueError("no records.jsonl in any run directory: nothing to report on")
    runs, missing, dupes, judged = loaded.runs, loaded.missing, loaded.duplicates, loaded.judged
    pricing = Pricing(settings, runs)
    summary, levels, ns = summary_rows(runs, pricing)
    vrows = verdicts(runs, pricing, settings)
    whatif = what_if(runs, vrows, pricing, settings)
    diagnostics = diagnose(runs, settings.correct_threshold, settings.evidence_threshold)
    splits = split_rows(runs)
    return Summary(
        settings=settings, out=str(out), runs=runs, pricing=pricing, overview=overview(runs, missing, dupes),
        summary=summary, levels=levels, recall_ns=ns, vrows=vrows, plans=plan_rows(vrows, settings),
        other=other_arms(vrows, runs), budget=budget_pairs(runs, settings),
        pairwise=pairwise_rows(judged, settings.resamples, settings.seed), unjudged=waiting(runs), whatif=whatif,
        pricing_note=pricing.describe(), cost_basis=pricing.basis(), diagnostics=diagnostics, splits=splits,
        overlap_spread=spread(splits), question_groups=question_groups(runs),
        reproducibility=reproducibility(runs, out, dupes), lost=losses(runs) or None,
        latency=latency_rows(runs, [(w.benchmark, w.label) for w in whatif]), data_mix=loaded.data_mix,
        lost_answers=loss_rows(runs, settings.correct_threshold, settings.evidence_threshold),
        questions=question_rows(runs, diagnostics.agreements, settings.correct_threshold, settings.evidence_threshold),
        upper_bound=upper_bound_rows(runs, vrows), timing=timing_notes(runs, pricing))


def draw_files(s: Summary) -> list[Path]:
    """What the page shows as files, written into the report's folder before it is rendered: the router files
    (their names go into the router rows) and the figures (into `s.figures`)."""
    out = Path(s.out)
    routers = write_routers([v.router for v in s.vrows if v.router is not None], out)
    s.figures = draw_figures(s.runs, s.vrows, s.diagnostics.agreements, s.settings.tolerance, out)
    return routers + s.figures.files(out)


def present(s: Summary) -> Document:
    """The report as a document, rendered from the summary alone (its figures and router files drawn first:
    draw_files)."""
    settings, out = s.settings, Path(s.out)
    doc = Document("RAG vs long context: decision report")
    # the first screen: the answer, what was lost before scoring, then the forest plot
    add_answer(doc, s.vrows, s.plans, settings, out / s.figures.forest if s.figures.forest else None, s.cost_basis,
               s.lost)
    add_data_mix(doc, s.data_mix)
    doc.add(*[p for p in (main_loss_line(s.vrows, s.lost_answers), row_links(s.vrows)) if p is not None])
    add_timing_notes(doc, s.timing)
    add_overview(doc, s.overview, contents())
    verdict_section(doc, s.vrows, settings, s.plans)
    other_arms_section(doc, s.other)
    upper_bound_section(doc, s.upper_bound)
    budget_section(doc, s.budget)
    configs_section(doc, s.vrows, s.summary, s.levels, s.recall_ns)
    router_section(doc, s.vrows, settings.tolerance)
    pairwise_section(doc, s.pairwise, s.unjudged)
    whatif_section(doc, s.whatif, s.pricing_note, settings, s.latency)
    plots_section(doc, s.figures, out)
    diagnostics_section(doc, s.diagnostics, settings)
    lost_answers_section(doc, s.lost_answers)
    overlap_section(doc, s.splits, s.question_groups, s.overlap_spread)
    reproducibility_section(doc, s.reproducibility)
    return doc


def build_report(paths: list[str], out_dir: Path | None = None,
                 settings: ReportSettings | None = None, pool_data: bool = False,
                 export: tuple[str, ...] = ()) -> dict[str, Path]:
    """Write every report file; return them by name. `export=("details",)`: the records as Parquet files too
    (experiments.report.export)."""
    settings = settings or load_settings()
    out = Path(out_dir) if out_dir else default_out_dir(paths)
    s = summarize(paths, settings, pool_data, out)
    out.mkdir(parents=True, exist_ok=True)
    written = draw_files(s) + [save_summary(s, out / SUMMARY_FILE)]
    doc = present(s)

    files = {"report.md": out / "report.md", "report.html": out / "report.html", "summary.csv": out / "summary.csv",
             "verdict.csv": out / "verdict.csv", "whatif.csv": out / "whatif.csv",
             "agreement.csv": out / "agreement.csv"}
    atomic_write_text(files["report.md"], to_markdown(doc))
    atomic_write_text(files["report.html"], to_html(doc))
    _write_csv(files["summary.csv"], s.summary)
    _write_csv(files["verdict.csv"], [{**v.as_csv(), "to_decide": p["column"], "to_decide_sentence": p["sentence"]}
                                      for v, p in zip(s.vrows, s.plans)])
    _write_csv(files["whatif.csv"], [{k: getattr(w, k) for k in w.__dataclass_fields__} for w in s.whatif])
    _write_csv(files["agreement.csv"], [a.as_csv() for a in s.diagnostics.agreements])
    if s.latency:
        files["latency.csv"] = out / "latency.csv"
        _write_csv(files["latency.csv"], [{k: getattr(r, k) for k in r.__dataclass_fields__} for r in s.latency])
    if s.lost_answers:
        files["lost_answers.csv"] = out / "lost_answers.csv"
        _write_csv(files["lost_answers.csv"], [r.as_csv() for r in s.lost_answers])
    files[QUESTIONS_FILE] = out / QUESTIONS_FILE
    atomic_write_text(files[QUESTIONS_FILE], questions_html(s.questions))
    if s.splits:
        files["overlap.csv"] = out / "overlap.csv"
        _write_csv(files["overlap.csv"], [r.as_csv() for r in s.splits])
    files.update({p.name: p for p in written})
    if "details" in export:
        files.update({f"{DETAILS_DIR}/{p.name}": p for p in export_details(s.runs, out, settings.correct_threshold,
                                                                           settings.evidence_threshold)})
    return files


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.report", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dirs", nargs="+", help="multirun folders and/or run folders (each with metrics.json)")
    ap.add_argument("--out", type=Path, default=None, help="where to write (default: beside the runs)")
    ap.add_argument("--settings", type=Path, default=None, help="report settings YAML (default: conf/report.yaml)")
    ap.add_argument("--tolerance", type=float, help="points (x100) RAG may trail long context and still match it")
    ap.add_argument("--queries-per-doc", type=float, help="queries per indexed document in the what-if")
    ap.add_argument("--price", help="a conf/price preset (gpt-4o, claude-sonnet-4, h100, ...): prices every run with "
                                    "it, provider prompt caching included where the preset names a cached rate")
    ap.add_argument("--price-in", type=float, help="USD per million prompt tokens")
    ap.add_argument("--price-out", type=float, help="USD per million completion tokens")
    ap.add_argument("--gpu-hour-price", type=float, help="USD per GPU hour (prices generation by measured latency)")
    ap.add_argument("--latency-target", type=float, help="mean latency target in seconds")
    ap.add_argument("--correct-threshold", type=float, help="score (0..1) from which a sample counts as correct")
    ap.add_argument("--evidence-threshold", type=float, help="share of gold evidence that counts as retrieved")
    ap.add_argument("--router-points-per-1k-tokens", type=float,
                    help="score points the learned router gives up to save 1,000 prompt tokens per answer (default 0)")
    ap.add_argument("--pool-data", action="store_true",
                    help="pool runs over different documents or questions (refused without it; the first screen "
                         "names the mix)")
    ap.add_argument("--export", action="append", choices=EXPORTS, default=[],
                    help="details: the records as a dataset, one Parquet file per run and a README card under "
                         "<out>/details/ (datasets.load_dataset('parquet', ...) or pandas.read_parquet)")
    ap.add_argument("--router-family", choices=("own", "shared"),
                    help="the routers' claims in their own family at 5%% (default), or sharing 5%% with the arm "
                         "decisions")
    args = ap.parse_args(argv)
    try:
        settings = load_settings(args.settings, tolerance=args.tolerance, queries_per_doc=args.queries_per_doc,
                                 price=args.price, price_in=args.price_in, price_out=args.price_out,
                                 gpu_hour_price=args.gpu_hour_price,
                                 latency_target_s=args.latency_target, correct_threshold=args.correct_threshold,
                                 evidence_threshold=args.evidence_threshold,
                                 router_points_per_1k_tokens=args.router_points_per_1k_tokens,
                                 router_family=args.router_family)
        files = build_report(args.dirs, args.out, settings, pool_data=args.pool_data,
                             export=tuple(args.export))
    except (FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print_locations(files)
    card = files.get(f"{DETAILS_DIR}/README.md")
    if card is not None:
        print(f"{'details:':7} {card.parent}")
    return 0


def print_locations(files: dict[str, Path], resolve: bool = False) -> None:
    """Where the report, its HTML page and its table were written."""
    for label, name in (("report", "report.md"), ("html", "report.html"), ("table", "summary.csv"),
                        ("viewer", QUESTIONS_FILE)):
        print(f"{label + ':':7} {files[name].resolve() if resolve else files[name]}")


if __name__ == "__main__":
    sys.exit(main())
