"""A 12-point retrieval-only sweep (3 chunk sizes x 4 top-k, MiniLM) costs little more than embedding each size once.

    python perf/retrieval_sweep.py [--level 16k] [--haystacks 2] [--questions 4] [--model bundled:smollm2]

`singles_seconds`: three runs, one per chunk size, each with an empty cache (so each embeds its
chunking and the questions once). `sweep_seconds`: the 12 points over one shared cache directory,
each point a fresh arm built by `build_rag_arm` with no in-process memory, as a Hydra job would be.
`ratio` = sweep / singles (target <= 1.5). The embedding model is loaded before timing (a process
loads it once either way).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import common

from eval.benchmarks import load_benchmark
from llm.factory import build_generator
from rag.build import build_rag_arm
from rag.embedders import shared_embedder
from rag.retrievers import _QUERY_MEMOS

MINILM = {"name": "minilm", "kind": "dense", "backend": "sentence_transformers", "model": "bundled:all-MiniLM-L6-v2",
          "index": "flat", "batch_size": 64, "normalize": True, "device": "cpu", "query_instruction": "",
          "passage_instruction": ""}
SIZES = (128, 256, 512)
TOP_KS = (1, 2, 4, 8)


def run_point(gen, samples, cache_dir: Path, size: int, top_k: int) -> tuple[float, dict]:
    _QUERY_MEMOS.clear()  # each point as a fresh Hydra job: only the disk cache carries over
    t0 = time.perf_counter()
    rag = {"chunk_size": size, "chunk_overlap": 16, "top_k": top_k, "order": "document"}
    arm = build_rag_arm(gen, rag, MINILM, {"kind": "tokens"}, {"kind": "none"}, cache_dir)
    for s in samples:
        arm.retrieve(s)
    return time.perf_counter() - t0, arm.cache_stats()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--level", default="16k", help="the synthetic benchmark's length level")
    parser.add_argument("--haystacks", type=int, default=2)
    parser.add_argument("--questions", type=int, default=4, help="questions per haystack")
    parser.add_argument("--model", default=common.SMOLLM2, help=common.MODEL_HELP + " (its tokenizer only)")
    args = parser.parse_args()
    gen = build_generator(common.generator_config(args.model))
    samples = load_benchmark({"name": "synthetic", "seed": 0, "languages": ["en"], "levels": [args.level],
                              "haystacks_per_level": args.haystacks,
                              "questions_per_haystack": args.questions}).samples
    shared_embedder("bundled:all-MiniLM-L6-v2", 64, True, "cpu", "", "").encode(["warm up"])
    root = Path(tempfile.mkdtemp(prefix="retrieval_sweep_"))
    try:
        singles = sweep = 0.0
        embeds = chunkings = 0
        # Interleaved by chunk size (the single run, then that size's sweep points), so changing load
        # from other processes hits both sides alike.
        for size in SIZES:
            seconds, _ = run_point(gen, samples, root / f"single_{size}", size, TOP_KS[-1])
            singles += seconds
            for top_k in TOP_KS:
                seconds, stats = run_point(gen, samples, root / "sweep", size, top_k)
                sweep += seconds
                embeds += stats["embeddings"]["misses"]
                chunkings += stats["chunks"]["misses"]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    n_contexts = len({s.group for s in samples})
    assert embeds == len(SIZES) * n_contexts, f"{embeds} embeddings computed; expected one per size per context"
    common.emit({"samples": len(samples), "contexts": n_contexts, "points": len(SIZES) * len(TOP_KS),
                 "singles_seconds": round(singles, 3), "sweep_seconds": round(sweep, 3),
                 "embeddings_computed": embeds, "chunkings_computed": chunkings, "ratio": round(sweep / singles, 3)})


if __name__ == "__main__":
    main()
