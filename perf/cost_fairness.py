"""A fairness check of the cost side (issue 38): both arms answered with prefix reuse on and off under ONE batching
policy, and the report's what-if "no prefix cache" against a measured no-reuse run.

    python perf/cost_fairness.py --quick            # the tiny random-weight Llama: under 2 minutes on CPU
    python perf/cost_fairness.py [--model bundled:smollm2] [--docs 2] [--questions 4] [--tokens 700]

Per document, each arm's questions go to the generator in one call (as the runner sends them): long context with
prefix reuse (one prefill, the questions decoded together over it), long context without it and RAG (BM25, top 4
of 128 tokens) as padded batches. Everything is priced by conf/price/cpu.yaml (process CPU seconds over 2 vCPUs),
through the report's own Pricing. Figures:

- `rag_decode_batch`, `longctx_decode_batch`, `longctx_no_reuse_decode_batch`: the mean batch an answer was decoded
  in (equal under one policy: `generator.decode_batch` is the questions per document, which fill it);
  `probe_decode_batch`: the batch the work probe decodes in (llm/work_probe.py: the policy's, as the arms').
- `priced_over_measured_cpu`: the probe's charge of these answers (their tokens at its per-token rates) over their
  measured CPU seconds, all three arms together (`..._by_arm` each): 1.0 when the probe prices what the answers did.
  With `--rounds N` (3 with `--quick`) the answers and a fresh probe are measured N times, the charges and seconds
  summed over the rounds, and each round's figure shown (`..._each_round`): the tiny model's answers take
  milliseconds, and one burst of a neighbour's work moves one round's figure by a third.
- `whatif_no_cache_over_measured`: the what-if's "no prefix cache" cost per answer (from the reuse run's records)
  over the measured no-reuse run's, same batch policy (1.0: the what-if prices what a no-reuse deployment pays);
  `..._wall` the same by the wall clock.
- `longctx_over_rag_cost`: long context with reuse over RAG, cost per answer (CPU basis).
- `server_q_rescale_error`, `discounted_twice_error`: perf/pricing_checks.py (the q-rescale for backends without a
  measured prefill, and no double discount of a provider's cost_usd), relative errors against hand formulas.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from statistics import mean

import common
import pricing_checks

from eval.benchmarks.synthetic import make_haystack
from experiments.arms.base import answer_with_prompts
from experiments.report.pricing import Pricing
from experiments.report.runs import Run
from experiments.report.settings import Price, ReportSettings
from llm.cost import load_price
from llm.factory import build_generator
from llm.work_probe import design, measure
from longctx.arm import LongContextArm, LongContextConfig
from rag.arm import RagArm, RagConfig
from rag.retrievers import bm25_retriever


def documents(n_docs: int, questions: int, tokens: int) -> list[list]:
    return [make_haystack(seed=100 + d, language="en", tokens=tokens, n_questions=questions) for d in range(n_docs)]


def answer_all(arm, gen, docs: list[list], name: str) -> list[dict]:
    """Records (the fields the report prices) of every question, one generator call per document."""
    records = []
    for d, samples in enumerate(docs):
        for a in answer_with_prompts(arm, gen, samples):
            records.append({"id": f"{name}-{a.sample.id}", "benchmark": "synthetic", "task": a.sample.task,
                            "language": "en", "length_level": a.sample.length_level, "group": f"doc{d}",
                            "arm": name.split("-")[0], "status": "ok", "score": 0.0, **a.usage, **a.meta})
    return records


def run_of(name: str, arm: str, records: list[dict], work_rates: dict | None = None) -> Run:
    knobs = {"arm": arm, "benchmark": "synthetic", "generator": "g"}
    if arm == "rag":
        knobs.update(retriever="bm25", chunk_size=128, chunk_overlap=16, top_k=4, order="document")
    return Run(Path(name), {"knobs": knobs, "price": None, "work_rates": work_rates}, records)


def pricing_of(price: dict, runs: list[Run]) -> Pricing:
    return Pricing(ReportSettings(price=Price(dict(price), from_command_line=True)), runs)


def mean_cost(pricing: Pricing, records: list[dict], **at) -> float:
    costs = [pricing.answer_cost_at(r, shared_prefix=True, **at) if at else pricing.answer_cost(r) for r in records]
    return mean(c for c in costs if c is not None)


def _backend(generator):
    while getattr(generator, "inner", None) is not None:
        generator = generator.inner
    return generator


def _priced_over_measured(rounds: list[tuple], arm: str | None = None) -> float | None:
    """The probes' charge of their rounds' answers (their tokens at the round's probe's rates, plus measured
    retrieval) over the answers' measured CPU seconds, summed over the rounds (`arm`: its answers only)."""
    pairs = [(probe, recs) for probe, by_arm in rounds if probe is not None
             for name, recs in by_arm.items() if arm in (None, name)]
    if not pairs:
        return None
    charged = sum(probe.cpu_s(r) for probe, recs in pairs for r in recs)
    return round(charged / sum(r["cpu_s"] for _, recs in pairs for r in recs), 4)


def _round(reuse, plain, docs: list[list]) -> tuple:
    """One more round: every arm's answers (the response cache is not in this chain: they are generated again) and a
    fresh probe."""
    by_arm = {"longctx": answer_all(LongContextArm(reuse, LongContextConfig()), reuse, docs, "longctx-reuse"),
              "longctx_no_reuse": answer_all(LongContextArm(plain, LongContextConfig()), plain, docs, "longctx-plain"),
              "rag": answer_all(RagArm(reuse, bm25_retriever(), RagConfig(chunk_size=128, top_k=4, cache=False)),
                                reuse, docs, "rag")}
    return measure(_backend(reuse)), by_arm


def _charge_figures(rounds: list[tuple]) -> dict:
    """priced_over_measured_cpu over all rounds, by arm, and each round's."""
    return {"priced_over_measured_cpu": _priced_over_measured(rounds),
            "priced_over_measured_cpu_by_arm": {arm: _priced_over_measured(rounds, arm) for arm in rounds[0][1]},
            "priced_over_measured_cpu_each_round": [_priced_over_measured([r]) for r in rounds]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the tiny random-weight Llama, 2 documents x 4 questions")
    parser.add_argument("--model", default=None, help=common.MODEL_HELP)
    parser.add_argument("--docs", type=int, default=2)
    parser.add_argument("--questions", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=700, help="each document's approximate tokens (words)")
    parser.add_argument("--rounds", type=int, default=None,
                        help="rounds of answers and a fresh probe for priced_over_measured_cpu (default 3 with "
                             "--quick, whose answers take milliseconds and move with the machine's load; else 1)")
    args = parser.parse_args()
    model = args.model or common.SMOLLM2
    if args.quick and args.model is None:
        from testsupport.tiny_llama import cached_tiny_llama

        model = str(cached_tiny_llama(common.ROOT / ".cache" / "test-models"))
    t0 = time.perf_counter()
    docs = documents(args.docs, args.questions, args.tokens)
    # one policy for every arm, filled by each document's questions (the probe decodes at the policy's batch)
    policy = {"reuse_prefix": True, "threads": 1, "decode_batch": args.questions}
    reuse = build_generator({**common.generator_config(model), **policy})
    plain = build_generator({**common.generator_config(model), **policy, "reuse_prefix": False})
    lc = answer_all(LongContextArm(reuse, LongContextConfig()), reuse, docs, "longctx-reuse")
    lc_plain = answer_all(LongContextArm(plain, LongContextConfig()), plain, docs, "longctx-plain")
    rag = answer_all(RagArm(reuse, bm25_retriever(), RagConfig(chunk_size=128, top_k=4, cache=False)), reuse, docs,
                     "rag")
    runs = [run_of("lc", "longctx", lc), run_of("rag", "rag", rag)]
    cpu = pricing_of(load_price("cpu"), runs)
    probe = measure(_backend(reuse))  # the per-token rates a price=cpu run is priced at (llm/work_probe.py)
    rates = None if probe is None else probe.to_dict()
    work = pricing_of(load_price("cpu"), [run_of("lc", "longctx", lc, rates), run_of("rag", "rag", rag, rates)])
    wall = pricing_of({**load_price("cpu"), "basis": "latency"}, runs)
    figures = {
        "model": Path(model).name if args.quick else model,
        "documents": args.docs, "questions_per_document": args.questions, "threads": 1,
        "rag_decode_batch": round(mean(r["decode_batch"] for r in rag), 3),
        "longctx_decode_batch": round(mean(r["decode_batch"] for r in lc), 3),
        "longctx_no_reuse_decode_batch": round(mean(r["decode_batch"] for r in lc_plain), 3),
        "whatif_no_cache_over_measured": round(
            mean_cost(cpu, lc, queries_per_doc=args.questions, prefix_cache=False) / mean_cost(cpu, lc_plain), 4),
        "whatif_no_cache_over_measured_wall": round(
            mean_cost(wall, lc, queries_per_doc=args.questions, prefix_cache=False) / mean_cost(wall, lc_plain), 4),
        # the same, every answer priced at the probe's per-token rates (what price=cpu runs now charge)
        "whatif_no_cache_over_measured_work": round(
            mean_cost(work, lc, queries_per_doc=args.questions, prefix_cache=False) / mean_cost(work, lc_plain), 4),
        "longctx_over_rag_cost_work": round(mean_cost(work, lc) / mean_cost(work, rag), 4),
        "longctx_over_rag_cost": round(mean_cost(cpu, lc) / mean_cost(cpu, rag), 4),
        "longctx_no_reuse_over_rag_cost": round(mean_cost(cpu, lc_plain) / mean_cost(cpu, rag), 4),
        "probe_decode_batch": max(u.prompts for u in design(_backend(reuse))),
        **_charge_figures([(probe, {"longctx": lc, "longctx_no_reuse": lc_plain, "rag": rag})]
                          + [_round(reuse, plain, docs) for _ in range((args.rounds or (3 if args.quick else 1)) - 1)]),
        "cpu_s_per_answer": {"longctx": round(mean(r["cpu_s"] for r in lc), 4),
                             "longctx_no_reuse": round(mean(r["cpu_s"] for r in lc_plain), 4),
                             "rag": round(mean(r["cpu_s"] for r in rag), 4)},
        "server_q_rescale_error": round(pricing_checks.server_q_rescale_error(), 6),
        "discounted_twice_error": round(pricing_checks.discounted_twice_error(), 6),
        "seconds": round(time.perf_counter() - t0, 1),
    }
    common.emit(figures)


if __name__ == "__main__":
    main()
