"""Does the live router arm reproduce the report's router? (issue 26: deployable)

    python perf/router_live_check.py RUN_DIRS... --level all --out DIR -- HYDRA_OVERRIDES...
    # e.g. on the demo (the overrides name the row's RAG config, as the report's table shows it):
    python perf/router_live_check.py outputs/demo --level all --out /tmp/live -- \\
        experiment=demo demo_point=rag_bm25_c128_k1

The report's router estimate is cross-fitted: the model learned on one half of the documents routes the
other half. This script deploys exactly those two models: it writes each as a router file, runs
`python -m experiments.run arm=router router.path=FILE` once per file over the benchmark (with the same
response cache, so answers already generated are reused), and keeps, from each run, the questions of
the half that model was not trained on. It prints how often the live routes equal the report's, the
live cross-fitted score against the report's, and the live Δ against the best arm beside the report's
interval. With `--full` it also runs the report's deployed file (the fit on all documents) and prints
its score: an in-sample figure, which is why the report does not use it as its estimate.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import common

from experiments.arms.router_model import Router, save_router
from experiments.report.decision_order import verdicts
from experiments.report.loading import load_runs
from experiments.report.pricing import Pricing
from experiments.report.router.evaluate import deployable
from experiments.report.router.features import router_features
from experiments.report.router.fit import half_models
from experiments.report.settings import load_settings


def live_records(overrides: list[str], router: Path, run_dir: Path) -> dict[str, dict]:
    cmd = [sys.executable, "-m", "experiments.run", *overrides, "arm=router", f"router.path={router}",
           f"hydra.run.dir={run_dir}", "run.progress=false"]
    subprocess.run(cmd, check=True, cwd=common.ROOT)
    runs = load_runs([run_dir]).runs
    if len(runs) != 1:
        raise SystemExit(f"{run_dir}: the live router run wrote no records")
    return {str(r["id"]): r for r in runs[0].records}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--level", default="all")
    ap.add_argument("--benchmark", default=None, help="the verdict row's benchmark (default: the only one)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--full", action="store_true", help="also run the deployed fit on all documents (in-sample)")
    args, overrides = ap.parse_known_args()
    overrides = [o for o in overrides if o != "--"]
    settings = load_settings()
    runs = load_runs(args.runs).runs
    rows = [v for v in verdicts(runs, Pricing(settings, runs), settings)
            if v.level == args.level and (args.benchmark is None or v.benchmark == args.benchmark)]
    if len(rows) != 1 or rows[0].router is None:
        raise SystemExit(f"no single verdict row with a router at level {args.level!r}")
    row, lvl = rows[0], None if args.level == "all" else args.level
    result = row.router.result
    by_id = lambda run: {str(r["id"]): r for r in run.records_at(lvl)}  # noqa: E731
    features = router_features(by_id(row.lc), by_id(row.rag), cost_unit="prompt_tokens")
    args.out.mkdir(parents=True, exist_ok=True)
    live_route, live_score = {}, {}
    for half, model in half_models(features, settings.seed).items():
        path = save_router(Router(model, trained_on={"half": half}), args.out / f"router_half_{half}.json")
        recs = live_records(overrides, path, args.out / f"run_{half}")
        for i, h in result.half_of.items():
            if h == half and i in recs and recs[i].get("score") is not None:
                live_route[i], live_score[i] = recs[i]["route"], float(recs[i]["score"])
    ids = sorted(live_score)
    agree = sum(live_route[i] == result.routes[i] for i in ids) / len(ids)
    live_mean = 100 * sum(live_score.values()) / len(ids)
    live_diff = live_mean - result.best_arm_mean
    figures = {"row": f"{row.benchmark} {row.level}", "questions": len(ids), "of": result.n,
               "routes_agree": round(agree, 4), "report_router": round(result.router_mean, 2),
               "live_router": round(live_mean, 2), "best_arm": round(result.best_arm_mean, 2),
               "report_diff": round(result.diff, 2), "report_ci95": [round(c, 2) for c in result.ci],
               "live_diff": round(live_diff, 2), "live_diff_in_ci": result.ci[0] <= live_diff <= result.ci[1]}
    if args.full:
        full = save_router(deployable(row.router), args.out / "router_full.json")
        recs = live_records(overrides, full, args.out / "run_full")
        scores = [float(recs[i]["score"]) for i in ids if recs.get(i, {}).get("score") is not None]
        figures["full_fit_in_sample"] = round(100 * sum(scores) / len(scores), 2)
    common.emit({"router_live_check": figures})


if __name__ == "__main__":
    main()
