"""Rerunning a finished 10-sample run: generation calls made and time against the first run.

    python perf/response_cache.py [--haystacks 2] [--questions 5] [--model bundled:smollm2]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import common
from hydra import compose, initialize_config_dir

from experiments.run import run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--haystacks", type=int, default=2, help="1k-token haystacks")
    parser.add_argument("--questions", type=int, default=5, help="questions per haystack")
    parser.add_argument("--model", default=common.SMOLLM2, help=common.MODEL_HELP)
    args = parser.parse_args()
    n = args.haystacks * args.questions
    with tempfile.TemporaryDirectory() as tmp, initialize_config_dir(str(common.ROOT / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=[
            "benchmark.languages=[en]", "benchmark.levels=[1k]", f"benchmark.haystacks_per_level={args.haystacks}",
            f"benchmark.questions_per_haystack={args.questions}", f"generator.model={args.model}",
            f"run.cache_dir={tmp}/cache", "run.progress=false"])
        first_dir, again_dir = Path(tmp, "first"), Path(tmp, "again")
        first_dir.mkdir(), again_dir.mkdir()
        t0 = time.perf_counter()
        first = run(cfg, first_dir)
        t_first = time.perf_counter() - t0
        t0 = time.perf_counter()
        again = run(cfg, again_dir)  # a fresh directory: only the response cache can save work
        t_again = time.perf_counter() - t0
    assert first["n"] == n and again["score"] == first["score"]
    common.emit({
        "samples": first["n"],
        "generation_calls_first_run": first["generation_calls"],
        "generation_calls_on_rerun": again["generation_calls"],
        "first_run_seconds": round(t_first, 2),
        "rerun_seconds": round(t_again, 2),
        "time_ratio": round(t_again / t_first, 4),
    })


if __name__ == "__main__":
    main()
