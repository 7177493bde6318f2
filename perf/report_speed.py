"""How long the decision report takes on 100 run directories (target: under 30 s).

    python perf/report_speed.py [--runs 100] [--per-level 20]

Writes 100 synthetic run directories (experiments.simulate.sweeps: two benchmarks, each with long
context, a 2 retrievers x 4 chunk sizes x 6 top-k RAG grid, closed book, Self-Route, a
budget-matched long context and a retrieval-only run, 106 in all, the first 100 kept; 3 length
levels x 20 questions), then
times `build_report` on them: loading records, verdicts with paired bootstraps, what-if,
diagnostics, every plot, Markdown, HTML and CSV files.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import common  # sets up the path

from experiments.report.loading import load_runs
from experiments.report.page.build import build_report
from experiments.simulate.sweeps import make_sweep


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100, help="run directories kept (of the 106 written)")
    parser.add_argument("--per-level", type=int, default=20, help="questions per length level")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "sweep"
        dirs = make_sweep(root, benchmarks=("synthetic", "synthetic_b"), per_level=args.per_level,
                          chunk_sizes=(64, 128, 256, 512), top_ks=(1, 2, 4, 6, 8, 10))[:args.runs]
        records = sum(len(run.records) for run in load_runs(dirs).runs)
        t0, c0 = time.perf_counter(), time.process_time()
        files = build_report([str(d) for d in dirs], Path(tmp) / "report")
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        assert files["report.html"].stat().st_size > 0
        common.emit({"run_dirs": len(dirs), "records": records,
                     "plots": sum(p.suffix == ".png" for p in files.values()),
                     "html_bytes": files["report.html"].stat().st_size, "cpu_seconds": round(cpu, 2),
                     "seconds": round(seconds, 2)})


if __name__ == "__main__":
    main()
