"""How long question generation takes with the embedded model, and what share of items it keeps (by drop reason).

    python perf/question_generation.py [--n 100] [--docs DIR] [--generator smollm2] [--drop-closed-book]

Documents: `--docs DIR`, else the 5 LooGLE short-dependency documents of `../shared/data/loogle` written out as
`.txt` files, else (no shared data) 5 English haystacks of the synthetic benchmark (about 4k tokens each).
Runs `python -m testset` in this process with a fresh response cache (every call is made; `--work DIR`
keeps it, so a rerun resumes), prints
5 kept items and the figures: seconds, seconds per item and per kept question, share kept, share dropped by
reason, lexical-overlap buckets; the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import common  # sets up the path

from testset.checks import REASONS
from testset.cli import parse_args, run

LOOGLE = common.ROOT.parent / "shared" / "data" / "loogle" / "shortdep_qa.jsonl"


def write_documents(folder: Path) -> str:
    """Write the default documents into `folder`; returns what they are."""
    folder.mkdir(parents=True, exist_ok=True)
    if LOOGLE.is_file():
        for i, line in enumerate(LOOGLE.read_text(encoding="utf-8").splitlines()[:5]):
            row = json.loads(line)
            (folder / f"loogle_{i}.txt").write_text(f"{row['title']}\n\n{row['input']}", encoding="utf-8")
        return "5 LooGLE shortdep_qa documents"
    from eval.benchmarks.synthetic import make_haystack

    for i in range(5):
        context = make_haystack(seed=i, language="en", tokens=4000, n_questions=4, haystack_id=f"h{i}")[0].context
        (folder / f"synthetic_{i}.txt").write_text(context, encoding="utf-8")
    return "5 synthetic haystacks (en, 4k tokens)"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=100)
    p.add_argument("--docs", default=None, help="a folder of documents (default: see the module docstring)")
    p.add_argument("--generator", default="smollm2")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-new-tokens", type=int, default=None)
    p.add_argument("--drop-closed-book", action="store_true")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a generator setting, e.g. --set threads=1 (on a shared CPU, one torch thread per process "
                        "avoids oversubscription)")
    p.add_argument("--samples", type=int, default=5, help="kept items to print")
    p.add_argument("--work", default=None, help="keep the documents, outputs and response cache here (a rerun "
                                                "resumes; default: a temporary folder)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="question_generation_") as scratch:
        tmp = args.work or scratch
        docs = Path(args.docs) if args.docs else Path(tmp) / "docs"
        what = str(docs) if args.docs else write_documents(docs)
        out = Path(tmp) / "out" / "questions.jsonl"
        argv = ["--docs", str(docs), "--out", str(out), "--generator", args.generator, "--n", str(args.n),
                "--seed", str(args.seed), "--cache-dir", str(Path(tmp) / "cache"), "--yes"]
        argv += ["--max-new-tokens", str(args.max_new_tokens)] if args.max_new_tokens else []
        argv += ["--drop-closed-book"] if args.drop_closed_book else []
        argv += [x for kv in args.set for x in ("--set", kv)]
        t0 = time.perf_counter()
        summary = run(parse_args(argv))
        seconds = time.perf_counter() - t0
        rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    for row in rows[:args.samples]:
        print(json.dumps({k: row[k] for k in ("type", "question", "answers", "evidence", "lexical_overlap")}
                         | {"source": row["provenance"]["source"]}, ensure_ascii=False))
    planned, kept = summary["planned"], summary["kept"]
    figures = {"documents": what, "generator": summary["generator"], "settings": args.set, "items": planned,
               "kept": kept,
               "share_kept": round(kept / planned, 3), "seconds": round(seconds, 1),
               "seconds_per_item": round(seconds / planned, 2),
               "seconds_per_kept": round(seconds / kept, 2) if kept else None,
               "calls": summary["calls"]["answered_by_backend"], "kept_by_type": summary["kept_by_type"],
               "overlap_buckets": summary["overlap_buckets"]}
    figures |= {f"share_dropped_{r}": round(summary["dropped"][r] / planned, 3) for r in REASONS}
    common.emit(figures)


if __name__ == "__main__":
    main()
