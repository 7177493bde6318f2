"""Build the RAG arm from its config groups (plain dicts, as `experiments.run` passes them).

    arm = build_rag_arm(generator, cfg.rag, cfg.retriever, cfg.chunker, cfg.reranker, cfg.run.cache_dir)

`rag` holds the sizes and assembly knobs (chunk_size, chunk_overlap, top_k, budget_tokens, order,
...), `chunker` the chunker kind, `retriever` and `reranker` their groups. The on-disk cache lives
under `<cache_dir>/rag/` unless `rag.cache_keys` is false or `cache_dir` is None.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

from eval.storage import DiskCache
from rag.arm import RagArm, RagConfig
from rag.chunking import ChunkerConfig
from rag.rerank import build_reranker
from rag.retrievers import build_retriever


def rag_config(rag_cfg: dict[str, Any]) -> RagConfig:
    known = {f.name for f in fields(RagConfig)}
    unknown = set(rag_cfg) - known
    if unknown:
        raise ValueError(f"rag: unknown keys {sorted(unknown)}; known: {sorted(known)}")
    return RagConfig(**rag_cfg)


def chunker_config(chunker_cfg: dict[str, Any] | None, rag: RagConfig) -> ChunkerConfig:
    chunker_cfg = dict(chunker_cfg or {})
    return ChunkerConfig(kind=chunker_cfg.get("kind", "tokens"), size=int(rag.chunk_size),
                         overlap=int(rag.chunk_overlap))


def build_rag_arm(generator, rag_cfg: dict[str, Any], retriever_cfg: dict[str, Any],
                  chunker_cfg: dict[str, Any] | None = None, reranker_cfg: dict[str, Any] | None = None,
                  cache_dir: str | Path | None = None) -> RagArm:
    rag = rag_config(dict(rag_cfg))
    chunker = chunker_config(chunker_cfg, rag)
    retriever = build_retriever(dict(retriever_cfg))
    reranker = build_reranker(reranker_cfg)
    cache = DiskCache(Path(cache_dir) / RagArm.name if (cache_dir is not None and rag.cache) else None)
    return RagArm(generator, retriever, rag, chunker=chunker, reranker=reranker, cache=cache)
