"""How long the real-data loaders take: every non-legal Loong item, and LooGLE with evidence alignment.

    python perf/loader_speed.py [--loong ../shared/data/loong] [--loogle ../shared/data/loogle]

`seconds` is the time to load all Loong items whose documents are present (the 1,100 financial and
paper items of ../shared/data/loong; its 500 legal items have no documents and are skipped), each
context built from its document files as the released code builds it. Target: under 60 s. LooGLE
figures (time, evidence alignment counts) follow when its data is there. The last line is one
JSON object.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

import common  # sets up the path

from eval.benchmarks import load_benchmark
from eval.benchmarks.loogle import evidence_stats

DATA = common.ROOT.parent / "shared" / "data"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loong", default=str(DATA / "loong"))
    parser.add_argument("--loogle", default=str(DATA / "loogle"))
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    if not (Path(args.loong) / "loong.jsonl").is_file():
        sys.exit(f"no Loong data at {args.loong} (pass --loong)")
    t0 = time.perf_counter()
    res = load_benchmark({"name": "loong", "path": args.loong, "domains": ["financial", "paper"]})
    seconds = time.perf_counter() - t0
    figures = {
        "seconds": round(seconds, 3),
        "loong_samples": len(res.samples),
        "loong_context_mchars": round(sum(len(s.context) for s in res.samples) / 1e6, 1),
        "loong_documents": sum(len(s.documents) for s in res.samples),
    }
    del res
    if (Path(args.loogle)).exists():
        t0 = time.perf_counter()
        lg = load_benchmark({"name": "loogle", "path": args.loogle})
        figures["loogle_seconds"] = round(time.perf_counter() - t0, 3)
        figures["loogle_samples"] = len(lg.samples)
        stats = evidence_stats(lg.samples)
        pieces = sum(stats.values())
        figures.update({f"loogle_evidence_{k}": v for k, v in stats.items()})
        figures["loogle_evidence_kept_share"] = round((pieces - stats["dropped"]) / pieces, 4) if pieces else None
        qa = [s for s in lg.samples if s.task.endswith("_qa")]
        figures["loogle_qa_with_evidence"] = f"{sum(bool(s.evidence) for s in qa)}/{len(qa)}"
    common.emit(figures)


if __name__ == "__main__":
    main()
