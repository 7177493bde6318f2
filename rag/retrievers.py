"""Retrievers over one sample's chunks: BM25 (bm25s; jieba words for Chinese) and dense (faiss).

A retriever builds an index over chunk texts once, then answers many queries: samples sharing a
context (one haystack, many questions) share the index.
"""

from __future__ import annotations

import logging
import re
from functools import lru_cache
from typing import Protocol, Sequence

import numpy as np

log = logging.getLogger(__name__)

_WORD = re.compile(r"\w+", re.UNICODE)
_CJK_RUN = re.compile(r"[\u3400-\u9fff]{2,}")


class Index(Protocol):
    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        """Top-k (chunk position, score), best first."""
        ...


class Retriever(Protocol):
    name: str

    def index(self, texts: Sequence[str], language: str) -> Index: ...


@lru_cache(maxsize=1)
def _jieba():
    import jieba

    jieba.setLogLevel(logging.WARNING)
    return jieba


def lexical_tokens(text: str, language: str) -> list[str]:
    """Lower-cased words. Chinese: jieba search-mode words plus character bigrams of every CJK run,
    so names missing from jieba's dictionary (which it splits into single characters) still match
    as units; punctuation dropped."""
    if language == "zh":
        words = [t for t in (w.strip().lower() for w in _jieba().cut_for_search(text)) if t and _WORD.match(t)]
        bigrams = [run[i:i + 2] for run in _CJK_RUN.findall(text) for i in range(len(run) - 1)]
        return words + bigrams
    return _WORD.findall(text.lower())


class BM25Index:
    def __init__(self, texts: Sequence[str], language: str, k1: float, b: float):
        import bm25s

        self.language = language
        corpus = [lexical_tokens(t, language) for t in texts]
        self.n = len(corpus)
        self.bm25 = bm25s.BM25(k1=k1, b=b)
        # bm25s expects token ids + vocab or lists of strings; lists of strings keep our tokenizer.
        self.bm25.index(corpus, show_progress=False)

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        q = lexical_tokens(query, self.language)
        k = min(k, self.n)
        if not q or k == 0:
            return []
        known = [t for t in q if t in self.bm25.vocab_dict]
        if not known:
            return []
        docs, scores = self.bm25.retrieve([known], k=k, show_progress=False, n_threads=1)
        return [(int(d), float(s)) for d, s in zip(docs[0], scores[0])]


class BM25Retriever:
    name = "bm25"

    def __init__(self, k1: float = 1.5, b: float = 0.75):
        self.k1, self.b = k1, b

    def index(self, texts: Sequence[str], language: str) -> BM25Index:
        return BM25Index(texts, language, self.k1, self.b)


class DenseIndex:
    def __init__(self, embedder, texts: Sequence[str], kind: str = "flat"):
        import faiss

        self.embedder = embedder
        vecs = embedder.embed_passages(list(texts))
        dim = vecs.shape[1]
        if kind == "flat":
            self.index = faiss.IndexFlatIP(dim)
        elif kind == "hnsw":
            self.index = faiss.IndexHNSWFlat(dim, 32, faiss.METRIC_INNER_PRODUCT)
        else:
            raise ValueError(f"retriever.index={kind!r}; allowed: flat, hnsw")
        self.index.add(vecs)
        self.n = len(texts)

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        k = min(k, self.n)
        if k == 0:
            return []
        q = self.embedder.embed_queries([query])
        scores, ids = self.index.search(q, k)
        return [(int(i), float(s)) for i, s in zip(ids[0], scores[0]) if i >= 0]


class DenseRetriever:
    def __init__(self, embedder, name: str = "dense", index: str = "flat"):
        self.embedder, self.name, self.kind = embedder, name, index

    def index(self, texts: Sequence[str], language: str) -> DenseIndex:
        return DenseIndex(self.embedder, texts, self.kind)


KINDS = ("bm25", "dense")


def build_retriever(cfg: dict) -> Retriever:
    kind = cfg.get("kind")
    if kind == "bm25":
        return BM25Retriever(k1=cfg.get("k1", 1.5), b=cfg.get("b", 0.75))
    if kind == "dense":
        from rag.embedders import shared_embedder

        emb = shared_embedder(cfg["model"], cfg.get("batch_size", 64), cfg.get("normalize", True),
                              cfg.get("device", "cpu"), cfg.get("query_instruction", ""), cfg.get("passage_instruction", ""))
        return DenseRetriever(emb, name=cfg.get("name", "dense"), index=cfg.get("index", "flat"))
    raise ValueError(f"retriever.kind={kind!r}; allowed: {', '.join(KINDS)}")
