"""`rol-decide` / `python -m experiments.decide`: long context against a first RAG sweep on your own documents,
then the report (what `make decide` runs).

    rol-decide DOCS QUESTIONS [--out DIR] [OVERRIDE ...]     e.g. generator=openai rag.top_k=4,8
    rol-decide DOCS QUESTIONS run.dry_run=true price=gpt-4o  the pre-flight estimate only (experiments/dry_run.py)

Runs the Hydra multirun `experiment=decide` (conf/experiment/decide.yaml) over the folder DOCS and the questions
file QUESTIONS into DIR (default outputs/decide/<DOCS with / as _>_d<hash of the documents>_q<hash of the
questions>: one sweep folder per set of documents and questions, so two corpora or two versions of a questions
file never share a report), then writes the report there and prints where it is. Rerunning resumes.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

from eval.corpus.fingerprint import data_fingerprint


def sweep_folder(docs: str, questions: str) -> Path:
    """outputs/decide/<the folder's path, / as _>_d<documents' hash>_q<questions' hash>: one sweep folder per set
    of documents and questions (an edited questions file gets a new one; eval/corpus/fingerprint.py)."""
    data = data_fingerprint(docs, questions)
    name = re.sub(r"[^\w.-]+", "_", docs.rstrip("/")).strip("._") or "docs"  # a name Hydra's override grammar reads
    return Path("outputs/decide") / f"{name}_d{data['documents']}_q{data['questions']}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="rol-decide", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("docs", help="the folder of documents (benchmark.path)")
    ap.add_argument("questions", help="the questions file, .jsonl or .csv (benchmark.questions)")
    ap.add_argument("--out", type=Path, default=None,
                    help="the sweep folder (default: outputs/decide/<docs>_d<hash>_q<hash>)")
    ap.add_argument("overrides", nargs="*", help="Hydra overrides for the sweep (generator=openai rag.top_k=4,8)")
    args = ap.parse_intermixed_args(argv)  # overrides may follow --out (make decide DECIDE_DIR=... DRY_RUN=1)
    for what, path in (("DOCS", args.docs), ("QUESTIONS", args.questions)):
        if not Path(path).exists():
            print(f"error: {what}={path!r} does not exist", file=sys.stderr)
            return 2
    out = args.out or sweep_folder(args.docs, args.questions)
    cmd = [sys.executable, "-m", "experiments.run", "-m", "experiment=decide", f"benchmark.path={args.docs}",
           f"benchmark.questions={args.questions}", f"hydra.sweep.dir={out}", *args.overrides]
    proc = subprocess.Popen(cmd)
    try:
        returncode = proc.wait()
    except KeyboardInterrupt:  # Ctrl-C reaches the sweep too: it says what it recorded and how to resume
        returncode = proc.wait()
    if returncode == 130:  # interrupted: the run said what it recorded and how to resume
        return 130
    if returncode != 0:
        print(f"the sweep failed (exit {returncode}); rerun the same command to resume", file=sys.stderr)
        return returncode
    if any(o.replace(" ", "").lower() in ("run.dry_run=true", "+run.dry_run=true") for o in args.overrides):
        print(f"dry run: nothing generated, no report; each config point's estimate is in {out}/*/dry_run.json. "
              "Run the same command without run.dry_run=true (DRY_RUN=1) for the sweep and its report.")
        return 0
    # imported here, not above: the report's modules (scipy, matplotlib) take about 2 s to import, which a dry
    # run, which writes no report, should not wait for
    from experiments.report.page.build import build_report, print_locations, say_building

    say_building([str(out)])
    print_locations(build_report([str(out)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
