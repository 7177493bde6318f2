"""Many run directories -> the decision report: report.md, report.html (same content, plots
embedded), configs.csv (one row per config), verdict.csv, whatif.csv, agreement.csv (long context vs
the best RAG config per question, per benchmark and length level), lost_answers.csv (why answers were lost),
summary.json (every row of the page), questions.html (every question, the arms side by side) and the plots as PNG files.

    python -m experiments.report outputs/demo
    python -m experiments.report outputs/multirun/2026-01-01_10-00-00 outputs/runs/other_run --out my_report
    python -m experiments.report outputs/demo --tolerance 1 --queries-per-doc 50 --price-in 3 --price-out 15
    python -m experiments.report outputs/demo --gpu-hour-price 2.5 --latency-target 2

Defaults come from conf/report.yaml (or --settings FILE); flags override them.

The report opens with the answer (experiments.report.page.sections.first_screen): one line of values per
benchmark and length level, and the forest plot of the same rows (verdict_forest.png). Sections: 1 verdict per
benchmark and length level, how it was reached; 2 deployment what-if; 3 plots; 4 diagnostics; 5 reproducibility,
each with its subsections: one module each, in the order of the list in experiments/report/page/sections/.

Summarize, then present (as HELM does): `summarize` reads the runs, computes what the sections share (the
decisions in experiments.report.decision_order and their plans, the agreements) and then each section's rows (its
module's `rows`, kept by the section's anchor); `draw_files` writes what the page shows as files (the router
files, the PNG figures); `present(summary)` walks the sections and renders each from the summary alone (its module's
`render`) into one document, written as Markdown and HTML; the CSV files come from the same rows. The summary is
written as summary.json
(experiments.report.page.summary_file), from which `present` draws the same page.
"""

from __future__ import annotations

import argparse
import csv
import io
import logging
import os
import sys
from pathlib import Path
from typing import Any

from eval.storage import atomic_write_text
from experiments.report.agreement import agreements
from experiments.report.blas_threads import report_threads
from experiments.report.decision_order import verdicts
from experiments.report.export import DETAILS_DIR, EXPORTS, export_details
from experiments.report.loading import load_runs
from experiments.report.page.contents import Outline
from experiments.report.page.document import Document, Heading, to_html, to_markdown
from experiments.report.page.drawing import draw_figures
from experiments.report.page.questions_html import DATA_DIR, QUESTIONS_FILE, write_viewer
from experiments.report.page.report_summary import Facts, Summary
from experiments.report.page.sections import SECTIONS, configs, lost_answers, overlap, whatif
from experiments.report.page.summary_file import SUMMARY_FILE, save_summary
from experiments.report.pricing import Pricing
from experiments.report.questions.rows import question_rows
from experiments.report.router.evaluate import write_routers
from experiments.report.settings import ReportSettings, load_settings
from experiments.report.verdict_row import plan_rows

log = logging.getLogger(__name__)
OLD_CONFIGS_CSV = "summary.csv"  # the per-config table's name before configs.csv


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


def facts(paths: list[str], settings: ReportSettings, pool_data: bool, out: Path) -> Facts:
    """Read the runs under `paths` and compute what every section's rows share: the pricing, the decisions and
    their plans, and the agreements."""
    loaded = load_runs(paths, pool_data)  # questions without references get their scores from pairwise judgments
    if not loaded.runs:
        raise ValueError("no records.jsonl in any run directory: nothing to report on")
    pricing = Pricing(settings, loaded.runs)
    vrows = verdicts(loaded.runs, pricing, settings)
    return Facts(settings=settings, out=out, loaded=loaded, pricing=pricing, vrows=vrows,
                 plans=plan_rows(vrows, settings), agreements=agreements(loaded.runs, settings.correct_threshold))


def section_rows(f: Facts) -> dict[str, Any]:
    """Every section's rows, by its ANCHOR (None: a section with no rows of its own)."""
    return {section.ANCHOR: section.rows(f) for section in SECTIONS}


def summarize(paths: list[str], settings: ReportSettings, pool_data: bool = False, out: Path | None = None) -> Summary:
    """Read the runs under `paths` and compute every row of the report (runs over different documents or
    questions only with `pool_data`: experiments/report/data_mix.py); `out`: the report's folder (default: beside
    the runs)."""
    f = facts(paths, settings, pool_data, Path(out) if out else default_out_dir(paths))
    questions = question_rows(f.runs, f.agreements, settings.correct_threshold, settings.evidence_threshold)
    return Summary(settings=settings, out=str(f.out), runs=f.runs, pricing=f.pricing, vrows=f.vrows, plans=f.plans,
                   agreements=f.agreements, sections=section_rows(f), questions=questions)


def draw_files(s: Summary) -> list[Path]:
    """What the page shows as files, written into the report's folder before it is rendered: the router files
    (their names go into the router rows), the figures (into `s.figures`) and the question viewer (what it holds
    into `s.viewer`)."""
    out = Path(s.out)
    routers = write_routers([v.router for v in s.vrows if v.router is not None], out)
    s.figures = draw_figures(s.runs, s.vrows, s.agreements, s.settings.tolerance, out)
    s.viewer = write_viewer(s.questions, out)
    return routers + s.figures.files(out) + [out / name for name in s.viewer["files"]]


def present(s: Summary) -> Document:
    """The report as a document, rendered from the summary alone (its figures and router files drawn first:
    draw_files), section by section in the order of experiments.report.page.sections.SECTIONS."""
    doc, outline = Document("RAG vs long context: decision report"), Outline.of(SECTIONS)
    for section in SECTIONS:
        if section.TITLE:
            doc.add(Heading(2, outline.title(section.ANCHOR), section.ANCHOR))
        section.render(doc, s, outline)
    return doc


def build_report(paths: list[str], out_dir: Path | None = None,
                 settings: ReportSettings | None = None, pool_data: bool = False,
                 export: tuple[str, ...] = ()) -> dict[str, Path]:
    """Write every report file; return them by name. `export=("details",)`: the records as Parquet files too
    (experiments.report.export). Its arithmetic runs with one BLAS thread (experiments.report.blas_threads)."""
    with report_threads():
        return _write_report(paths, out_dir, settings, pool_data, export)


def _write_report(paths: list[str], out_dir: Path | None, settings: ReportSettings | None, pool_data: bool,
                  export: tuple[str, ...]) -> dict[str, Path]:
    settings = settings or load_settings()
    out = Path(out_dir) if out_dir else default_out_dir(paths)
    s = summarize(paths, settings, pool_data, out)
    out.mkdir(parents=True, exist_ok=True)
    written = draw_files(s) + [save_summary(s, out / SUMMARY_FILE)]
    doc = present(s)

    files = {"report.md": out / "report.md", "report.html": out / "report.html", "configs.csv": out / "configs.csv",
             "verdict.csv": out / "verdict.csv", "whatif.csv": out / "whatif.csv",
             "agreement.csv": out / "agreement.csv"}
    atomic_write_text(files["report.md"], to_markdown(doc))
    atomic_write_text(files["report.html"], to_html(doc))
    costs, lost, split = s.sections[whatif.ANCHOR], s.sections[lost_answers.ANCHOR], s.sections[overlap.ANCHOR]
    _write_csv(files["configs.csv"], s.sections[configs.ANCHOR].rows)
    if (out / OLD_CONFIGS_CSV).exists():  # written by a release before configs.csv: say where its table went
        log.warning("%s is an earlier report's per-config table, not rewritten: the table is now %s", out /
                    OLD_CONFIGS_CSV, files["configs.csv"])
    _write_csv(files["verdict.csv"], [{**v.as_csv(), "to_decide": p["column"], "to_decide_sentence": p["sentence"]}
                                      for v, p in zip(s.vrows, s.plans, strict=True)])
    _write_csv(files["whatif.csv"], [{k: getattr(w, k) for k in w.__dataclass_fields__} for w in costs.rows])
    _write_csv(files["agreement.csv"], [a.as_csv() for a in s.agreements])
    if costs.latency:
        files["latency.csv"] = out / "latency.csv"
        _write_csv(files["latency.csv"], [{k: getattr(r, k) for k in r.__dataclass_fields__} for r in costs.latency])
    if lost:
        files["lost_answers.csv"] = out / "lost_answers.csv"
        _write_csv(files["lost_answers.csv"], [r.as_csv() for r in lost])
    files[QUESTIONS_FILE] = out / QUESTIONS_FILE
    if split.splits:
        files["overlap.csv"] = out / "overlap.csv"
        _write_csv(files["overlap.csv"], [r.as_csv() for r in split.splits])
    files.update({(p.relative_to(out).as_posix() if p.parent.name == DATA_DIR else p.name): p for p in written})
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
    ap.add_argument("--weight", choices=("question", "document"),
                    help="Δ is the mean over questions (default) or over documents (each document's mean counts once)")
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
                                 router_family=args.router_family, weight=args.weight)
        say_building(args.dirs)
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


def say_building(paths: list[str]) -> None:
    """The line a command prints before it builds a report, the last step of a run that says nothing else while it
    works (the plan's simulated sweeps take seconds to a minute)."""
    print(f"writing the report of {', '.join(map(str, paths))} (the plan simulates sweeps: seconds to a minute)",
          flush=True)


def print_locations(files: dict[str, Path], resolve: bool = False) -> None:
    """Where the report, its HTML page and its table were written."""
    for label, name in (("report", "report.md"), ("html", "report.html"), ("table", "configs.csv"),
                        ("viewer", QUESTIONS_FILE)):
        print(f"{label + ':':7} {files[name].resolve() if resolve else files[name]}")


if __name__ == "__main__":
    sys.exit(main())
