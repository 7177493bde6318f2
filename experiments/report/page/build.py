"""Many run directories -> the decision report: report.md, report.html (same content, plots
embedded), summary.csv (one row per config), verdict.csv, whatif.csv, agreement.csv (long context vs
the best RAG config per question, per benchmark and length level), lost_answers.csv (why answers were lost),
questions.html (every question, the arms side by side) and the plots as PNG files.

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
(the decisions in experiments.report.decision_order), `present` renders those rows into one document, written
as Markdown and HTML; the CSV files come from the same rows. Nothing on the page computes a figure.
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
from experiments.report.overlap import SplitRow, question_groups, split_rows
from experiments.report.page.document import Document, to_html, to_markdown
from experiments.report.page.first_screen import add_answer, add_data_mix, add_overview, add_timing_notes
from experiments.report.page.lost_answers import (lost_answers_section, main_loss_line, row_links,
                                                   upper_bound_section)
from experiments.report.page.questions_html import QUESTIONS_FILE, questions_html
from experiments.report.page.router import router_section
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
    """Everything the report shows, computed before anything is rendered (summarize, then present)."""
    runs: list[Run]
    missing: list[Path]  # run folders without records
    dupes: dict[str, list[Path]]  # merged duplicate runs
    pricing: Pricing
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
    diagnostics: Diagnostics
    splits: list[SplitRow]
    question_groups: dict[str, tuple[int, int]]
    lost: Losses | None = None  # documents cut to fit the window, what the load left out
    latency: list[LatencyRow] = field(default_factory=list)  # p50 / p90 per config and level (latency.csv)
    data_mix: list[DataSet] = field(default_factory=list)  # the data sets pooled (--pool-data); empty: one
    lost_answers: list[LossRow] = field(default_factory=list)  # why answers were lost (lost_answers.csv)
    questions: dict[str, Any] = field(default_factory=dict)  # the question viewer's rows (questions.html)
    upper_bound: list[UpperBoundRow] = field(default_factory=list)  # the oracle retriever: what retrieval costs
    timing: list[str] = field(default_factory=list)  # how the runs' costs were not measured alike (first screen)


def summarize(paths: list[str], settings: ReportSettings, pool_data: bool = False) -> Summary:
    """Read the runs under `paths` and compute every row of the report (runs over different documents or
    questions only with `pool_data`: experiments/report/data_mix.py)."""
    loaded = load_runs(paths, pool_data)  # questions without references get their scores from pairwise judgments
    if not loaded.runs:
        raise ValueError("no records.jsonl in any run directory: nothing to report on")
    runs, missing, dupes, judged = loaded.runs, loaded.missing, loaded.duplicates, loaded.judged
    pricing = Pricing(settings, runs)
    summary, levels, ns = summary_rows(runs, pricing)
    vrows = verdicts(runs, pricing, settings)
    whatif = what_if(runs, vrows, pricing, settings)
    diagnostics = diagnose(runs, settings.correct_threshold, settings.evidence_threshold)
    return Summary(
        runs=runs, missing=missing, dupes=dupes, pricing=pricing, summary=summary, levels=levels, recall_ns=ns,
        vrows=vrows, plans=plan_rows(vrows, settings), other=other_arms(vrows, runs),
        budget=budget_pairs(runs, settings), pairwise=pairwise_rows(judged, settings.resamples, settings.seed),
        unjudged=waiting(runs), whatif=whatif, diagnostics=diagnostics, splits=split_rows(runs),
        question_groups=question_groups(runs), lost=losses(runs),
        latency=latency_rows(runs, [(w.benchmark, w.label) for w in whatif]), data_mix=loaded.data_mix,
        lost_answers=loss_rows(runs, settings.correct_threshold, settings.evidence_threshold),
        questions=question_rows(runs, diagnostics.agreements, settings.correct_threshold, settings.evidence_threshold),
        upper_bound=upper_bound_rows(runs, vrows), timing=timing_notes(runs, pricing))


def present(s: Summary, settings: ReportSettings, out: Path) -> tuple[Document, list[Path]]:
    """The report as a document (and the images and router files it wrote into `out`)."""
    doc = Document("RAG vs long context: decision report")
    # the first screen: the answer, what was lost before scoring, then the forest plot
    images = add_answer(doc, s.vrows, s.plans, settings, out, s.pricing.basis(), s.lost)
    add_data_mix(doc, s.data_mix)
    doc.add(*[p for p in (main_loss_line(s.vrows, s.lost_answers), row_links(s.vrows)) if p is not None])
    add_timing_notes(doc, s.timing)
    add_overview(doc, s.runs, s.missing, s.dupes, contents())
    verdict_section(doc, s.vrows, settings, s.plans)
    other_arms_section(doc, s.other)
    upper_bound_section(doc, s.upper_bound)
    budget_section(doc, s.budget)
    configs_section(doc, s.vrows, s.summary, s.levels, s.recall_ns)
    routers = write_routers([v.router for v in s.vrows if v.router is not None], out)
    router_section(doc, s.vrows, settings.tolerance)
    pairwise_section(doc, s.pairwise, s.unjudged)
    whatif_section(doc, s.whatif, s.pricing, settings, s.latency)
    images += plots_section(doc, s.runs, s.vrows, s.diagnostics, out)
    diagnostics_section(doc, s.diagnostics, settings)
    lost_answers_section(doc, s.lost_answers)
    overlap_section(doc, s.splits, s.question_groups)
    reproducibility_section(doc, s.runs, out, s.dupes)
    return doc, images + routers


def build_report(paths: list[str], out_dir: Path | None = None,
                 settings: ReportSettings | None = None, pool_data: bool = False,
                 export: tuple[str, ...] = ()) -> dict[str, Path]:
    """Write every report file; return them by name. `export=("details",)`: the records as Parquet files too
    (experiments.report.export)."""
    settings = settings or load_settings()
    s = summarize(paths, settings, pool_data)
    out = Path(out_dir) if out_dir else default_out_dir(paths)
    out.mkdir(parents=True, exist_ok=True)
    doc, written = present(s, settings, out)

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
