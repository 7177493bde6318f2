"""How often the cross-fitted router (experiments/report/router/fit.py) is found better than the best single
arm, on sweeps with a known truth (experiments/simulate/router.py).

    python perf/router_simulation.py [--sweeps 40] [--docs 40] [--per-doc 5] [--resamples 1000]
        [--scenarios length,null,split,flat] [--split-edge 0.15]

Scenarios: "length" (RAG right on short documents, long context on long ones: a router reading the
document's length is truly better), "null" (errors unrelated to every feature: no router is better),
"split" (the arms tie overall at about 60%, routing by length reaches about 75%: where a router earns its
place) and "flat" (the same documents, the arms tie and routing gains nothing). `--split-edge` sets how far
the split's arms part (experiments.simulate.router SPLIT_EDGE; 0.06: a router gains about the tolerance,
the boundary where `route` must keep its 5%).
Each sweep is written as run directories and read by the report's own code (experiments.report.decision_order:
the router per row, the two families' correction, the decision). Per scenario: the share of sweeps
decided `route` (issue 41's goals: at least 80% in "split", at most 5% in "flat"), the share whose
95% interval of Δ router - best arm lies above +2 points (the tolerance) and above 0, the share covering
0, the mean Δ, the mean share of the oracle gap closed and the mean share routed to RAG. The last line
is one JSON object.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import common
import numpy as np

from experiments.report.decision_order import verdicts
from experiments.report.loading import load_runs
from experiments.report.pricing import Pricing
from experiments.report.settings import ReportSettings
from experiments.report.verdict.decision import LONGCTX, RAG, ROUTE
from experiments.simulate.router import SCENARIOS, SPLIT_EDGE, write_router_sweep

TOLERANCE = 2.0


def one_sweep(where: Path, scenario: str, docs: int, per_doc: int, seed: int, resamples: int,
              split_edge: float = SPLIT_EDGE):
    """The verdict row of one simulated sweep, router included, as the report computes it."""
    write_router_sweep(where, scenario, n_docs=docs, per_doc=per_doc, seed=seed, split_edge=split_edge)
    runs = load_runs([where]).runs
    settings = ReportSettings(resamples=resamples, seed=seed, tolerance=TOLERANCE)
    (row,) = verdicts(runs, Pricing(settings, runs), settings)
    return row


def run(scenario: str, sweeps: int, docs: int, per_doc: int, resamples: int, split_edge: float = SPLIT_EDGE) -> dict:
    above_tol = above_0 = covers_0 = decided = arm_decided = 0
    diffs, gaps, rag = [], [], []
    for s in range(sweeps):
        with tempfile.TemporaryDirectory() as tmp:
            row = one_sweep(Path(tmp), scenario, docs, per_doc, 1000 + s, resamples, split_edge)
        result = row.router.result
        decided += row.decision.kind == ROUTE
        arm_decided += (row.arm_decision or row.decision).kind in (RAG, LONGCTX)
        above_tol += result.ci[0] > TOLERANCE
        above_0 += result.ci[0] > 0
        covers_0 += result.ci[0] <= 0 <= result.ci[1]
        diffs.append(result.diff)
        rag.append(result.share_rag)
        if result.gap_closed is not None:
            gaps.append(result.gap_closed)
    return {"sweeps": sweeps, "route_decided": decided / sweeps, "arm_decided": arm_decided / sweeps,
            "above_tolerance": above_tol / sweeps,
            "above_0": above_0 / sweeps, "covers_0": covers_0 / sweeps, "mean_diff": float(np.mean(diffs)),
            "mean_gap_closed": float(np.mean(gaps)) if gaps else None, "mean_share_rag": float(np.mean(rag))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sweeps", type=int, default=40)
    ap.add_argument("--docs", type=int, default=40)
    ap.add_argument("--per-doc", type=int, default=5)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--scenarios", default=",".join(SCENARIOS), help=f"comma-separated, of: {', '.join(SCENARIOS)}")
    ap.add_argument("--split-edge", type=float, default=SPLIT_EDGE, help="the split's arms at 0.6 +- this")
    args = ap.parse_args()
    start = time.perf_counter()
    rows = {sc: run(sc, args.sweeps, args.docs, args.per_doc, args.resamples, args.split_edge)
            for sc in args.scenarios.split(",")}
    print(f"{args.sweeps} sweeps per scenario, {args.docs} documents x {args.per_doc} questions, "
          f"tolerance {TOLERANCE} points")
    print(f"{'scenario':<8} {'route':>6} {'arm':>5} {'Δ > +tol':>9} {'Δ > 0':>7} {'covers 0':>9} {'mean Δ':>7} "
          f"{'gap closed':>11} {'to RAG':>7}")
    for sc, r in rows.items():
        gap = "n/a" if r["mean_gap_closed"] is None else f"{100 * r['mean_gap_closed']:.0f}%"
        print(f"{sc:<8} {100 * r['route_decided']:>5.0f}% {100 * r['arm_decided']:>4.0f}% "
              f"{100 * r['above_tolerance']:>8.0f}% "
              f"{100 * r['above_0']:>6.0f}% {100 * r['covers_0']:>8.0f}% "
              f"{r['mean_diff']:>+7.1f} {gap:>11} {100 * r['mean_share_rag']:>6.0f}%")
    common.emit({"router_simulation": {**{sc: rows[sc] for sc in rows}, "docs": args.docs, "per_doc": args.per_doc,
                                       "resamples": args.resamples, "tolerance": TOLERANCE,
                                       "split_edge": args.split_edge,
                                       "wall_s": round(time.perf_counter() - start, 1)}})


if __name__ == "__main__":
    main()
