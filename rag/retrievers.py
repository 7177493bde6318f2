"""Retrievers over one context's chunks: BM25, dense (any embedder; BGE-M3 dense + sparse), hybrid (RRF,
optionally each retriever's own top few first, as LaRA's), and the oracle (the gold evidence's chunks: what a
perfect retriever would give, retrieval's upper bound).

A retriever builds a `SearchIndex` over chunk texts once (samples sharing a context share it),
then answers many queries with (chunk position, score) pairs, best first. Dense passage
embeddings and non-flat faiss indexes go through the on-disk cache (`rag.cache_keys`), keyed by the
chunk set's key and the embedder's fingerprint, so only a new chunking is ever embedded.
"""

from __future__ import annotations

import time
import weakref
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from eval.registry import Registry
from eval.storage import DiskCache
from llm.cost import INDEX_DENSE, INDEX_LEXICAL
from rag.cache_keys import content_key, dump_array, dump_faiss, dump_json, load_array, load_faiss, load_json
from rag.indexes import FAISS_KINDS, BM25Index, SparseLexicalIndex, build_faiss, faiss_search, lexical_tokens, to_gpu

__all__ = ["BM25Retriever", "DenseRetriever", "HybridRetriever", "OracleRetriever", "Retriever", "SearchIndex",
           "build_retriever",
           "lexical_tokens", "quotas_first", "reciprocal_rank_fusion"]

class SearchIndex(Protocol):
    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        """Top-k (chunk position, score), best first."""
        ...


Index = SearchIndex  # the name older code uses


class Retriever(Protocol):
    name: str
    index_cost: str  # how the report prices its index: llm.cost.INDEX_LEXICAL or INDEX_DENSE (it embeds)

    def index(self, texts: Sequence[str], language: str, cache: DiskCache | None = None,
              key: str | None = None) -> SearchIndex: ...

    def fingerprint(self) -> dict[str, Any]: ...


def _key(texts: Sequence[str], key: str | None) -> str:
    return key or content_key("texts", list(texts))


class BM25Retriever:
    """bm25s over our word tokens (rebuilt per context: ~0.1 s for 2,000 chunks, not worth a disk entry)."""

    index_cost = INDEX_LEXICAL  # how the report prices its index: tokenising on a CPU, no embedding

    def __init__(self, k1: float = 1.5, b: float = 0.75, name: str = "bm25"):
        self.k1, self.b, self.name = k1, b, name

    def fingerprint(self) -> dict[str, Any]:
        return {"kind": "bm25", "k1": self.k1, "b": self.b}

    def index(self, texts: Sequence[str], language: str, cache: DiskCache | None = None,
              key: str | None = None) -> BM25Index:
        return BM25Index(texts, language, self.k1, self.b)


@dataclass
class QueryCharge:
    """What remembered query embeddings would have cost a deployment (which embeds every new question): the wall and
    CPU seconds of the embeddings served from the memo or the disk cache inside a `charged_queries()` block."""

    seconds: float = 0.0
    cpu_s: float = 0.0
    served: int = 0


_CHARGE: ContextVar[QueryCharge | None] = ContextVar("query_charge", default=None)


@contextmanager
def charged_queries() -> Iterator[QueryCharge]:
    """Inside, every query embedding served from memory or disk adds the time it took when it was computed to the
    yielded charge: the RAG arm adds it to a question's retrieval time, so a sweep's later configs pay for the query
    embedding as the first did (not 0 s because an earlier config computed it)."""
    charge = QueryCharge()
    token = _CHARGE.set(charge)
    try:
        yield charge
    finally:
        _CHARGE.reset(token)


class _QueryVectors:
    """Query embeddings, remembered per embedder in this process and in the disk cache: a sweep asks
    the same questions at every point, and one query through a transformer costs as much as a batch. What
    computing each took is remembered with it (memory, and the disk cache's `timings`), and charged again where
    it is served (`charged_queries`)."""

    def __init__(self, embedder, size: int = 4096):
        self.embedder, self.size = embedder, size
        self.memo: OrderedDict[str, np.ndarray] = OrderedDict()
        self.took: dict[str, tuple[float, float]] = {}  # query -> (wall, CPU) seconds its embedding took

    def get(self, query: str, cache: DiskCache | None = None) -> np.ndarray:
        if query in self.memo:
            self.memo.move_to_end(query)
            self._charge(self.took.get(query))
            return self.memo[query]
        cache = cache or DiskCache(None)
        key = content_key("query", query, self.embedder.fingerprint())
        computed: list[tuple[float, float]] = []

        def embed() -> np.ndarray:
            wall, cpu = time.perf_counter(), time.process_time()
            vec = self.embedder.embed_queries([query])
            computed.append((time.perf_counter() - wall, time.process_time() - cpu))
            return vec

        vec = cache.get_or_compute("queries", key, "npy", embed, dump_array, load_array)
        took = cache.get_or_compute("timings", content_key("query_s", key), "json",
                                    lambda: {"seconds": computed[0][0], "cpu_s": computed[0][1]} if computed else {},
                                    dump_json, load_json)
        took = (float(took.get("seconds", 0.0)), float(took.get("cpu_s", 0.0))) if isinstance(took, dict) else None
        if not computed:  # served from the disk cache: computed by an earlier run
            self._charge(took)
        self.memo[query] = vec
        self.took[query] = computed[0] if computed else took or (0.0, 0.0)
        while len(self.memo) > self.size:
            self.memo.popitem(last=False)
        return vec

    @staticmethod
    def _charge(took: tuple[float, float] | None) -> None:
        charge = _CHARGE.get()
        if charge is not None and took is not None:
            charge.seconds += took[0]
            charge.cpu_s += took[1]
            charge.served += 1


_QUERY_MEMOS: weakref.WeakKeyDictionary[Any, _QueryVectors] = weakref.WeakKeyDictionary()


def query_vectors(embedder) -> _QueryVectors:
    """The query memo of `embedder` (shared by every retriever built on it in this process)."""
    try:
        memo = _QUERY_MEMOS.get(embedder)
        if memo is None:
            memo = _QUERY_MEMOS[embedder] = _QueryVectors(embedder)
        return memo
    except TypeError:  # not weak-referenceable: a private memo
        return _QueryVectors(embedder)


class DenseIndex:
    """faiss for the usual top-k; deep rankings (budget filling, BGE-M3 dense + sparse) score every chunk
    with one matrix product instead (exact, and free of faiss-gpu's k <= 2048 limit)."""

    DEEP = 1024

    def __init__(self, index, vecs: np.ndarray, query_vector,
                 sparse: tuple[SparseLexicalIndex, Any, float, float] | None = None):
        self.index, self.vecs, self.query_vector, self.sparse = index, vecs, query_vector, sparse
        self.n = len(vecs)

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        k = min(k, self.n)
        if k <= 0:
            return []
        q = self.query_vector(query)
        if self.sparse is None and k <= self.DEEP:
            return faiss_search(self.index, q, k)[0]
        total = self.vecs @ q[0]
        if self.sparse is not None:  # BGE-M3: weighted sum of dense and lexical matching scores
            sparse_index, query_weights, w_dense, w_sparse = self.sparse
            total = w_dense * total + w_sparse * sparse_index.scores(query_weights(query))
        top = np.argsort(-total, kind="stable")[:k]
        return [(int(i), float(total[i])) for i in top]


class DenseRetriever:
    index_cost = INDEX_DENSE

    def __init__(self, embedder, name: str = "dense", index: str = "flat", index_options: dict | None = None,
                 gpu: Any = "auto", sparse_weight: float = 0.0, dense_weight: float = 1.0):
        if index not in FAISS_KINDS:
            raise ValueError(f"retriever.index={index!r}; allowed: {', '.join(FAISS_KINDS)}")
        if sparse_weight and not hasattr(embedder, "lexical_weights"):
            raise ValueError("retriever.sparse_weight > 0 needs an embedder with sparse weights (backend=flag_m3)")
        self.embedder, self.name, self.kind = embedder, name, index
        self.index_options = dict(index_options or {})
        self.gpu, self.sparse_weight, self.dense_weight = gpu, float(sparse_weight), float(dense_weight)
        self.queries = query_vectors(embedder)
        self._query_weights: dict[str, dict[str, float]] = {}
        self._truncated: dict[str, tuple[int, int]] = {}  # chunk set -> (passages, cut to the input limit)

    def fingerprint(self) -> dict[str, Any]:
        return {"kind": "dense", "embedder": self.embedder.fingerprint(), "index": self.kind,
                "index_options": self.index_options, "sparse_weight": self.sparse_weight,
                "dense_weight": self.dense_weight}

    def _count_truncated(self, texts: Sequence[str], cache: DiskCache, key: str) -> None:
        """Remember how many of this chunk set's passages exceed the embedder's input limit (kept in the
        disk cache beside the vectors, so a cached index still reports it)."""
        count = getattr(self.embedder, "count_truncated", None)
        if count is None or key in self._truncated:
            return
        tkey = content_key("truncated", key, self.embedder.fingerprint())
        n = cache.get_or_compute("counts", tkey, "json", lambda: {"truncated": count(list(texts))},
                                 dump_json, load_json)
        self._truncated[key] = (len(texts), int(n["truncated"]))

    def count_over_limit(self, texts: Sequence[str], cache: DiskCache | None = None, key: str | None = None) -> None:
        """Count the passages of one chunk set that exceed the embedder's input limit, before (or without) embedding
        them: a run says so at its start (`truncation()` then includes them; indexing them later counts nothing
        twice)."""
        self._count_truncated(texts, cache or DiskCache(None), _key(texts, key))

    def truncation(self) -> dict[str, Any] | None:
        """Passages indexed in this process and how many the embedder cut to its input limit (None: it cannot tell)."""
        limit = getattr(self.embedder, "max_input_tokens", None)
        if limit is None or not self._truncated:
            return None
        total = sum(n for n, _ in self._truncated.values())
        cut = sum(t for _, t in self._truncated.values())
        return {"embedder": self.embedder.model_id, "max_input_tokens": limit, "chunks": total, "truncated": cut,
                "share": round(cut / total, 4) if total else 0.0}

    def passage_vectors(self, texts: Sequence[str], cache: DiskCache | None = None, key: str | None = None,
                        compute=None) -> np.ndarray:
        """The passages' vectors from the cache, or `compute()` (default: the embedder's embed_passages)."""
        cache = cache or DiskCache(None)
        emb_key = content_key("embeddings", _key(texts, key), self.embedder.fingerprint())
        return cache.get_or_compute("embeddings", emb_key, "npy",
                                    compute or (lambda: self.embedder.embed_passages(list(texts))),
                                    dump_array, load_array)

    def _query_lexical(self, query: str) -> dict[str, float]:
        if query not in self._query_weights:
            self._query_weights[query] = self.embedder.lexical_weights([query])[0]
        return self._query_weights[query]

    def index(self, texts: Sequence[str], language: str, cache: DiskCache | None = None,
              key: str | None = None) -> DenseIndex:
        cache = cache or DiskCache(None)
        key = _key(texts, key)
        # BGE-M3 with sparse_weight > 0: dense vectors and lexical weights come from one encoder pass
        # (kept here for the sparse entry below when both are computed now; either may be cached alone)
        both: dict[str, Any] = {}

        def embed_both() -> np.ndarray:
            vecs, both["weights"] = self.embedder.embed_with_weights(list(texts))
            return vecs

        one_pass = bool(self.sparse_weight) and hasattr(self.embedder, "embed_with_weights")
        vecs = self.passage_vectors(texts, cache, key, embed_both if one_pass else None)
        self._count_truncated(texts, cache, key)
        if self.kind == "flat":  # rebuilding from cached vectors is a memcpy: no index entry
            index = build_faiss(vecs, "flat")
        else:
            idx_key = content_key("index", key, self.embedder.fingerprint(), self.kind, self.index_options)
            index = cache.get_or_compute("indexes", idx_key, "faiss",
                                         lambda: build_faiss(vecs, self.kind, **self.index_options),
                                         dump_faiss, load_faiss)
        index = to_gpu(index, self.gpu)
        sparse = None
        if self.sparse_weight:
            sp_key = content_key("sparse", key, self.embedder.fingerprint())
            weights = cache.get_or_compute(
                "sparse", sp_key, "json",
                lambda: both.pop("weights") if "weights" in both else self.embedder.lexical_weights(list(texts)),
                dump_json, load_json)
            sparse = (SparseLexicalIndex(weights), self._query_lexical, self.dense_weight, self.sparse_weight)
        return DenseIndex(index, vecs, lambda q: self.queries.get(q, cache), sparse)


def reciprocal_rank_fusion(rankings: Sequence[Sequence[tuple[int, float]]], k: int = 60,
                           weights: Sequence[float] | None = None) -> list[tuple[int, float]]:
    """Fuse rankings: score(d) = sum_i w_i / (k + rank_i(d)), ranks from 1; ties keep first-seen order."""
    weights = weights or [1.0] * len(rankings)
    fused: dict[int, float] = {}
    for w, ranking in zip(weights, rankings, strict=True):
        for rank, (doc, _) in enumerate(ranking, start=1):
            fused[doc] = fused.get(doc, 0.0) + w / (k + rank)
    return sorted(fused.items(), key=lambda kv: -kv[1])


def quotas_first(rankings: Sequence[Sequence[tuple[int, float]]], quotas: Sequence[int],
                 fused: Sequence[tuple[int, float]]) -> list[tuple[int, float]]:
    """Each ranking's own top `quotas[i]` first (rankings in order, each chunk once), then the rest of
    `fused` in its order; scores are the fused ones. LaRA's hybrid (SimpleHybridRetriever): BM25's
    top 3 and the dense top 2 of 5 (vector_ratio 0.5: int(5 x 0.5) dense), BM25's first."""
    score = dict(fused)
    head: list[tuple[int, float]] = []
    seen: set[int] = set()
    for ranking, quota in zip(rankings, quotas, strict=True):
        for doc, _ in ranking[:quota]:
            if doc not in seen:
                head.append((doc, score.get(doc, 0.0)))
                seen.add(doc)
    return head + [(doc, s) for doc, s in fused if doc not in seen]


class HybridIndex:
    def __init__(self, indexes: list[SearchIndex], rrf_k: int, depth: int, weights: list[float],
                 quotas: list[int] | None = None):
        self.indexes, self.rrf_k, self.depth, self.weights, self.quotas = indexes, rrf_k, depth, weights, quotas

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        depth = max(k, self.depth)
        rankings = [ix.search(query, depth) for ix in self.indexes]
        fused = reciprocal_rank_fusion(rankings, self.rrf_k, self.weights)
        if self.quotas:
            fused = quotas_first(rankings, self.quotas, fused)
        return fused[:k]


class HybridRetriever:
    """Reciprocal rank fusion of its retrievers; with `quotas`, each retriever's own top `quotas[i]`
    come first (in the listed order, each chunk once) and the fused ranking follows."""

    def __init__(self, retrievers: list, rrf_k: int = 60, depth: int = 100, weights: list[float] | None = None,
                 name: str = "hybrid", quotas: list[int] | None = None):
        if len(retrievers) < 2:
            raise ValueError("retriever.retrievers: a hybrid retriever fuses at least two retrievers")
        self.retrievers, self.rrf_k, self.depth, self.name = retrievers, rrf_k, depth, name
        self.weights = list(weights) if weights else [1.0] * len(retrievers)
        if len(self.weights) != len(retrievers):
            raise ValueError(f"retriever.weights has {len(self.weights)} values for {len(retrievers)} retrievers")
        self.quotas = [int(q) for q in quotas] if quotas else None
        # it embeds when any of its retrievers does
        self.index_cost = INDEX_DENSE if any(r.index_cost == INDEX_DENSE for r in retrievers) else INDEX_LEXICAL
        if self.quotas is not None and (len(self.quotas) != len(retrievers) or min(self.quotas) < 0):
            raise ValueError(f"retriever.quotas needs one count >= 0 per retriever ({len(retrievers)}), got {quotas}")

    def fingerprint(self) -> dict[str, Any]:
        out = {"kind": "hybrid", "rrf_k": self.rrf_k, "depth": self.depth, "weights": self.weights,
               "retrievers": [r.fingerprint() for r in self.retrievers]}
        if self.quotas:  # only when set: fingerprints of plain RRF hybrids stay as they were
            out["quotas"] = self.quotas
        return out

    def count_over_limit(self, texts: Sequence[str], cache: DiskCache | None = None, key: str | None = None) -> None:
        for r in self.retrievers:
            if hasattr(r, "count_over_limit"):
                r.count_over_limit(texts, cache, key)

    def truncation(self) -> dict[str, Any] | None:
        """The dense members' input-limit counts (BM25 reads every token)."""
        found = [t for t in (getattr(r, "truncation", lambda: None)() for r in self.retrievers) if t]
        if not found:
            return None
        if len(found) == 1:
            return found[0]
        return {"embedder": ", ".join(t["embedder"] for t in found), "by_embedder": found,
                "chunks": max(t["chunks"] for t in found), "truncated": max(t["truncated"] for t in found),
                "share": max(t["share"] for t in found)}

    def index(self, texts: Sequence[str], language: str, cache: DiskCache | None = None,
              key: str | None = None) -> HybridIndex:
        return HybridIndex([r.index(texts, language, cache, key) for r in self.retrievers], self.rrf_k, self.depth,
                           self.weights, self.quotas)


class _NoIndex:
    """The oracle ranks by a sample's gold evidence, not by a query: there is nothing to search."""

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        raise TypeError("retriever=oracle ranks by the sample's gold evidence (OracleRetriever.rank), not by a query")


class OracleRetriever:
    """Retrieval's upper bound: the chunks that hold the sample's gold evidence, nothing else, best covering
    first (the arm then keeps at most top_k of them and, with `rag.order=document`, puts them in document
    order). Char-span evidence: the chunks overlapping a span, ranked by the characters of evidence they hold;
    document-level evidence (Loong): the chunks of those documents, in document order. It needs evidence: a
    benchmark without any stops the run (`check`)."""

    index_cost = INDEX_LEXICAL  # it builds no index: priced as the cheapest kind (a deployment has no oracle)

    def __init__(self, name: str = "oracle"):
        self.name = name

    def fingerprint(self) -> dict[str, Any]:
        return {"kind": "oracle"}

    def index(self, texts: Sequence[str], language: str, cache: DiskCache | None = None,
              key: str | None = None) -> _NoIndex:
        return _NoIndex()

    def check(self, samples: Sequence[Any]) -> None:
        """A clear stop when no sample has gold evidence (quotes, spans or documents) to give the prompt."""
        if samples and not any(s.evidence for s in samples):
            bench = samples[0].benchmark
            raise ValueError(f"retriever=oracle needs gold evidence (quotes, char spans or evidence documents) and "
                             f"benchmark {bench} has none for any of its {len(samples)} samples; use a benchmark "
                             "with evidence or another retriever")

    def rank(self, sample: Any, chunks: Sequence[Any], k: int) -> list[tuple[int, float]]:
        """(chunk position, characters of evidence it holds), most first, ties in document order; at most k."""
        held: dict[int, float] = {}
        for span in sample.evidence:
            for pos, c in enumerate(chunks):
                if span.is_char_span:
                    chars = min(c.end, span.end) - max(c.start, span.start)
                elif span.doc_id is not None and c.doc_id == span.doc_id:
                    chars = c.end - c.start
                else:
                    continue
                if chars > 0:
                    held[pos] = held.get(pos, 0.0) + float(chars)
        ranked = sorted(held.items(), key=lambda kv: (-kv[1], kv[0]))
        return ranked[:k]


def oracle_retriever(name: str = "oracle") -> OracleRetriever:
    return OracleRetriever(name=name)


INDEX_OPTIONS = ("hnsw_m", "ef_search", "nlist", "nprobe", "ivf_min_vectors")


def bm25_retriever(name: str = "bm25", k1: float = 1.5, b: float = 0.75) -> BM25Retriever:
    return BM25Retriever(k1=float(k1), b=float(b), name=name)


def dense_retriever(name: str = "dense", index: str = "flat", gpu: Any = "auto", sparse_weight: float | None = 0.0,
                    dense_weight: float = 1.0, hnsw_m: int | None = None, ef_search: int | None = None,
                    nlist: int | None = None, nprobe: int | None = None, ivf_min_vectors: int | None = None,
                    **embedder: Any) -> DenseRetriever:
    """The index settings are named here; every other key (`backend`, `model`, ...) is the embedder's,
    checked against its backend by `rag.embedders.build_embedder`."""
    from rag.embedders import build_embedder

    given = {"hnsw_m": hnsw_m, "ef_search": ef_search, "nlist": nlist, "nprobe": nprobe,
             "ivf_min_vectors": ivf_min_vectors}
    return DenseRetriever(build_embedder(embedder), name=name, index=index,
                          index_options={k: v for k, v in given.items() if v is not None}, gpu=gpu,
                          sparse_weight=float(sparse_weight or 0.0), dense_weight=float(dense_weight))


def hybrid_retriever(retrievers: Any = None, rrf_k: int = 60, depth: int = 100, weights: list[float] | None = None,
                     name: str = "hybrid", quotas: list[int] | None = None) -> HybridRetriever:
    parts = retrievers or []
    if not isinstance(parts, (list, tuple)):
        raise ValueError("retriever.retrievers must be a list of retriever configs")
    return HybridRetriever([build_retriever(dict(p)) for p in parts], rrf_k=int(rrf_k), depth=int(depth),
                           weights=weights, name=name, quotas=quotas)


RETRIEVERS = Registry("retriever.kind", {"bm25": bm25_retriever, "dense": dense_retriever, "hybrid": hybrid_retriever,
                                         "oracle": oracle_retriever})
KINDS = tuple(RETRIEVERS.names())


def build_retriever(cfg: dict) -> Retriever:
    """`retriever` config group (plain dict) -> retriever; a key its kind does not take fails naming it."""
    return RETRIEVERS.build(str(cfg.get("kind")), cfg, drop=("kind",), section="retriever")
