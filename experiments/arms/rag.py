"""`arm=rag`: retrieve top-k chunks of the document with the `retriever` group (chunked by the
`chunker` group, optionally reranked by the `reranker` group); settings under `rag:`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from experiments.arms.base import ROLE_RAG, ArmSpec, Curve, IndexShape
from experiments.arms.longctx import LongContextSpec
from llm.base import samples_of
from llm.cost import INDEX_LEXICAL

# chunker and reranker names that are the defaults: left out of knobs and labels, so older runs line up
_DEFAULT_GROUPS = (("chunker", "tokens"), ("reranker", "none"))
_PLAIN_LABEL_VALUES = (None, "", "none", "fixed", "tokens")
ORACLE_RETRIEVER = "oracle"  # conf/retriever/oracle.yaml's name
BM25_KIND = "bm25"  # rag/retrievers.py's kind of the lexical retriever (conf/retriever/bm25.yaml)


class RagSpec(ArmSpec):
    name = "rag"
    title = "RAG"
    colour = "tab:blue"
    sections = ("rag", "retriever", "chunker", "reranker")
    indexed = True
    role = ROLE_RAG
    columns = ("retriever", "chunk_size", "chunk_overlap", "top_k", "order", "chunker", "reranker")

    @classmethod
    def knobs(cls, cfg: Mapping[str, Any]) -> dict[str, Any]:
        rag = cfg["rag"]
        knobs: dict[str, Any] = {"retriever": cfg["retriever"]["name"], "chunk_size": rag["chunk_size"],
                                 "chunk_overlap": rag["chunk_overlap"], "top_k": rag["top_k"], "order": rag["order"]}
        if rag.get("budget_tokens") is not None:
            knobs["rag_budget_tokens"] = rag["budget_tokens"]
        for group, default in _DEFAULT_GROUPS:
            node = cfg.get(group)
            name = node.get("name") or node.get("kind") if node is not None else None
            if name and name != default:
                knobs[group] = name
        return knobs

    @classmethod
    def model_ids(cls, cfg: Mapping[str, Any], knobs: Mapping[str, Any]) -> list[str]:
        ret, rer = cfg.get("retriever") or {}, cfg.get("reranker") or {}
        emb = ret.get("model") or ret.get("embedder") or ret.get("name") or cls.index_shape(knobs).model
        return ([f"retriever {emb}"] if emb else []) + (
            [f"reranker {rer['model']}"] if isinstance(rer, Mapping) and rer.get("model") else [])

    @classmethod
    def rag_label(cls, knobs: Mapping[str, Any]) -> str:
        k = knobs
        text = f"{k.get('arm', cls.name)} {k.get('retriever')} c{k.get('chunk_size')} k{k.get('top_k')}"
        text += "" if k.get("order") in (None, "document") else f" {k.get('order')}"
        for key in ("chunker", "reranker"):
            if k.get(key) not in _PLAIN_LABEL_VALUES:
                text += f" {k[key]}"
        if k.get("rag_budget_tokens") is not None:
            text += f" b{k['rag_budget_tokens']}"
        return text

    @classmethod
    def label(cls, knobs: Mapping[str, Any], retrieval_only: bool = False) -> str:
        return cls.rag_label(knobs) + (" retrieval-only" if retrieval_only else "")

    @classmethod
    def upper_bound(cls, knobs: Mapping[str, Any]) -> bool:
        """retriever=oracle: the gold evidence's chunks (conf/retriever/oracle.yaml), retrieval's upper bound."""
        return knobs.get("retriever") == ORACLE_RETRIEVER

    @classmethod
    def token_budget(cls, knobs: Mapping[str, Any]) -> int | None:
        """Its own token budget, else top_k chunks of chunk_size tokens."""
        if knobs.get("rag_budget_tokens") is not None:
            return int(knobs["rag_budget_tokens"])
        if knobs.get("top_k") is not None and knobs.get("chunk_size") is not None:
            return int(knobs["top_k"]) * int(knobs["chunk_size"])
        return None

    @classmethod
    def retrieval_depth(cls, knobs: Mapping[str, Any]) -> int | None:
        """top_k: the chunks retrieved for a prompt, before `rag.budget_tokens` packs them."""
        return None if knobs.get("top_k") is None else int(knobs["top_k"])

    @classmethod
    def index_cost_from_config(cls, config: Mapping[str, Any]) -> str | None:
        """Lexical when the saved retriever config's kind is BM25's, else unknown."""
        retriever = config.get("retriever")
        return INDEX_LEXICAL if isinstance(retriever, Mapping) and retriever.get("kind") == BM25_KIND else None

    @classmethod
    def index_shape(cls, knobs: Mapping[str, Any]) -> IndexShape:
        size = knobs.get("chunk_size")
        return IndexShape(knobs.get("retriever"), int(size) if size else None)

    @classmethod
    def curve(cls, knobs: Mapping[str, Any]) -> Curve | None:
        """One line per retriever and chunk size, styled by chunk order, over top-k."""
        size, k = knobs.get("chunk_size"), knobs.get("top_k")
        order = (str(knobs.get("retriever")), int(str(size)) if str(size).isdigit() else 0)
        return Curve(f"{knobs.get('retriever')} c{size}", str(knobs.get("order", "document")),
                     None if k is None else int(k), order)

    @classmethod
    def hashed(cls, sections: dict[str, Any], multi_document: bool) -> dict[str, Any]:
        """`rag.doc_titles` counts only where it heads chunks (runs from before the option keep their hash)."""
        from rag.assembly import hashed_rag

        if isinstance(sections.get("rag"), dict):
            return {**sections, "rag": hashed_rag(sections["rag"], multi_document)}
        return sections

    @classmethod
    def build(cls, generator, cfg: dict[str, Any]):
        from rag.build import build_rag_arm

        return build_rag_arm(generator, cfg["rag"], cfg["retriever"], cfg.get("chunker") or {},
                             cfg.get("reranker") or {}, cfg["run"]["cache_dir"])

    @classmethod
    def index_builds(cls, arm) -> int | None:
        return arm.index_builds

    @classmethod
    def index_cost(cls, arm) -> str | None:
        return arm.retriever.index_cost

    @classmethod
    def index_seconds(cls, arm) -> float | None:
        return None if arm.index_seconds is None else round(arm.index_seconds, 4)

    @classmethod
    def cache_stats(cls, arm) -> dict[str, Any] | None:
        return arm.cache_stats()

    @classmethod
    def chunks_over_limit(cls, arm, samples) -> dict[str, Any] | None:
        return arm.chunks_over_limit(samples)

    @classmethod
    def embedder_truncation(cls, arm) -> dict[str, Any] | None:
        truncation = getattr(arm.retriever, "truncation", None)
        return truncation() if callable(truncation) else None


class RetrievesFirstSpec(ArmSpec):
    """An arm that holds a RAG arm as `arm.rag` and retrieves with it for every question before it
    routes (Self-Route, the learned router): its index, caches, sweep position and index shape are
    RAG's, and the built arm answers a group itself (`arm.answer`)."""

    indexed = True
    columns = RagSpec.columns + LongContextSpec.columns

    @classmethod
    def model_ids(cls, cfg: Mapping[str, Any], knobs: Mapping[str, Any]) -> list[str]:
        return RagSpec.model_ids(cfg, knobs)

    @classmethod
    def index_shape(cls, knobs: Mapping[str, Any]) -> IndexShape:
        return RagSpec.index_shape(knobs)

    @classmethod
    def retrieval_depth(cls, knobs: Mapping[str, Any]) -> int | None:
        return RagSpec.retrieval_depth(knobs)

    @classmethod
    def index_cost_from_config(cls, config: Mapping[str, Any]) -> str | None:
        return RagSpec.index_cost_from_config(config)

    @classmethod
    def curve(cls, knobs: Mapping[str, Any]) -> Curve | None:
        return RagSpec.curve(knobs)

    @classmethod
    def answer(cls, arm, generator, samples):
        if samples_of(generator) > 1:
            raise ValueError(f"generator.samples > 1 is not supported by arm={cls.name} (it answers once per question)")
        return arm.answer(samples)

    @classmethod
    def index_builds(cls, arm) -> int | None:
        return getattr(arm.rag, "index_builds", None)

    @classmethod
    def index_cost(cls, arm) -> str | None:
        rag = getattr(arm, "rag", None)
        return None if rag is None else RagSpec.index_cost(rag)

    @classmethod
    def index_seconds(cls, arm) -> float | None:
        secs = getattr(arm.rag, "index_seconds", None)
        return None if secs is None else round(secs, 4)

    @classmethod
    def cache_stats(cls, arm) -> dict[str, Any] | None:
        return RagSpec.cache_stats(arm.rag)

    @classmethod
    def chunks_over_limit(cls, arm, samples) -> dict[str, Any] | None:
        return RagSpec.chunks_over_limit(arm.rag, samples)

    @classmethod
    def embedder_truncation(cls, arm) -> dict[str, Any] | None:
        return RagSpec.embedder_truncation(arm.rag)
