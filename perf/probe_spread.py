"""Stated precision, measured: work probes back to back on one machine, and what each one prices RAG ÷ long context at.

    python perf/probe_spread.py --quick                                  # the tiny random-weight Llama, 3 probes
    python perf/probe_spread.py --probes 5 --runs outputs/demo           # SmolLM2 as the demo ran it
    python perf/probe_spread.py --probes 5 --runs outputs/decide/<folder>

Each probe measures anew (llm/work_probe.py; nothing is kept) on the generator the runs used (their config: model,
window, batch policy, prefix reuse; `--threads` for the torch threads, default the runs' setting), within the same
budget a run gives it, and prices the runs' records at its rates through the report's own code: for every RAG config
against the long-context config, per length level and over all, RAG ÷ LC's deployment cost with its interval
(experiments/report/verdict/cost_ratio.py). Without `--runs` (`--quick`), the records are a synthetic demo-like pair
(8 documents of 1,800 tokens with 6 questions each against RAG prompts of 300 tokens). Figures (last line, JSON):

- `probes`: per probe its typical error, the batches its budget left out, its charge of each config's answers over
  their measured CPU seconds (`priced_over_measured_cpu`, with `--runs`), and every ratio with its interval;
- `ratio_spread`: per ratio, the largest of the probes' points over the smallest;
- `intervals_overlap`: whether every two probes' intervals overlap, for every ratio;
- `each_holds_the_others_points`: the share of (probe, another probe) pairs whose interval holds the other's point,
  over every ratio (1.0: every interval holds every other probe's point);
- `rate_spread`: per rate, the probes' largest over their smallest.
"""

from __future__ import annotations

import argparse
import itertools
import time
from pathlib import Path

import common

from experiments.report.loading import load_runs
from experiments.report.pricing import Pricing
from experiments.report.runs import Run, levels_of
from experiments.report.settings import load_settings
from experiments.report.verdict.cost_ratio import cost_ratio
from llm.factory import build_generator
from llm.work_model import FEATURES, WorkModel
from llm.work_probe import BUDGET_S, measure

PRICE = {"name": "cpu-2vcpu", "kind": "hourly", "usd_per_hour": 0.08925, "devices": 1, "basis": "cpu", "vcpus": 2}


def _backend(generator):
    while getattr(generator, "inner", None) is not None:
        generator = generator.inner
    return generator


def synthetic_runs() -> list[Run]:
    """A demo-like pair: long context over 8 documents of 1,800 tokens, 6 questions each decoded together, and RAG
    prompts of 300 tokens; the fields the work model prices."""
    def rec(arm: str, d: int, j: int) -> dict:
        base = {"id": f"s{d}-{j}", "benchmark": "synthetic", "task": "t", "language": "en", "length_level": "1k",
                "group": f"d{d}", "arm": arm, "config_hash": arm, "status": "ok", "score": 0.5,
                "completion_tokens": 12 + j, "decode_batch": 6, "decode_steps": 17, "cpu_s": 1.0}
        if arm == "longctx":
            return {**base, "prompt_tokens": 1830 + j, "context_tokens": 1800, "prefix_group_size": 6,
                    "prefill_cpu_s": 1.0, "cost_usd": 1e-5}
        return {**base, "prompt_tokens": 300 + j, "context_tokens": 260, "n_chunks": 1, "retrieval_cpu_s": 0.002,
                "cost_usd": 1e-5}

    knobs_rag = {"arm": "rag", "benchmark": "synthetic", "generator": "g", "retriever": "bm25", "chunk_size": 128,
                 "top_k": 1, "order": "document"}
    return [Run(Path("longctx"), {"knobs": {"arm": "longctx", "benchmark": "synthetic", "generator": "g"},
                                  "price": PRICE}, [rec("longctx", d, j) for d in range(8) for j in range(6)]),
            Run(Path("rag"), {"knobs": knobs_rag, "price": PRICE, "index_cost": "lexical"},
                [rec("rag", d, j) for d in range(8) for j in range(6)])]


def generator_of(runs: list[Run], model: str | None, threads: int | None):
    """The generator the runs answered with (their config's `generator`), or `model` with the runs' settings."""
    cfg = next((dict(r.config.get("generator") or {}) for r in runs if r.config.get("generator")), {})
    if model is not None or not cfg:
        cfg = {**common.generator_config(model or common.SMOLLM2), **{k: cfg[k] for k in
                                                                        ("context_window", "decode_batch") if k in cfg}}
    if threads is not None:
        cfg["threads"] = threads
    return _backend(build_generator(cfg))


def ratios(runs: list[Run], work: WorkModel) -> dict[str, list[float]]:
    """RAG ÷ LC with its interval, per RAG config and level, all runs priced at `work`."""
    priced = [Run(r.path, {**r.metrics, "price": PRICE, "work_rates": work.to_dict()}, r.records, r.config,
                  r.overrides) for r in runs]
    settings = load_settings()
    pricing = Pricing(settings, priced)
    lcs = [r for r in priced if r.arm == "longctx"]
    out = {}
    for rag in (r for r in priced if r.arm == "rag"):
        for level in [*levels_of(priced), None]:
            c = cost_ratio(rag, lcs[0], pricing, settings, level)
            if c is not None:
                out[f"{rag.label} @ {level or 'all'}"] = [round(c.point, 4), round(c.low, 4), round(c.high, 4)]
    return out


def priced_over_measured(runs: list[Run], work: WorkModel) -> dict[str, float]:
    """Per config, the probe's charge of its answers (tokens at the probe's rates, plus measured retrieval) over their
    measured CPU seconds (answers generated, not replayed from the response cache)."""
    out = {}
    for run in runs:
        recs = [r for r in run.answered() if r.get("cpu_s") is not None and not r.get("cached")]
        if recs:
            out[run.label] = round(sum(work.cpu_s(r) for r in recs) / sum(float(r["cpu_s"]) for r in recs), 3)
    return out


def agreement(per_probe: list[dict[str, list[float]]]) -> tuple[dict[str, float], bool, float]:
    """(each ratio's largest point over its smallest, whether every two intervals overlap, the share of pairs of
    probes whose interval holds the other's point)."""
    keys = sorted(set.intersection(*(set(p) for p in per_probe)))
    spread = {k: round(max(p[k][0] for p in per_probe) / min(p[k][0] for p in per_probe), 3) for k in keys}
    overlap = all(a[k][1] <= b[k][2] and b[k][1] <= a[k][2]
                  for k in keys for a, b in itertools.combinations(per_probe, 2))
    holds = [a[k][1] <= b[k][0] <= a[k][2] for k in keys for a, b in itertools.permutations(per_probe, 2)]
    return spread, overlap, round(sum(holds) / len(holds), 3) if holds else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the tiny random-weight Llama on synthetic records")
    parser.add_argument("--probes", type=int, default=None, help="probes back to back (default 5; --quick 3)")
    parser.add_argument("--runs", action="append", default=[], help="a run or sweep folder whose records to price")
    parser.add_argument("--model", default=None, help=common.MODEL_HELP)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: the runs' setting)")
    parser.add_argument("--budget", type=float, default=BUDGET_S, help="each probe's budget in seconds")
    args = parser.parse_args()
    model = args.model
    if args.quick and model is None:
        from testsupport.tiny_llama import cached_tiny_llama

        model = str(cached_tiny_llama(common.ROOT / ".cache" / "test-models"))
    runs = load_runs(args.runs).runs if args.runs else synthetic_runs()
    generator = generator_of(runs if args.runs else [], model, args.threads)
    t0, probes, works = time.perf_counter(), [], []
    for i in range(args.probes or (3 if args.quick else 5)):
        work = measure(generator, args.budget)
        if work is None:
            probes.append({"probe": i + 1, "rates": None})
            continue
        works.append(work)
        probes.append({"probe": i + 1, "typical_error": round(work.rel_error, 4), "left_out": work.note or None,
                       "priced_over_measured_cpu": priced_over_measured(runs, work) if args.runs else None,
                       "ratios": ratios(runs, work)})
        print(f"probe {i + 1}: {probes[-1]}", flush=True)
    measured = [p["ratios"] for p in probes if p.get("ratios")]
    spread, overlap, holds = agreement(measured) if len(measured) > 1 else ({}, False, 0.0)
    common.emit({
        "model": Path(model).name if args.quick else (model or "the runs' generator"),
        "window": getattr(generator, "context_window", None), "decode_batch": getattr(generator, "decode_batch", None),
        "threads": generator.timing_context().get("threads"), "runs": args.runs or "synthetic demo-like pair",
        "probes": probes, "ratio_spread": spread, "intervals_overlap": overlap, "each_holds_the_others_points": holds,
        "rate_spread": {name: round(max(w.rates[i] for w in works) / max(min(w.rates[i] for w in works), 1e-12), 3)
                        for i, name in enumerate(FEATURES)} if works else {},
        "seconds": round(time.perf_counter() - t0, 1)})


if __name__ == "__main__":
    main()
