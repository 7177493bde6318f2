"""How often the verdict decides, and decides wrongly, on sweeps with a known truth, against a single
pre-registered config on the same samples; and the family-wise error across several rows.

    python perf/verdict_simulation.py [--sweeps 40] [--rag-configs 12] [--compare-bootstraps] [--family-rows 6]

Per scenario (experiments.simulate.sweeps.SCENARIOS: RAG truly 5 points worse, all configs
equal, RAG clearly better, long context clearly better, 40 documents x 10 correlated questions; and
issue 25's sweeps of 40 documents x 5 questions, RAG 17 better and long context 21 better; see
known_truth_sweep), writes simulated sweeps of one long-context and N RAG configs, runs each
through the real report reader and verdict (tolerance 2 points, RAG cheaper), and prints the share
decided rag, longctx, inconclusive, with an interval excluding 0 and covering the truth, for the rule (the
configs cross-fitted out of all N) and for the first RAG config alone on the same samples (one
config fixed in advance: nothing chosen), and the ratio of their shares of the right decision
(`rag` where RAG is better or at most 2 points worse, `longctx` where it is worse by more).

--compare-bootstraps also gives, on the same sweeps, how often the cross-fitted 95% interval
covers the truth with each bootstrap of experiments.report.verdict.crossfit (recentred: the verdict's;
fixed choices; whole resampled means). --family-rows R checks Holm's correction on
--family-sweeps sweeps of R benchmarks with equal arms and RAG dearer, where any `rag` decision is
wrong (simulated_sweeps.family_error_rates). The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

import common  # noqa: F401  (sets up the path)

from experiments.report.settings import load_settings
from experiments.simulate.sweeps import SCENARIOS, decision_rates, family_error_rates

TOLERANCE = 2.0


def right_decision(truth_points: float) -> str:
    """The decision a sweep with this true RAG - long context should reach (RAG is cheaper here)."""
    return "rag" if truth_points > -TOLERANCE else "longctx"


class BootstrapCoverage:
    """Per sweep: does each bootstrap's cross-fitted 95% interval cover the true difference?"""

    def __init__(self, settings):
        self.settings, self.truth, self.covered, self.sweeps = settings, 0.0, {}, 0

    def __call__(self, runs) -> None:
        from experiments.report.halves import split_documents
        from experiments.report.pricing import Pricing
        from experiments.report.verdict.crossfit import BOOTSTRAPS, crossfit
        from experiments.report.verdict.selection import candidate_table, groups_of, longctx_candidates, rag_candidates

        lcs, rags = longctx_candidates(runs), rag_candidates(runs)
        groups = groups_of(lcs + rags, None)
        half_a, half_b = split_documents(set(groups.values()), self.settings.seed)
        table = candidate_table(lcs, rags, None, groups, Pricing(self.settings, runs), self.settings)
        for kind in BOOTSTRAPS:
            fit = crossfit(table, sorted(half_a), sorted(half_b), self.settings.resamples, self.settings.seed,
                           bootstrap=kind)
            self.covered[kind] = self.covered.get(kind, 0) + (fit.ci[0] <= self.truth <= fit.ci[1])
        self.sweeps += 1

    def shares(self) -> dict[str, float]:
        return {k: v / max(1, self.sweeps) for k, v in self.covered.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sweeps", type=int, default=40)
    ap.add_argument("--rag-configs", type=int, default=12)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--scenarios", nargs="*", default=list(SCENARIOS), choices=list(SCENARIOS))
    ap.add_argument("--compare-bootstraps", action="store_true")
    ap.add_argument("--family-rows", type=int, default=6, help="0: skip the family-wise check")
    ap.add_argument("--family-sweeps", type=int, default=200, help="sweeps of the family-wise check (cheap: 2 runs "
                                                                   "per row)")
    args = ap.parse_args()
    settings = load_settings(tolerance=TOLERANCE, resamples=args.resamples)
    out, t0 = {}, time.perf_counter()
    print(f"{'scenario':26} {'rule: rag':>9} {'longctx':>8} {'inconcl.':>8} {'excl. 0':>8} {'covers':>7} | "
          f"{'single: rag':>11} {'longctx':>8} {'excl. 0':>8} {'covers':>7} | {'right':>7} {'ratio':>6}"
          + ("  | covered: recentred / fixed / whole" if args.compare_bootstraps else ""))
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.scenarios:
            coverage = BootstrapCoverage(settings) if args.compare_bootstraps else None
            if coverage:
                coverage.truth = 100 * SCENARIOS[name]
            rates = decision_rates(tmp, name, args.sweeps, settings, n_rag_configs=args.rag_configs, on_sweep=coverage)
            single, right = rates["single"], right_decision(100 * SCENARIOS[name])
            ratio = rates[right] / single[right] if single[right] else None
            out[name] = {**rates, "right": right, "ratio": ratio}
            line = (f"{name:26} {rates['rag']:9.3f} {rates['longctx']:8.3f} {rates['inconclusive']:8.3f} "
                    f"{rates['excludes_0']:8.3f} {rates['covers_truth']:7.3f} | {single['rag']:11.3f} "
                    f"{single['longctx']:8.3f} {single['excludes_0']:8.3f} {single['covers_truth']:7.3f} | "
                    f"{right:>7} {'-' if ratio is None else f'{ratio:6.2f}':>6}")
            if coverage:
                out[name]["covered"] = coverage.shares()
                line += "  | " + " / ".join(f"{v:.3f}" for v in coverage.shares().values())
            print(line, flush=True)
        if args.family_rows:
            fam = family_error_rates(tmp, args.family_sweeps, settings, n_rows=args.family_rows)
            out["family"] = {"rows": args.family_rows, "sweeps": args.family_sweeps, **fam}
            print(f"family of {args.family_rows} rows x {args.family_sweeps} sweeps, arms equal, RAG dearer "
                  "(any rag is wrong): any wrong decision in "
                  f"{fam['holm']:.3f} of sweeps with Holm, {fam['per_row']:.3f} from each row's own interval; "
                  f"{fam['rows_wrong']:.3f} of rows wrong", flush=True)
    print(json.dumps({"sweeps_per_scenario": args.sweeps, "rag_configs": args.rag_configs, "rates": out,
                      "seconds": round(time.perf_counter() - t0, 1)}))


if __name__ == "__main__":
    main()
