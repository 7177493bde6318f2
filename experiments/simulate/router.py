"""Paired long-context and RAG records with a known truth about routing, for the router's tests and
perf/router_simulation.py (numpy only; no run folders, no model).

Each document has a length drawn log-uniformly between 1k and 64k tokens (long context keeps 16k and
is truncated above), a difficulty shared by its questions (a normal shift on the logit scale, so
questions of one document rise and fall together), and `per_doc` questions with their own question
length and five retrieved chunks with scores. Scenarios:
- "length": RAG answers right with probability 0.85 on documents under 8k tokens and 0.3 above
  (+ `rag_shift`); long context the other way round. A router reading the document's length can nearly reach the
  oracle; neither arm alone can.
- "null": both arms answer right with probability 0.6 (+ `rag_shift` for RAG), whatever the
  features: nothing to learn, a router should not beat the better arm.
- "split" (issue 41): documents of 2k-30k tokens; long context right with probability 0.75 on documents
  under SPLIT_AT tokens and 0.45 above, RAG the other way round: the arms tie overall (about 60% each) and
  routing by length reaches about 75%, 15 points more. `split_edge` (0.15) is that 0.15: a smaller one
  makes a weaker split (0.06: routing by length gains 6 points, and a router fitted on 20 documents about
  2, the tolerance: the boundary where a `route` claim must still keep its level).
- "flat": the same documents, both arms at 0.6 everywhere: the arms tie and routing gains nothing.
"""

from __future__ import annotations

import numpy as np

from experiments.arms import ROLE_LONGCTX, ROLE_RAG
from experiments.arms.longctx import LongContextSpec
from experiments.arms.rag import RagSpec
from experiments.arms.selfroute import SelfRouteSpec

SCENARIOS = ("length", "null", "split", "flat")
WINDOW = 16_000
SHORT = 8_000
SPLIT_AT = 7_750  # "split": the geometric middle of 2k-30k tokens
SPLIT_EDGE = 0.15  # "split": each arm's accuracy is 0.6 +- this on its side of SPLIT_AT
LENGTHS = {"length": (1_000, 64_000), "null": (1_000, 64_000), "split": (2_000, 30_000), "flat": (2_000, 30_000)}
LC, RAG = LongContextSpec.name, RagSpec.name


def _logit(p: float) -> float:
    return float(np.log(p / (1 - p)))


def simulated_pair(scenario: str, n_docs: int = 40, per_doc: int = 5, seed: int = 0, retrieval: bool = True,
                   doc_sd: float = 0.5, rag_shift: float = 0.0,
                   split_edge: float = SPLIT_EDGE) -> tuple[list[dict], list[dict]]:
    """(long-context records, RAG records) of `n_docs` x `per_doc` questions."""
    if scenario not in SCENARIOS:
        raise ValueError(f"scenario {scenario!r}: one of {', '.join(SCENARIOS)}")
    rng = np.random.default_rng(seed)
    lc_out, rag_out = [], []
    for doc in range(n_docs):
        shortest, longest = LENGTHS[scenario]
        full = int(np.exp(rng.uniform(np.log(shortest), np.log(longest))))
        shift = rng.normal(0, doc_sd)
        if scenario == "length":
            p_rag, p_lc = (0.85 + rag_shift, 0.3) if full < SHORT else (0.3 + rag_shift, 0.85)
        elif scenario == "split":
            low, high = 0.6 - split_edge, 0.6 + split_edge
            p_rag, p_lc = (low + rag_shift, high) if full < SPLIT_AT else (high + rag_shift, low)
        else:
            p_rag, p_lc = 0.6 + rag_shift, 0.6
        for q in range(per_doc):
            sid, group = f"doc{doc:03d}-q{q}", f"doc{doc:03d}"
            q_tokens = int(rng.integers(15, 80))
            right_rag = rng.random() < 1 / (1 + np.exp(-(_logit(p_rag) + shift)))
            right_lc = rng.random() < 1 / (1 + np.exp(-(_logit(p_lc) + shift)))
            base = {"id": sid, "group": group, "status": "ok", "length_level": "sim", "task": "qa"}
            kept = min(full, WINDOW)
            lc_out.append({**base, "arm": LC, "score": float(right_lc), "context_tokens": kept,
                           "context_tokens_full": full, "truncated": full > WINDOW,
                           "prompt_tokens": kept + q_tokens + 40})
            rag = {**base, "arm": RAG, "score": float(right_rag), "context_tokens": 1000,
                   "prompt_tokens": 1000 + q_tokens + 40}
            if retrieval:
                scores = np.sort(rng.uniform(0.2, 0.9, size=5))[::-1]
                rag["retrieved"] = [{"rank": r, "score": float(s), "chunk": r} for r, s in enumerate(scores)]
            rag_out.append(rag)
    return lc_out, rag_out


def _as_record(rec: dict, benchmark: str) -> dict:
    right = rec["score"] > 0
    return {**rec, "benchmark": benchmark, "language": "en", "answers": ["x"], "prediction": "x" if right else "y",
            "scores": {"score": rec["score"]}, "completion_tokens": 8, "cached": False,
            "latency_s": round(0.2 + rec["prompt_tokens"] / 4000, 4),
            **({"retrieval_s": 0.01} if rec["arm"] == RAG else {})}


def write_router_sweep(root, scenario: str, n_docs: int = 40, per_doc: int = 5, seed: int = 0,
                       benchmark: str = "sim", selfroute: bool = False, rag_shift: float = 0.0,
                       split_edge: float = SPLIT_EDGE):
    """`simulated_pair` written as two run directories (`root`/lc, `root`/rag) the report reads, and with
    `selfroute` a third (`root`/selfroute) whose records take RAG's answer where RAG's top retrieval score
    is above the median, else long context's, each with its `route`."""
    from pathlib import Path

    from experiments.simulate.sweeps import write_run

    root = Path(root)
    lc, rag = simulated_pair(scenario, n_docs=n_docs, per_doc=per_doc, seed=seed, rag_shift=rag_shift,
                             split_edge=split_edge)
    lc, rag = [_as_record(r, benchmark) for r in lc], [_as_record(r, benchmark) for r in rag]
    write_run(root / "lc", {"arm": LC, "benchmark": benchmark, "generator": "sim", "truncation": "benchmark"},
              lc)
    write_run(root / RAG, {"arm": RAG, "benchmark": benchmark, "generator": "sim", "retriever": "bm25",
                             "chunk_size": 200, "chunk_overlap": 0, "top_k": 5, "order": "document"}, rag)
    if selfroute:
        top = [r["retrieved"][0]["score"] for r in rag]
        cut = float(np.median(top))
        routed = [{**(g if t > cut else c), "arm": SelfRouteSpec.name, "route": ROLE_RAG if t > cut else ROLE_LONGCTX}
                  for g, c, t in zip(rag, lc, top, strict=True)]
        write_run(root / SelfRouteSpec.name, {"arm": SelfRouteSpec.name, "benchmark": benchmark, "generator": "sim",
                                       "retriever": "bm25", "chunk_size": 200, "chunk_overlap": 0, "top_k": 5,
                                       "order": "document", "truncation": "benchmark"}, routed)
    return root
