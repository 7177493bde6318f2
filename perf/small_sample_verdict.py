"""Does the verdict keep its promises at the sample sizes teams bring? Coverage of the 95% interval and
the share of false `rag` decisions on simulated sweeps with a known truth, per number of documents, for
one config per arm and for 12 RAG configs (cross-fitted), with the report's own code
(experiments.simulate.scores: cluster_t, the repeated cross-fit, row_decision); the learned router's
interval on a null; and what several answers per question (`generator.samples`) buy.

    python perf/small_sample_verdict.py [--sweeps 1000] [--sweeps-12 400] [--sizes 2,4,6,8,12,20,40]
        [--router-sweeps 150] [--samples-sweeps 400] [--through-report 50]

The data model (experiments.simulate.scores): 3 questions per document, document difficulty shared by
every config (sd 0.15), a per-config per-document effect (sd 0.08), base accuracy 0.6; RAG cheaper, so
`rag` means "RAG is better, or at most 2 points worse" (tolerance 2). At a truth of -2 points every
`rag` is false (the goal: at most 2.5%, accepted up to 3%); at -5 points about 1%. Coverage: the share of
95% intervals holding the truth (goal 93.5-96.5%). Below the minimum of documents nothing is decided.
The router (experiments.report.router.fit) on the "null" scenario of experiments.simulate.router (nothing
to learn): how often its interval holds the true 0 and how often it would say `route` (lower end above
+2). `--through-report`: RAG truly 5 points worse over 2, 4 and 6 (the minimum) documents x 3 questions, through
`python -m experiments.report` itself: how often it says `rag`. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import time

import common  # noqa: F401  (sets up the path)
import numpy as np

from experiments.report.settings import load_settings
from experiments.report.verdict.decision import LONGCTX, MIN_DOCUMENTS, RAG, boundaries
from experiments.simulate.scores import SCENARIOS, scenario_of, scenario_scores, simulated_verdict

TOLERANCE = 2.0


def cell(n_docs: int, n_rag: int, truth: float, sweeps: int, settings, seed: int, samples: int = 1,
         scenario: str = "own") -> dict:
    """Coverage, decision shares and mean interval width over `sweeps` sweeps."""
    rng = np.random.default_rng(seed)
    covered = with_interval = 0
    kinds = {RAG: 0, LONGCTX: 0}
    widths = []
    for _ in range(sweeps):
        sweep = scenario_scores(rng, scenario, n_docs, truth, n_rag, samples=samples)
        decision, est, _ = simulated_verdict(sweep, settings)
        if est is not None:
            lo, hi = est.interval(0.95)
            with_interval += 1
            covered += lo <= truth <= hi
            widths.append(hi - lo)
        if decision.kind in kinds:
            kinds[decision.kind] += 1
    return {"coverage": covered / max(1, with_interval), "rag": kinds[RAG] / sweeps,
            "longctx": kinds[LONGCTX] / sweeps, "decided": (kinds[RAG] + kinds[LONGCTX]) / sweeps,
            "width": float(np.mean(widths)) if widths else None, "sweeps": sweeps}


def false_claim_truths(scenario: str) -> tuple[str, float, float]:
    """(the claim a scenario checks, the truth at its boundary, a truth 3 points beyond it on the claim's wrong
    side): a claim decided at either truth is false."""
    model = scenario_of(scenario)
    b_rag, b_lc = boundaries(TOLERANCE, model.rag_cheaper)
    if model.claim == RAG:
        return RAG, b_rag, b_rag - 3.0
    return LONGCTX, b_lc, b_lc + 3.0


def router_null(n_docs: int, sweeps: int, settings, seed: int) -> dict:
    """The learned router where nothing can be learned: coverage of 0 and false `route` (lower end > +2)."""
    from experiments.report.router.features import router_features
    from experiments.report.router.fit import route
    from experiments.simulate.router import simulated_pair

    covered = route_said = fitted = 0
    for i in range(sweeps):
        lc, rag = simulated_pair("null", n_docs=n_docs, per_doc=3, seed=seed + i)
        result = route(router_features(lc, rag), seed=settings.seed, n_resamples=settings.resamples,
                       splits=settings.splits)
        if result is None:
            continue
        fitted += 1
        lo, hi = result.ci
        covered += lo <= 0.0 <= hi  # routing truly gains nothing over the better arm (within its noise)
        route_said += lo > TOLERANCE
    return {"coverage_of_0": covered / max(1, fitted), "route": route_said / max(1, fitted), "sweeps": fitted}


def through_report(n_docs: int, sweeps: int, seed: int) -> dict:
    """The public path: run folders of one RAG config truly 5 points worse (and cheaper), `n_docs` documents
    x 3 questions, each read by `python -m experiments.report` (its main, in this process)."""
    import csv
    import tempfile
    from contextlib import redirect_stdout
    from io import StringIO
    from pathlib import Path

    from experiments.report.page.build import main as report_main
    from experiments.simulate.sweeps import known_truth_sweep

    said = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(sweeps):
            where = Path(tmp) / f"s{i}"
            known_truth_sweep(where, -0.05, n_rag_configs=1, n_docs=n_docs, questions_per_doc=3, seed=seed + i)
            with redirect_stdout(StringIO()):
                assert report_main([str(where), "--out", str(where / "report")]) == 0
            with open(where / "report" / "verdict.csv", newline="", encoding="utf-8") as f:
                said += next(csv.DictReader(f))["decision"] == RAG
    return {"documents": n_docs, "sweeps": sweeps, "rag": said}


def verdict_cells(scenario: str, sizes: list[int], sweeps: int, sweeps_12: int, settings, seed: int = 0) -> dict:
    """Per number of documents, one config and 12: coverage of the 95% interval and the share of false claims at
    the claim's boundary ("at_b") and 3 points beyond it ("beyond"), for the claim the scenario checks."""
    cells = {}
    claim, at_b, beyond = false_claim_truths(scenario)
    print(f"scenario {scenario}: false `{claim}` at truth {at_b:+g} and {beyond:+g}", flush=True)
    print(f"{'documents':>9} | {'1 config: coverage':>18} {'at b':>7} {'beyond':>7} | "
          f"{'12 configs: coverage':>20} {'at b':>7} {'beyond':>7}", flush=True)
    salt = list(SCENARIOS).index(scenario) * 1_000_003 + seed * 10_000_019
    for n in sizes:
        row = {}
        for n_rag, count in ((1, sweeps), (12, sweeps_12)):
            if not count:
                continue
            first = cell(n, n_rag, at_b, count, settings, seed=salt + 1000 * n + n_rag, scenario=scenario)
            second = cell(n, n_rag, beyond, count, settings, seed=salt + 7000 * n + n_rag, scenario=scenario)
            row[n_rag] = {"coverage": first["coverage"], "claim": claim, "false_at_b": first[claim],
                          "false_beyond": second[claim], "width": first["width"], "sweeps": count}
        cells[n] = row
        fmt = lambda r: (f"{100 * r['coverage']:17.1f}% {100 * r['false_at_b']:6.1f}% {100 * r['false_beyond']:6.1f}%"  # noqa: E731
                         if r else f"{'-':>18} {'-':>7} {'-':>7}")
        print(f"{n:>9} | {fmt(row.get(1))} | {fmt(row.get(12)):>37}", flush=True)
    return cells


def identical_cells(sizes: list[int], sweeps: int, settings) -> dict:
    """Arms that answer every question alike (near-identical with no miss): the share of sweeps deciding anything."""
    out = {}
    for n in sizes:
        r = cell(n, 1, 0.0, sweeps, settings, seed=80_000 + n, scenario="near_identical")
        out[n] = r["decided"]
        print(f"identical answers, {n} documents: decided in {100 * r['decided']:.1f}% of {sweeps} sweeps", flush=True)
    return out


def power_cells(sizes: list[int], sweeps: int, sweeps_12: int, settings) -> dict:
    """How often a clear 10-point difference is decided (RAG truly +10, and long context truly 10 better), one
    config and 12, in the project's own model."""
    out: dict = {}
    for truth, claim in ((10.0, RAG), (-10.0, LONGCTX)):
        for n in sizes:
            for n_rag, count in ((1, sweeps), (12, sweeps_12)):
                if count:
                    r = cell(n, n_rag, truth, count, settings, seed=95_000 + 31 * n + n_rag + int(truth),
                             scenario="own")
                    out[f"{truth:+g}/{n}/{n_rag}"] = r[claim]
                    print(f"power, truth {truth:+g}, {n} documents, {n_rag} config(s): {claim} in "
                          f"{100 * r[claim]:.1f}% of {count}", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sweeps", type=int, default=1000, help="sweeps per cell with one config per arm")
    ap.add_argument("--sweeps-12", type=int, default=400, help="sweeps per cell with 12 RAG configs")
    ap.add_argument("--sizes", default="2,4,6,8,12,20,40")
    ap.add_argument("--seed", type=int, default=0, help="another seed: fresh sweeps in every cell")
    ap.add_argument("--scenario", default="own", help=f"comma-separated, of: {', '.join(SCENARIOS)} (experiments."
                                                       "simulate.scores.SCENARIOS)")
    ap.add_argument("--router-sweeps", type=int, default=150, help="0: skip the router")
    ap.add_argument("--router-sizes", default="8,12,20,40")
    ap.add_argument("--samples-sweeps", type=int, default=400, help="0: skip the several-answers comparison")
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--identical-sweeps", type=int, default=0, help="arms answering alike: sweeps per size (0: skip)")
    ap.add_argument("--identical-sizes", default="6,8,12,20,40,80")
    ap.add_argument("--power-sweeps", type=int, default=0, help="a clear 10-point difference: sweeps per cell, one "
                                                               "config (0: skip); 12 configs get a third of them")
    ap.add_argument("--power-sizes", default="12,20")
    ap.add_argument("--through-report", type=int, default=50, help="sweeps per size through the report CLI (0: skip)")
    args = ap.parse_args()
    settings = load_settings(tolerance=TOLERANCE, resamples=args.resamples)
    sizes = [int(x) for x in args.sizes.split(",")]
    out: dict = {"min_documents": MIN_DOCUMENTS, "tolerance": TOLERANCE, "cells": {}}
    t0 = time.perf_counter()
    for scenario in args.scenario.split(","):
        out["cells"][scenario] = verdict_cells(scenario, sizes, args.sweeps, args.sweeps_12, settings, args.seed)
    if args.identical_sweeps:
        out["identical_decided"] = identical_cells([int(x) for x in args.identical_sizes.split(",")],
                                                   args.identical_sweeps, settings)
    if args.power_sweeps:
        out["power"] = power_cells([int(x) for x in args.power_sizes.split(",")], args.power_sweeps,
                                   max(1, args.power_sweeps // 3), settings)
    if args.router_sweeps:
        out["router_null"] = {}
        for n in [int(x) for x in args.router_sizes.split(",")]:
            r = router_null(n, args.router_sweeps, settings, seed=50_000 + n)
            out["router_null"][n] = r
            print(f"router, null, {n} documents: interval holds 0 in {100 * r['coverage_of_0']:.1f}%, says route in "
                  f"{100 * r['route']:.1f}% ({r['sweeps']} sweeps)", flush=True)
    if args.through_report:
        out["through_report"] = []
        for n in (2, 4, MIN_DOCUMENTS):  # below the minimum nothing is decided; at it, the rule itself
            r = through_report(n, args.through_report, seed=70_000 + n)
            out["through_report"].append(r)
            print(f"python -m experiments.report, RAG truly 5 points worse, {n} documents x 3 questions: rag in "
                  f"{r['rag']} of {r['sweeps']} sweeps", flush=True)
    if args.samples_sweeps:
        out["samples"] = {}
        for samples in (1, 4):
            r = cell(12, 1, 10.0, args.samples_sweeps, settings, seed=90_000 + samples, samples=samples)
            out["samples"][samples] = r
            print(f"12 documents x 3 questions, RAG truly +10, {samples} answer(s) per question: decided rag in "
                  f"{100 * r['rag']:.1f}%, mean interval width {r['width']:.1f} points", flush=True)
    out["seconds"] = round(time.perf_counter() - t0, 1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
