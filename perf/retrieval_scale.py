"""RAG at scale on one 256k-token context (SmolLM2 tokenizer): BM25 end to end, and the dense pipeline's overhead.

    python perf/retrieval_scale.py [--no-dense] [--tokens 155000] [--model bundled:smollm2]

`--tokens`: the haystack's approximate tokens (words); 155,000 (the default) is the 256k SmolLM2 tokens the
targets are stated for, which the script then checks it reached.

- `bm25_seconds`: chunk (128-token windows) + build the BM25 index + answer 10 questions (target < 2 s).
- `dense_overhead`: embedding the same chunks through the pipeline (DenseRetriever.index: passage
  instruction, cache lookup, faiss index) over the embedder's own `encode` (target <= 1.15).
  Timed block by block (256 chunks), alternating which side goes first, so load from other processes
  cancels out.
"""

from __future__ import annotations

import argparse
import time

import common

from eval.benchmarks.synthetic import make_haystack
from eval.storage import DiskCache
from llm.factory import build_generator
from rag.chunking import ChunkerConfig, make_chunks
from rag.embedders import shared_embedder
from rag.retrievers import BM25Retriever, DenseRetriever

TARGET_TOKENS = 256_000
WORDS = 155_000  # approximate tokens of the synthetic haystack that make TARGET_TOKENS of SmolLM2's
BLOCK = 256  # chunks per timed block


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-dense", action="store_true",
                        help="BM25 figures only (the dense side takes minutes on CPU)")
    parser.add_argument("--tokens", type=int, default=WORDS, help="the haystack's approximate tokens (words)")
    parser.add_argument("--model", default=common.SMOLLM2, help=common.MODEL_HELP + " (its tokenizer only)")
    args = parser.parse_args()
    gen = build_generator(common.generator_config(args.model))  # tokenizer only
    samples = make_haystack(seed=0, language="en", tokens=args.tokens, n_questions=10)
    context = samples[0].context
    n_tokens = gen.tokenizer.count(context)
    assert args.tokens != WORDS or n_tokens >= TARGET_TOKENS, n_tokens
    questions = [s.question for s in samples]
    cfg = ChunkerConfig("tokens", 128, 16)
    make_chunks(context[:2000], gen.tokenizer, cfg)  # warm up the tokenizer
    BM25Retriever().index(["warm up"], "en")

    t0 = time.perf_counter()
    chunks = make_chunks(context, gen.tokenizer, cfg)
    t_chunk = time.perf_counter() - t0
    index = BM25Retriever().index([c.text for c in chunks], "en")
    t_index = time.perf_counter() - t0 - t_chunk
    hits = [index.search(q, 10) for q in questions]
    bm25_seconds = time.perf_counter() - t0
    assert all(hits)

    figures = {"context_tokens": n_tokens, "chunks": len(chunks), "chunk_seconds": round(t_chunk, 3),
               "bm25_index_seconds": round(t_index, 3), "bm25_seconds": round(bm25_seconds, 3)}
    if args.no_dense:
        common.emit(figures)
        return
    texts = [c.text for c in chunks]
    emb = shared_embedder("bundled:all-MiniLM-L6-v2", 64, True, "cpu", "", "")
    emb.encode(texts[:64])  # warm up
    raw = pipe = 0.0
    # Block by block, alternating which side goes first, so changing load from other processes cancels out.
    for b, i in enumerate(range(0, len(texts), BLOCK)):
        block = texts[i:i + BLOCK]
        for side in ((0, 1) if b % 2 == 0 else (1, 0)):
            t0 = time.perf_counter()
            if side == 0:
                emb.encode(block)
                raw += time.perf_counter() - t0
            else:
                DenseRetriever(emb).index(block, "en", DiskCache(None), None).search(questions[0], 10)
                pipe += time.perf_counter() - t0
    common.emit({**figures, "encode_seconds": round(raw, 3), "pipeline_embed_seconds": round(pipe, 3),
                 "dense_overhead": round(pipe / raw, 3)})


if __name__ == "__main__":
    main()
