"""How often the verdict decides, and decides wrongly, on sweeps with a known truth.

    python perf/verdict_simulation.py [--sweeps 40] [--rag-configs 12]

Per scenario (experiments.report.simulated_sweeps.SCENARIOS: RAG truly worse than the tolerance, all
configs equal, RAG clearly better, long context clearly better), writes simulated sweeps (one
long-context and N RAG configs, 40 documents x 10 correlated questions; see
experiments.report.simulated_sweeps.known_truth_sweep), runs each through the real report reader
and verdict (tolerance 2 points), and prints the share of sweeps decided rag, longctx,
inconclusive, no_decision, and with an interval excluding 0. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

import common  # noqa: F401  (sets up the path)

from experiments.report.settings import load_settings
from experiments.report.simulated_sweeps import SCENARIOS, decision_rates


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sweeps", type=int, default=40)
    ap.add_argument("--rag-configs", type=int, default=12)
    ap.add_argument("--resamples", type=int, default=1000)
    args = ap.parse_args()
    settings = load_settings(tolerance=2.0, resamples=args.resamples)
    out, t0 = {}, time.perf_counter()
    print(f"{'scenario':28} {'rag':>6} {'longctx':>8} {'inconcl.':>9} {'no_dec.':>8} {'CI excl. 0':>11}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in SCENARIOS:
            rates = decision_rates(tmp, name, args.sweeps, settings, n_rag_configs=args.rag_configs)
            out[name] = rates
            print(f"{name:28} {rates['rag']:6.2f} {rates['longctx']:8.2f} {rates['inconclusive']:9.2f} "
                  f"{rates['no_decision']:8.2f} {rates['excludes_0']:11.2f}")
    print(json.dumps({"sweeps_per_scenario": args.sweeps, "rag_configs": args.rag_configs, "rates": out,
                      "seconds": round(time.perf_counter() - t0, 1)}))


if __name__ == "__main__":
    main()
