"""Growth curves of the framework's own work: CPU seconds, peak memory and the ratio per step as the work grows.

    python perf/scale.py [--quick] [--stages start,bm25,minilm,longctx,report,export] [--model bundled:smollm2]
                         [--busy N] [--bm25-docs 64,256,1024] [--minilm-docs 16,64,256] [--longctx-docs 16,64,256]
                         [--report-per-level 20,80,320]

Each point is one fresh process, timed as a user would start it, its CPU (user + sys, so a shared machine's load
does not count) and its peak resident memory read from the operating system when it ends:

- `bm25`, `minilm`: a retrieval-only run (`arm=rag generator=none`) over a generated folder of N documents (about
  5.3 kB of text each) and N questions that name no documents, so each is asked over the whole folder
  (`benchmark.context=corpus`), as a team with a shared knowledge base runs it;
- `longctx`: long context over the same folder by dry run (`run.dry_run=true`: every prompt cut and counted,
  nothing generated);
- `report`: `python -m experiments.report` over a simulated sweep (experiments.simulate.sweeps: 2 benchmarks x 53
  configs, 3 length levels x P questions: 318 P records);
- `export`: the records of the same sweep read and written as Parquet files (`--export details`' work);
- `start`: the fixed cost of a process: `python -m experiments.run --help` and `python -m experiments.report --help`.

Each stage's fixed cost is its own point at the smallest work (1 document and 1 question; 1 question a level);
`per_step` gives, between neighbouring sizes, the size ratio, the CPU ratio, the CPU ratio above the fixed cost, and
`excess` = (CPU above fixed ratio) / (size ratio): 1 is linear, the goal is at most 1.5. `--busy N` keeps N
CPU-bound processes spinning while it measures (a busy machine). `--quick`: small sizes, for CI's smoke run.
The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import common  # sets up the path

STAGES = ("start", "bm25", "minilm", "longctx", "report", "export")
DOC_CHARS = 5300  # a document's text, about the folder (85 kB at 16 documents)
WORDS = ("report revenue region service warranty delivery customer contract invoice payment supplier quarter growth "
         "margin policy claim refund shipment order account budget forecast audit risk board meeting annual review "
         "product market price volume team project deadline release support hotline office harbor ledger copper "
         "orchard lantern quarry beacon summit glacier canyon harvest river stone vault signal meadow").split()
FULL = {"bm25": (64, 256, 1024), "minilm": (16, 64, 256), "longctx": (16, 64, 256), "report": (20, 80, 320)}
QUICK = {"bm25": (4, 16), "minilm": (4, 16), "longctx": (4, 16), "report": (2, 8)}


def document(i: int) -> tuple[str, str, str]:
    """Document i's text, its fact sentence (the evidence) and the fact's answer; the same whatever the folder size."""
    rng = random.Random(i)
    answer = f"{rng.choice(WORDS)} {rng.randint(1000, 9999)}"
    fact = f"The access code of ledger {i} is {answer}."
    sentences: list[str] = []
    while sum(len(s) + 1 for s in sentences) < DOC_CHARS:
        sentences.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 18))).capitalize() + ".")
    sentences.insert(rng.randrange(len(sentences)), fact)
    paragraphs = [" ".join(sentences[k:k + 6]) for k in range(0, len(sentences), 6)]
    return "\n\n".join(paragraphs), fact, answer


def make_folder(root: Path, n: int) -> tuple[Path, Path]:
    """`n` documents and one question each (evidence quoted, no documents named) under `root`."""
    docs = root / "docs"
    docs.mkdir(parents=True)
    rows = []
    for i in range(n):
        text, fact, answer = document(i)
        (docs / f"doc{i:05d}.txt").write_text(text, encoding="utf-8")
        rows.append({"id": f"q{i:05d}", "question": f"What is the access code of ledger {i}?", "answers": [answer],
                     "evidence": [fact]})
    questions = root / "questions.jsonl"
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return docs, questions


def measure(cmd: list[str]) -> dict[str, float]:
    """Run `cmd` to its end: its CPU seconds (user + sys), wall seconds and peak resident memory (MB), read from
    the operating system as it reaps the process."""
    with tempfile.TemporaryFile("w+") as log:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=common.ROOT, stdout=log, stderr=subprocess.STDOUT, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait for it again
        if proc.returncode:
            log.seek(0)
            raise SystemExit(f"{' '.join(cmd[:8])} ... failed ({proc.returncode}):\n{log.read()[-6000:]}")
    return {"wall_s": round(wall, 2), "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
            "peak_mb": round(usage.ru_maxrss / 1024, 1)}


def run_point(stage: str, n: int, model: str, tmp: Path) -> dict[str, float]:
    """One run of `stage` over a fresh folder of `n` documents (its own caches, so nothing carries over)."""
    where = tmp / f"{stage}_{n}"
    docs, questions = make_folder(where, n)
    cmd = [sys.executable, "-m", "experiments.run", "benchmark=corpus", f"benchmark.path={docs}",
           f"benchmark.questions={questions}", "benchmark.context=corpus", "benchmark.cache_dir=null",
           f"run.cache_dir={where / 'cache'}", f"hydra.run.dir={where / 'run'}", "run.progress=false"]
    if stage == "longctx":
        cmd += ["arm=longctx", f"generator.model={model}", "run.dry_run=true"]
    else:
        cmd += ["arm=rag", f"retriever={stage}", "generator=none", f"generator.tokenizer={model}"]
    return {"size": n, **measure(cmd)}


def sweep_dirs(root: Path, per_level: int, quick: bool) -> list[Path]:
    from experiments.simulate.sweeps import make_sweep

    grid = {"chunk_sizes": (128,), "top_ks": (1, 2)} if quick else {"chunk_sizes": (64, 128, 256, 512),
                                                                     "top_ks": (1, 2, 4, 6, 8, 10)}
    return make_sweep(root, benchmarks=("synthetic", "synthetic_b"), per_level=per_level, **grid)


EXPORT_CHILD = """
import sys
from pathlib import Path
from experiments.report.export import export_details
from experiments.report.loading import load_runs
runs = load_runs(sys.argv[2:]).runs
export_details(runs, Path(sys.argv[1]), 0.5, 0.5)
"""


def report_point(stage: str, per_level: int, quick: bool, tmp: Path) -> dict[str, float]:
    root = tmp / f"{stage}_{per_level}"
    dirs = sweep_dirs(root / "sweep", per_level, quick)
    from experiments.report.loading import load_runs  # the records counted as the report reads them

    records = sum(len(run.records) for run in load_runs(dirs).runs)
    if stage == "report":
        cmd = [sys.executable, "-m", "experiments.report", *map(str, dirs), "--out", str(root / "report")]
    else:
        cmd = [sys.executable, "-c", EXPORT_CHILD, str(root / "export"), *map(str, dirs)]
    figures = {"size": records, "per_level": per_level, **measure(cmd)}
    if stage == "report":
        figures["files_mb"] = report_files(root / "report")
    return figures


NOISE_S = 0.5  # CPU seconds above the fixed cost under which a ratio says nothing (a process's start varies so much)


def report_files(out: Path) -> dict[str, float]:
    """MB of the report's pages, its summary and each folder of files beside them (the viewer's parts)."""
    sizes = {}
    for p in sorted(out.iterdir()):
        if p.suffix in (".html", ".json") and not p.name.startswith("router_"):
            sizes[p.name] = round(p.stat().st_size / 1e6, 2)
        elif p.is_dir():
            files = [f for f in p.rglob("*") if f.is_file()]
            sizes[f"{p.name}/ ({len(files)} files)"] = round(sum(f.stat().st_size for f in files) / 1e6, 2)
    return sizes


def per_step(points: list[dict], fixed: float) -> list[dict]:
    """Between neighbouring sizes: the size ratio, the CPU ratio, the ratio above the fixed cost and its excess
    (None where the smaller point's work above the fixed cost is within the start's noise)."""
    steps = []
    for a, b in zip(points, points[1:], strict=False):
        size = b["size"] / a["size"]
        base = a["cpu_s"] - fixed
        above = (b["cpu_s"] - fixed) / base if base >= NOISE_S else None
        steps.append({"sizes": f"{a['size']}->{b['size']}", "size_ratio": round(size, 2),
                      "cpu_ratio": round(b["cpu_s"] / max(a["cpu_s"], 1e-9), 2),
                      "above_fixed_ratio": None if above is None else round(above, 2),
                      "excess": None if above is None else round(above / size, 2)})
    return steps


def stage_curve(stage: str, sizes: tuple[int, ...], args, tmp: Path) -> dict:
    if stage in ("report", "export"):
        fixed = report_point(stage, 1, args.quick, tmp / "fixed")
        points = [report_point(stage, p, args.quick, tmp) for p in sizes]
    else:
        fixed = run_point(stage, 1, args.model, tmp / "fixed")
        points = [run_point(stage, n, args.model, tmp) for n in sizes]
    for p in [fixed, *points]:
        print(f"{stage:>8} size {p['size']:>7}: {p['cpu_s']:8.2f} s CPU {p['wall_s']:8.2f} s wall "
              f"{p['peak_mb']:8.1f} MB peak", flush=True)
    steps = per_step(points, fixed["cpu_s"])
    excess = [s["excess"] for s in steps if s["excess"] is not None]
    return {"fixed": fixed, "points": points, "per_step": steps, "max_excess": max(excess) if excess else None}


def start_costs() -> dict:
    figures = {}
    for name, module in (("run_help", "experiments.run"), ("report_help", "experiments.report")):
        figures[name] = measure([sys.executable, "-m", module, "--help"])
        print(f"{'start':>8} {name}: {figures[name]['cpu_s']:.2f} s CPU {figures[name]['wall_s']:.2f} s wall",
              flush=True)
    return figures


def spinners(n: int) -> list[subprocess.Popen]:
    """`n` processes that keep a core busy each (ended by the caller)."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def sizes_of(text: str | None, default: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",")) if text else default


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (CI's smoke run)")
    parser.add_argument("--stages", default=",".join(STAGES), help=f"comma-separated, of {', '.join(STAGES)}")
    parser.add_argument("--model", default=common.SMOLLM2, help=common.MODEL_HELP + " (its tokenizer only)")
    parser.add_argument("--busy", type=int, default=0, help="CPU-bound processes kept spinning while measuring")
    for stage in FULL:
        what = "questions a length level" if stage == "report" else "documents"
        parser.add_argument(f"--{stage}-{'per-level' if stage == 'report' else 'docs'}", dest=stage,
                            help=f"{what}, comma-separated (default {FULL[stage]}, --quick {QUICK[stage]})")
    args = parser.parse_args()
    stages = [s for s in args.stages.split(",") if s]
    unknown = set(stages) - set(STAGES)
    if unknown:
        raise SystemExit(f"unknown stage(s) {sorted(unknown)}; known: {', '.join(STAGES)}")
    defaults = QUICK if args.quick else FULL
    figures: dict = {"quick": args.quick, "busy": args.busy, "cores": os.cpu_count()}
    busy = spinners(args.busy)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for stage in stages:
                if stage == "start":
                    figures["start"] = start_costs()
                    continue
                sizes = sizes_of(getattr(args, "report" if stage == "export" else stage), defaults[
                    "report" if stage == "export" else stage])
                figures[stage] = stage_curve(stage, sizes, args, Path(tmp) / stage)
    finally:
        for p in busy:
            p.kill()
            p.wait()
    figures["load_average_1min"] = round(os.getloadavg()[0], 1)
    common.emit(figures)


if __name__ == "__main__":
    main()
