"""LooGLE's RAG baseline, run with LlamaIndex itself: SentenceSplitter -> VectorStoreIndex -> top-k.

The LooGLE paper's retrieval baseline used LlamaIndex with 1024-token chunks, 20 tokens of overlap
and the top 2 chunks (ada-002 embeddings). This module runs that pipeline end to end inside
LlamaIndex, offline: the embedding model is any of our embedders (the bundled MiniLM by default)
wrapped as a LlamaIndex embedding, and the tokenizer is the generator's (LlamaIndex's default
tokenizer would download a tiktoken file). It serves as the reference the arm's
`chunker=llamaindex` + dense retriever + `top_k=2`, `order=score` configuration is checked against
(same chunks, same ranking), so sweeps use the arm (cached, with evidence recall) and stay
comparable with the paper's setting.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from eval.registry import require

LOOGLE_BASELINE = {"chunk_size": 1024, "chunk_overlap": 20, "top_k": 2}


def llamaindex_embedding(embedder):
    """Our embedder as a LlamaIndex `BaseEmbedding` (queries and passages get their instructions)."""
    from llama_index.core.base.embeddings.base import BaseEmbedding

    class _Wrapped(BaseEmbedding):
        def _get_query_embedding(self, query: str) -> list[float]:
            return embedder.embed_queries([query])[0].tolist()

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return embedder.embed_passages([text])[0].tolist()

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return embedder.embed_passages(texts).tolist()

    return _Wrapped(model_name=getattr(embedder, "model_id", "local"), embed_batch_size=64)


@dataclass
class Retrieved:
    text: str
    score: float
    start: int | None
    end: int | None


class LlamaIndexPipeline:
    """Index one context with LlamaIndex and answer questions with its top-k retriever."""

    def __init__(self, embedder, tokenizer, chunk_size: int = 1024, chunk_overlap: int = 20, top_k: int = 2):
        Settings = require("llama_index.core", "rag.pipeline=llamaindex", "make install").Settings
        from llama_index.core.node_parser import SentenceSplitter

        from rag.chunking import _hf_token_ids

        token_ids = _hf_token_ids(tokenizer)
        Settings.tokenizer = token_ids  # never let LlamaIndex fall back to tiktoken
        self.embed_model = llamaindex_embedding(embedder)
        self.splitter = SentenceSplitter(chunk_size=chunk_size, chunk_overlap=chunk_overlap, tokenizer=token_ids)
        self.top_k = top_k
        self._index: Any = None

    def index(self, context: str) -> LlamaIndexPipeline:
        from llama_index.core import Document, VectorStoreIndex

        nodes = self.splitter.get_nodes_from_documents([Document(text=context)])
        self._index = VectorStoreIndex(nodes, embed_model=self.embed_model, show_progress=False)
        return self

    def retrieve(self, question: str) -> list[Retrieved]:
        if self._index is None:
            raise RuntimeError("call index(context) first")
        retriever = self._index.as_retriever(similarity_top_k=self.top_k)
        out = []
        for hit in retriever.retrieve(question):
            node = hit.node
            out.append(Retrieved(node.get_content(), float(hit.score or 0.0), node.start_char_idx, node.end_char_idx))
        return out
