"""Search structures over one context's chunks: faiss (dense), bm25s (lexical), BGE-M3 sparse weights.

- faiss: `flat` inner product (exact; the default), `hnsw` (graph, for large corpora), `ivf`
  (inverted lists, trained on the corpus; falls back to flat below `ivf_min_vectors`, where
  training would be meaningless). With faiss-gpu installed and `gpu` not false, flat and IVF
  indexes move to the GPU.
- BM25 with bm25s over our own tokens: lower-cased words for English; for Chinese, jieba
  search-mode words plus character bigrams of every CJK run (names missing from jieba's dictionary,
  which it splits into single characters, still match as units).
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from eval.registry import require

log = logging.getLogger(__name__)

FAISS_KINDS = ("flat", "hnsw", "ivf")

_WORD = re.compile(r"\w+", re.UNICODE)
_CJK_RUN = re.compile(r"[\u3400-\u9fff]{2,}")


# ---------------------------------------------------------------- faiss
def faiss_gpus() -> int:
    faiss = require("faiss", "a faiss index (retriever.index)", "make install")

    get = getattr(faiss, "get_num_gpus", None)
    return int(get()) if get else 0


def build_faiss(vecs: np.ndarray, kind: str = "flat", hnsw_m: int = 32, ef_search: int = 128,
                nlist: int | None = None, nprobe: int = 16, ivf_min_vectors: int = 4096):
    """A CPU faiss index over `vecs` (inner product), built as `kind` says."""
    faiss = require("faiss", "a faiss index (retriever.index)", "make install")

    if kind not in FAISS_KINDS:
        raise ValueError(f"retriever.index={kind!r}; allowed: {', '.join(FAISS_KINDS)}")
    vecs = np.ascontiguousarray(vecs, dtype=np.float32)
    n, dim = vecs.shape
    if kind == "hnsw":
        index = faiss.IndexHNSWFlat(dim, hnsw_m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efSearch = ef_search
    elif kind == "ivf" and n >= ivf_min_vectors:
        lists = nlist or max(1, int(4 * math.sqrt(n)))
        quantizer = faiss.IndexFlatIP(dim)
        index = faiss.IndexIVFFlat(quantizer, dim, lists, faiss.METRIC_INNER_PRODUCT)
        index.train(vecs)
        index.nprobe = min(nprobe, lists)
    else:
        index = faiss.IndexFlatIP(dim)
    if n:
        index.add(vecs)
    return index


def to_gpu(index, gpu: Any = "auto"):
    """Move a flat/IVF index to GPU 0 when faiss-gpu sees one and `gpu` is not false."""
    if gpu is False or gpu in ("false", "no", "off"):
        return index
    try:
        n = faiss_gpus()
    except Exception:  # noqa: BLE001
        n = 0
    if n == 0:
        if gpu is True:
            raise RuntimeError("retriever.gpu=true but faiss sees no GPU (install faiss-gpu: the [gpu] extra)")
        return index
    faiss = require("faiss", "a faiss index (retriever.index)", "make install")

    if isinstance(index, faiss.IndexHNSWFlat):  # no GPU HNSW in faiss: stay on CPU
        return index
    return faiss.index_cpu_to_gpu(faiss.StandardGpuResources(), 0, index)


def faiss_search(index, queries: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
    k = min(k, index.ntotal)
    if k <= 0:
        return [[] for _ in range(len(queries))]
    scores, ids = index.search(np.ascontiguousarray(queries, dtype=np.float32), k)
    return [[(int(i), float(s)) for i, s in zip(row_i, row_s, strict=True) if i >= 0]
            for row_i, row_s in zip(ids, scores, strict=True)]


# ---------------------------------------------------------------- BM25
@lru_cache(maxsize=1)
def _bm25s():
    import bm25s

    # bm25s sets its logger to DEBUG when imported and logs a line per index build: quiet it afterwards
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    return bm25s


@lru_cache(maxsize=1)
def _jieba():
    import jieba

    jieba.setLogLevel(logging.WARNING)
    return jieba


def lexical_tokens(text: str, language: str) -> list[str]:
    """Lower-cased words; Chinese: jieba search-mode words plus CJK character bigrams."""
    if language == "zh":
        words = [t for t in (w.strip().lower() for w in _jieba().cut_for_search(text)) if t and _WORD.match(t)]
        bigrams = [run[i:i + 2] for run in _CJK_RUN.findall(text) for i in range(len(run) - 1)]
        return words + bigrams
    return _WORD.findall(text.lower())


class BM25Index:
    def __init__(self, texts: Sequence[str], language: str, k1: float = 1.5, b: float = 0.75):
        bm25s = _bm25s()
        self.language = language
        corpus = [lexical_tokens(t, language) for t in texts]
        self.n = len(corpus)
        self.bm25 = bm25s.BM25(k1=k1, b=b)
        if self.n:
            self.bm25.index(corpus, show_progress=False)

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        k = min(k, self.n)
        if k <= 0:
            return []
        known = [t for t in lexical_tokens(query, self.language) if t in self.bm25.vocab_dict]
        if not known:
            return []
        docs, scores = self.bm25.retrieve([known], k=k, show_progress=False, n_threads=1)
        return [(int(d), float(s)) for d, s in zip(docs[0], scores[0], strict=True)]


# ---------------------------------------------------------------- BGE-M3 sparse (lexical weights)
class SparseLexicalIndex:
    """Score = sum over shared tokens of query weight x passage weight (BGE-M3's lexical matching)."""

    def __init__(self, weights: Sequence[dict[str, float]]):
        self.postings: dict[str, list[tuple[int, float]]] = {}
        for i, w in enumerate(weights):
            for tok, v in w.items():
                self.postings.setdefault(tok, []).append((i, v))
        self.n = len(weights)

    def scores(self, query_weights: dict[str, float]) -> np.ndarray:
        out = np.zeros(self.n, dtype=np.float32)
        for tok, qv in query_weights.items():
            for i, v in self.postings.get(tok, ()):
                out[i] += qv * v
        return out
