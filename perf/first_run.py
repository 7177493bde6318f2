"""How long a newcomer's first commands take, timed as a user runs them: the decision's dry run, the decision on a
folder of documents, the demo, and the fast tier of the tests (the times README.md and docs/getting-started.md
quote).

    python perf/first_run.py [--steps install,dry_run,decide,demo,test] [--docs examples/docs]
                             [--questions examples/questions.jsonl] [--fresh] [--out DIR]

Each step but `install` runs the `python -m` command its `make` target runs, with this environment's Python (the
one `make install` made):

- `install`: `git clone` of this repository into OUT/clone, then `make install` there (its own `.venv`, from PyPI;
  the clone is not timed)
- `dry_run`: `python -m experiments.decide DOCS QUESTIONS --out OUT/dry_run run.dry_run=true` (`make decide DRY_RUN=1`)
- `decide`: `python -m experiments.decide DOCS QUESTIONS --out OUT/decide` (`make decide`), to its report
- `demo`: `python -m experiments.demo` in OUT (`make demo`'s job), to its report
- `test`: `python -m pytest -q -m "not integration" -n 2` in the repository (`make test`)

The response cache and the probe's rates start empty in OUT/.cache (unless RAGLC_CACHE_DIR points elsewhere).
`--fresh`: the converted tokenizer and weights start empty too, as on a new machine, so the one-time conversions
are inside the times; without it the copies this machine keeps are read. Prints one line per step (seconds, exit
code, the load average at its start and end), then one JSON object; each step's own output is kept in
OUT/<step>.log (its `log`), so a step that exits non-zero says why. The machine's load moves these times
several-fold: read the load beside each.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT, emit

STEPS = ("install", "dry_run", "decide", "demo", "test")


def command(step: str, docs: Path, questions: Path, out: Path) -> tuple[list[str], Path]:
    """The step's command line and the folder it runs in."""
    if step == "install":
        return ["make", "-C", str(out / "clone"), "install"], out
    decide = [sys.executable, "-m", "experiments.decide", str(docs), str(questions), "--out", str(out / step)]
    if step == "dry_run":
        return decide + ["run.dry_run=true"], out
    if step == "decide":
        return decide, out
    if step == "demo":
        return [sys.executable, "-m", "experiments.demo"], out
    return [sys.executable, "-m", "pytest", "-q", "-m", "not integration", "-n", "2", "-p", "no:cacheprovider"], ROOT


def environment(out: Path, fresh: bool) -> dict[str, str]:
    """The steps' environment: the repository importable from any folder; with `fresh`, every cache under OUT."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    if fresh:
        for name in ("RAGLC_CACHE_DIR", "RAGLC_WORK_RATES_DIR", "RAGLC_TOKENIZER_CACHE", "RAGLC_WEIGHTS_CACHE"):
            env.pop(name, None)
        env["XDG_CACHE_HOME"] = str(out / "xdg-cache")  # converted tokenizer and weights (llm/)
        env["RAGLC_CACHE_DIR"] = str(out / ".cache")  # responses, indexes, the probe's rates
    return env


def time_step(step: str, docs: Path, questions: Path, out: Path, env: dict[str, str]) -> dict:
    cmd, cwd = command(step, docs, questions, out)
    if step == "install":  # a fresh clone of what is committed here, as a newcomer gets it
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(out / "clone")], check=True)
        env = {k: v for k, v in env.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    load_start = os.getloadavg()[0]
    t0 = time.perf_counter()
    log = out / f"{step}.log"  # the step's own output, kept: what failed, when a step exits non-zero
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w", encoding="utf-8") as stdout:
        done = subprocess.run(cmd, cwd=cwd, env=env, stdout=stdout, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - t0
    figures = {"seconds": round(seconds, 1), "returncode": done.returncode, "load_start": round(load_start, 2),
               "load_end": round(os.getloadavg()[0], 2), "command": " ".join(cmd[1:]), "log": str(log)}
    if done.returncode != 0:
        figures["stderr_tail"] = done.stderr[-1500:]
    print(f"{step}: {seconds:.1f} s (exit {done.returncode}; load average {load_start:.1f} -> "
          f"{figures['load_end']:.1f})", flush=True)
    return figures


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", default="dry_run", help=f"comma-separated, in order: {', '.join(STEPS)}")
    ap.add_argument("--docs", type=Path, default=ROOT / "examples" / "docs")
    ap.add_argument("--questions", type=Path, default=ROOT / "examples" / "questions.jsonl")
    ap.add_argument("--fresh", action="store_true", help="every cache empty, as on a new machine")
    ap.add_argument("--out", type=Path, default=None, help="working folder (default: a temporary one)")
    args = ap.parse_args()
    steps = [s.strip() for s in args.steps.split(",") if s.strip()]
    unknown = sorted(set(steps) - set(STEPS))
    if unknown:
        ap.error(f"unknown steps {unknown}; allowed: {', '.join(STEPS)}")
    out = (args.out or Path(tempfile.mkdtemp(prefix="first-run-"))).resolve()
    out.mkdir(parents=True, exist_ok=True)
    env = environment(out, args.fresh)
    results = {s: time_step(s, args.docs.resolve(), args.questions.resolve(), out, env) for s in steps}
    emit({"steps": results, "fresh": args.fresh, "cpus": os.cpu_count(), "out": str(out)})
    return 0 if all(r["returncode"] == 0 for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
