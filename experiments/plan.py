"""`python -m experiments.plan RUN_DIRS [--tolerance 2] [--power 0.8]`: how much data each verdict
row needs to be decided (experiments.report.verdict.power), one JSON object per row on stdout.

Reads the run directories as `python -m experiments.report` does (the same verdict rows, the same
settings file and tolerance), then per row prints the minimum detectable difference at the current
number of documents and the documents at which a sweep decides with the given power, found by
simulating the verdict's whole rule (selection, cross-fitting, the family) on a bootstrap of these
documents (experiments.report.verdict.sizing). It plans for the difference that matters to you:
`--difference` points (default: report.yaml `plan.difference`, with the observed difference's sign);
`--observed` plans for the observed difference instead (noisy on a small pilot).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from experiments.report.blas_threads import report_threads
from experiments.report.decision_order import verdicts
from experiments.report.loading import load_runs
from experiments.report.pricing import Pricing
from experiments.report.settings import load_settings
from experiments.report.verdict_row import plan_rows


def plan(paths: list[str], tolerance: float | None = None, power: float = 0.8, settings_path: Path | None = None,
         difference: float | None = None, observed: bool = False) -> list[dict]:
    """The plan of every verdict row of the runs under `paths`."""
    if not 0 < power < 1:
        raise ValueError(f"--power {power}: must be between 0 and 1 (e.g. 0.8)")
    settings = load_settings(settings_path, tolerance=tolerance)
    runs = load_runs(paths).runs
    if not runs:
        raise ValueError(f"no records.jsonl in any run directory under {', '.join(paths)}: nothing to plan from")
    with report_threads():  # its simulations multiply small matrices thousands of times
        rows = verdicts(runs, Pricing(settings, runs), settings, routers=False)
        if not rows:
            raise ValueError("no verdict rows: the runs have no scored records")
        return plan_rows(rows, settings, power, difference, observed)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.plan", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dirs", nargs="+", help="multirun folders and/or run folders (each with metrics.json)")
    ap.add_argument("--tolerance", type=float, help="points (x100) RAG may trail long context (default: settings)")
    ap.add_argument("--power", type=float, default=0.8, help="chance a sweep of the planned size decides (0.8)")
    ap.add_argument("--difference", type=float,
                    help="plan for this true RAG - long context difference (points; default: report.yaml "
                         "plan.difference "
                         "with the observed difference's sign)")
    ap.add_argument("--observed", action="store_true", help="plan for the observed difference instead")
    ap.add_argument("--settings", type=Path, default=None, help="report settings YAML (default: conf/report.yaml)")
    args = ap.parse_args(argv)
    try:
        if args.observed and args.difference is not None:
            raise ValueError("give --difference or --observed, not both")
        rows = plan(args.dirs, args.tolerance, args.power, args.settings, args.difference, args.observed)
    except (FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for row in rows:
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
