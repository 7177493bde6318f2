"""Synthetic run directories with known numbers, laid out as the runner writes them
(records.jsonl, metrics.json, .hydra/config.yaml and overrides.yaml): for the report's tests,
its speed check, and for trying the report without running a model.

    python -m experiments.simulate.sweeps /tmp/example_sweep
    # then:
    python -m experiments.report /tmp/example_sweep

Per sample the outcome is drawn from a seeded generator: long context answers right with
probability 0.75 unless truncation cut the evidence (long levels); a RAG config retrieves the
evidence more often with more chunks and answers right with probability 0.85 when it did, 0.1
when it did not, a little less with many chunks (distraction). Numbers are plausible, not real.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

from experiments import records as schema
from experiments.arms import ROLE_LONGCTX, ROLE_RAG
from experiments.arms.closedbook import ClosedBookSpec
from experiments.arms.longctx import LongContextSpec
from experiments.arms.rag import RagSpec
from experiments.arms.selfroute import SelfRouteSpec
from experiments.run_writer import write_run_dir

LEVELS = ("1k", "2k", "4k")
LEVEL_TOKENS = {"1k": 1000, "2k": 2000, "4k": 4000, "8k": 8000, "16k": 16000}


def write_run(run_dir: Path, knobs: dict[str, Any], records: list[dict[str, Any]], config: dict[str, Any] | None = None,
              overrides: list[str] | None = None, extra_metrics: dict[str, Any] | None = None) -> Path:
    cfg = config or {"benchmark": {"name": knobs.get("benchmark"), "seed": 0, "levels": list(LEVELS)},
                     "generator": {"model": knobs.get("generator"), "backend": "transformers"},
                     "arm": {"name": knobs["arm"]}}
    # what the run's retriever would declare (llm.cost's index-cost kinds): the simulated "bm25" is lexical
    index = {} if "retriever" not in knobs else {"index_cost": "lexical" if knobs["retriever"] == "bm25" else "dense"}
    return write_run_dir(run_dir, knobs, records, cfg, overrides or [f"arm={knobs['arm']}"],
                         extra_metrics={"wall_s": 1.0, **index, **(extra_metrics or {})})


def _sample_ids(benchmark: str, levels: tuple[str, ...], per_level: int) -> list[tuple[str, str, float]]:
    out = []
    for lvl in levels:
        for i in range(per_level):
            out.append((f"{benchmark}-{lvl}-{i:03d}", lvl, (i * 0.37) % 1.0))
    return out


def _base(benchmark: str, sid: str, lvl: str, depth: float, knobs: dict[str, Any]) -> dict[str, Any]:
    return {"id": sid, "benchmark": benchmark, "task": "kv", "language": "en", "length_level": lvl,
            "group": sid.rsplit("-", 1)[0] + f"-{int(sid[-3:]) // 3}", "arm": knobs["arm"], "depth": round(depth, 3),
            "answers": ["x"]}


def _answered(rng: random.Random, p: float, prompt_tokens: int) -> dict[str, Any]:
    right = rng.random() < p
    return {"status": schema.OK, "prediction": "x" if right else "y", "score": 1.0 if right else 0.0,
            "scores": {"score": 1.0 if right else 0.0}, "prompt_tokens": prompt_tokens, "completion_tokens": 8,
            "latency_s": round(0.5 + prompt_tokens / 800, 4), "ttft_s": None, "cached": False}


def longctx_records(benchmark: str, samples, knobs: dict[str, Any], seed: int, budget: int | None = None,
                    window: int = 3000) -> list[dict[str, Any]]:
    rng = random.Random(f"{seed}-{benchmark}-lc-{budget}")
    out = []
    for sid, lvl, depth in samples:
        full = LEVEL_TOKENS[lvl]
        kept = min(full, window, budget or full)
        truncated = kept < full
        cut = (1 - kept / full) / 2  # middle truncation: the middle `cut*2` share is gone
        retained = 0.0 if truncated and 0.5 - cut < depth < 0.5 + cut else 1.0
        rec = {**_base(benchmark, sid, lvl, depth, knobs), **_answered(rng, 0.75 if retained else 0.08, kept + 60),
               "context_tokens": kept, "context_tokens_full": full, "truncated": truncated,
               "kept_spans": [[0, kept]], "evidence_retained": retained,
               "distractors_retained": 1.0 if not truncated else 0.5}
        out.append(rec)
    return out


def rag_records(benchmark: str, samples, knobs: dict[str, Any], seed: int,
                retrieval_only: bool = False) -> list[dict[str, Any]]:
    k, chunk = int(knobs["top_k"]), int(knobs["chunk_size"])
    quality = 0.55 if knobs["retriever"] == "bm25" else 0.65
    rng = random.Random(f"{seed}-{benchmark}-{knobs['retriever']}-{chunk}-{k}-{knobs.get('order')}")
    out = []
    for sid, lvl, depth in samples:
        n_chunks = max(1, LEVEL_TOKENS[lvl] // chunk)
        p_hit = {n: min(1.0, 1 - (1 - quality) ** n) for n in (1, 3, 5, 10)}
        u = rng.random()
        recall = {str(n): 1.0 if u < p else 0.0 for n, p in p_hit.items()}
        in_prompt = 1.0 if u < min(1.0, 1 - (1 - quality) ** k) else 0.0
        base = {**_base(benchmark, sid, lvl, depth, knobs), "n_chunks": n_chunks,
                "retrieved": [{"chunk": i, "start": 0, "end": 1, "score": 1.0, "doc_id": None}
                              for i in range(min(k, n_chunks))],
                "context_tokens": min(k, n_chunks) * chunk, "evidence_recall": recall, "evidence_in_prompt": in_prompt,
                "distractors_retrieved": 1.0 if rng.random() < min(0.9, 0.1 * k) else 0.0}
        if retrieval_only:
            out.append(schema.retrieved_record(base, {}))
            continue
        p = (0.85 - 0.02 * max(0, k - 4)) if in_prompt else 0.1
        out.append({**base, **_answered(rng, p, base["context_tokens"] + 60)})
    return out


def closedbook_records(benchmark: str, samples, knobs: dict[str, Any], seed: int) -> list[dict[str, Any]]:
    rng = random.Random(f"{seed}-{benchmark}-cb")
    return [{**_base(benchmark, sid, lvl, depth, knobs), **_answered(rng, 0.05, 60)} for sid, lvl, depth in samples]


def selfroute_records(benchmark: str, rag: list[dict[str, Any]], lc: list[dict[str, Any]],
                      knobs: dict[str, Any]) -> list[dict[str, Any]]:
    """Declines where RAG missed the evidence; then the long-context answer, with both prompts' tokens."""
    lc_by = {r["id"]: r for r in lc}
    out = []
    for r in rag:
        rec = {**r, "arm": SelfRouteSpec.name}
        if r.get("evidence_in_prompt") == 0.0:
            lc_rec = lc_by[r["id"]]
            rec.update(route=ROLE_LONGCTX, selfroute_declined=True, score=lc_rec["score"],
                       prediction=lc_rec["prediction"], scores=lc_rec["scores"],
                       prompt_tokens=r["prompt_tokens"] + lc_rec["prompt_tokens"],
                       latency_s=round(r["latency_s"] + lc_rec["latency_s"], 4),
                       evidence_retained=lc_rec["evidence_retained"], rag_context_tokens=r["context_tokens"],
                       context_tokens=lc_rec["context_tokens"], truncated=lc_rec["truncated"])
        else:
            rec.update(route=ROLE_RAG, selfroute_declined=False)
        out.append(rec)
    return out


def known_truth_sweep(root: Path, rag_minus_lc: float, n_rag_configs: int = 12, n_docs: int = 40,
                      questions_per_doc: int = 10, base: float = 0.6, doc_sd: float = 0.15, config_doc_sd: float = 0.08,
                      seed: int = 0, benchmark: str = "sim", level: str = "8k", longctx_tokens: int = 8000) -> Path:
    """One long-context config and `n_rag_configs` RAG configs whose TRUE mean accuracy is
    `base` and `base + rag_minus_lc` (every RAG config the same), written as run directories.

    Questions are correlated within documents: each document has a difficulty shared by every
    config (sd `doc_sd`), and each (config, document) pair its own luck (sd `config_doc_sd`, e.g.
    one config happening to retrieve that document well), on the probability scale; each answer
    is then right or wrong. RAG configs differ in chunk size and top-k (so in prompt tokens and
    cost), never in truth: any RAG config that looks better than another got lucky. Long context's
    prompts have `longctx_tokens` tokens (RAG's 228 to 4,196: below the default 8,000 RAG is cheaper).
    """
    rng = random.Random(seed)
    docs = [f"doc{d:03d}" for d in range(n_docs)]
    difficulty = {d: rng.gauss(0.0, doc_sd) for d in docs}
    clip = lambda p: min(1.0, max(0.0, p))  # noqa: E731

    def records(arm: str, mean: float, tokens: int) -> list[dict[str, Any]]:
        out = []
        for d in docs:
            p = clip(mean + difficulty[d] + rng.gauss(0.0, config_doc_sd))
            for q in range(questions_per_doc):
                right = rng.random() < p
                out.append({"id": f"{d}-q{q}", "benchmark": benchmark, "task": "qa", "language": "en",
                            "length_level": level, "group": d, "arm": arm, "answers": ["x"], "status": schema.OK,
                            "prediction": "x" if right else "y", "score": 1.0 if right else 0.0,
                            "scores": {"score": 1.0 if right else 0.0}, "prompt_tokens": tokens,
                            "completion_tokens": 8, "latency_s": round(0.2 + tokens / 4000, 4), "cached": False})
        return out

    root = Path(root)
    lc = {"arm": LongContextSpec.name, "benchmark": benchmark, "generator": "sim", "truncation": "benchmark"}
    write_run(root / "lc", lc, records(LongContextSpec.name, base, longctx_tokens))
    sizes, ks = (128, 256, 512), (1, 2, 4, 8)
    for c in range(n_rag_configs):
        size, k = sizes[c % len(sizes)], ks[(c // len(sizes)) % len(ks)]
        knobs = {"arm": RagSpec.name, "benchmark": benchmark, "generator": "sim", "retriever": "bm25",
                 "chunk_size": size, "chunk_overlap": 0, "top_k": k, "order": "document", "config": c}
        write_run(root / f"{RagSpec.name}{c:02d}", knobs, records(RagSpec.name, base + rag_minus_lc, size * k + 100))
    return root


def make_sweep(root: Path, benchmarks: tuple[str, ...] = ("synthetic",), levels: tuple[str, ...] = LEVELS,
               per_level: int = 12, retrievers: tuple[str, ...] = ("bm25", "minilm"),
               chunk_sizes: tuple[int, ...] = (128,),
               top_ks: tuple[int, ...] = (1, 2, 4, 8), orders: tuple[str, ...] = ("document",), seed: int = 0,
               extra_arms: bool = True, generator: str = "bundled:smollm2") -> list[Path]:
    """A multirun folder of numbered run dirs, one per config point; returns them."""
    root = Path(root)
    dirs: list[Path] = []

    def add(knobs: dict[str, Any], records: list[dict[str, Any]], overrides: list[str]) -> None:
        dirs.append(write_run(root / f"{len(dirs)}_{','.join(overrides)}".replace("/", "-"), knobs, records,
                              overrides=overrides))

    for bench in benchmarks:
        samples = _sample_ids(bench, levels, per_level)
        lc_knobs = {"arm": LongContextSpec.name, "benchmark": bench, "generator": generator, "truncation": "benchmark"}
        lc = longctx_records(bench, samples, lc_knobs, seed)
        add(lc_knobs, lc, ["arm=longctx", f"benchmark={bench}"])
        first_rag = None
        for ret in retrievers:
            for chunk in chunk_sizes:
                for order in orders:
                    for k in top_ks:
                        knobs: dict[str, Any] = {"arm": RagSpec.name, "benchmark": bench, "generator": generator,
                                                 "retriever": ret,
                                 "chunk_size": chunk, "chunk_overlap": 16, "top_k": k, "order": order}
                        recs = rag_records(bench, samples, knobs, seed)
                        first_rag = first_rag or (knobs, recs)
                        add(knobs, recs, ["arm=rag", f"benchmark={bench}", f"retriever={ret}",
                                          f"rag.chunk_size={chunk}", f"rag.top_k={k}", f"rag.order={order}"])
        if extra_arms and first_rag:
            knobs = {**first_rag[0], "generator": "none"}
            add(knobs, rag_records(bench, samples, knobs, seed, retrieval_only=True),
                ["arm=rag", f"benchmark={bench}", "generator=none", f"retriever={knobs['retriever']}"])
            cb = {"arm": ClosedBookSpec.name, "benchmark": bench, "generator": generator}
            add(cb, closedbook_records(bench, samples, cb, seed), ["arm=closedbook", f"benchmark={bench}"])
            sr = {**first_rag[0], "arm": SelfRouteSpec.name, "truncation": "benchmark"}
            add(sr, selfroute_records(bench, first_rag[1], lc, sr), ["arm=selfroute", f"benchmark={bench}"])
            budget = int(first_rag[0]["top_k"]) * int(first_rag[0]["chunk_size"])
            bk = {**lc_knobs, "budget_tokens": budget}
            add(bk, longctx_records(bench, samples, bk, seed, budget=budget),
                ["arm=longctx", f"benchmark={bench}", f"longctx.budget_tokens={budget}"])
    return dirs


SCENARIOS = {  # name -> true RAG minus long context (accuracy, 0..1); see known_truth_sweep
    "rag_worse_than_tolerance": -0.05,
    "all_equal": 0.0,
    "rag_clearly_better": 0.2,
    "longctx_clearly_better": -0.2,
    "issue_rag_better_17": 0.17,
    "issue_longctx_better_21": -0.21,
}
SCENARIO_SWEEPS = {  # known_truth_sweep arguments other than the defaults: issue 25's sweeps of 40 x 5 questions
    "issue_rag_better_17": {"questions_per_doc": 5},
    "issue_longctx_better_21": {"questions_per_doc": 5},
}
FIRST_RAG = "rag00"  # the single pre-registered RAG config the rule is compared with


def _rates(kinds: list[str], intervals: list[tuple[float, float] | None], truth_points: float) -> dict[str, float]:
    """Share of each decision kind, of intervals excluding 0, and of intervals covering the truth."""
    from experiments.report.verdict.decision import DECISIONS

    n = max(1, len(kinds))
    rates = {kind: sum(k == kind for k in kinds) / n for kind in DECISIONS}
    rates["excludes_0"] = sum(bool(ci and (ci[0] > 0 or ci[1] < 0)) for ci in intervals) / n
    rates["covers_truth"] = sum(bool(ci and ci[0] <= truth_points <= ci[1]) for ci in intervals) / n
    return rates


def decision_rates(root, scenario: str, n_sweeps: int, settings, n_rag_configs: int = 12,
                   seed: int = 0, on_sweep=None, **sweep_kwargs) -> dict[str, Any]:
    """Simulate `n_sweeps` sweeps with a known truth, run each through the real report reader and
    verdict, and return the share decided rag / longctx / inconclusive / no_decision, the share
    whose interval excludes 0 and the share whose interval covers the truth (the statistics' check
    on simulated data). Under "single": the same
    shares for the first RAG config alone against long context on the same samples (one config
    fixed in advance, nothing chosen: what the selection's honesty is measured against).
    `on_sweep(runs)`, when given, sees each sweep's runs (e.g. to measure intervals on them)."""
    import shutil

    from experiments.report.decision_order import verdicts
    from experiments.report.loading import load_runs
    from experiments.report.pricing import Pricing
    from experiments.report.verdict.decision import INCONCLUSIVE

    sweep_kwargs = {**SCENARIO_SWEEPS.get(scenario, {}), **sweep_kwargs}
    rule: tuple[list[str], list] = ([], [])
    single: tuple[list[str], list] = ([], [])
    for i in range(n_sweeps):
        where = Path(root) / f"{scenario}_{i}"
        known_truth_sweep(where, SCENARIOS[scenario], n_rag_configs=n_rag_configs, seed=seed * 100_003 + i,
                          **sweep_kwargs)
        runs = load_runs([where]).runs
        for kept, out in ((runs, rule), ([r for r in runs if r.path.name in ("lc", FIRST_RAG)], single)):
            row = verdicts(kept, Pricing(settings, kept), settings, routers=False)[0]
            out[0].append(row.decision.kind if row.decision else INCONCLUSIVE)
            out[1].append(row.ci)
        if on_sweep is not None:
            on_sweep(runs)
        shutil.rmtree(where)
    truth = 100 * SCENARIOS[scenario]
    return {**_rates(*rule, truth), "single": _rates(*single, truth)}


def family_error_rates(root, n_sweeps: int, settings, n_rows: int = 6, truth: float = 0.0,
                       seed: int = 0, **sweep_kwargs) -> dict[str, float]:
    """Sweeps of `n_rows` benchmarks (one verdict row each, one long-context and one RAG config, RAG
    dearer: `longctx_tokens` below RAG's) whose arms are truly equal, so that a `rag` decision (RAG
    better) is wrong in every row. Returns the share of sweeps with any wrong decision with Holm's
    correction ("holm") and from the rows' own 95% intervals ("per_row", uncorrected), and the
    share of rows decided wrongly."""
    import shutil

    from experiments.report.decision_order import verdicts
    from experiments.report.loading import load_runs
    from experiments.report.pricing import Pricing
    from experiments.report.verdict.decision import RAG
    from experiments.report.verdict.family import ALPHA

    sweep_kwargs = {"n_rag_configs": 1, "longctx_tokens": 50, **sweep_kwargs}
    counts = {"holm": 0, "per_row": 0, "rows_wrong": 0}
    for i in range(n_sweeps):
        where = Path(root) / f"family_{i}"
        for b in range(n_rows):
            known_truth_sweep(where / f"bench{b}", truth, seed=seed * 100_003 + i * 101 + b, benchmark=f"sim{b}",
                              **sweep_kwargs)
        runs = load_runs([where]).runs
        rows = verdicts(runs, Pricing(settings, runs), settings, routers=False)
        assert len(rows) == n_rows and all(r.comparison.rag_cheaper is False for r in rows), \
            "each row's RAG must be dearer"
        wrong = [r.decision is not None and r.decision.kind == RAG for r in rows]
        counts["holm"] += any(wrong)
        counts["rows_wrong"] += sum(wrong)
        counts["per_row"] += any(r.ci is not None and r.ci[0] > 0 for r in rows)  # rag from the interval alone
        assert all(r.family.p_holm is not None
                   and (r.decision is None or r.decision.kind != RAG or r.family.p_holm < ALPHA) for r in rows)
        shutil.rmtree(where)
    return {"holm": counts["holm"] / n_sweeps, "per_row": counts["per_row"] / n_sweeps,
            "rows_wrong": counts["rows_wrong"] / (n_sweeps * n_rows)}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python -m experiments.simulate.sweeps OUT_DIR", file=sys.stderr)
        sys.exit(2)
    made = make_sweep(Path(sys.argv[1]))
    print(f"{len(made)} run directories under {sys.argv[1]}")
