"""BGE-M3 (dense + sparse lexical weights), FlagReranker and sentence-transformers' CrossEncoder, for real:
the libraries' own code on tiny random-weight models built here (tests/tiny_models.py; no model hub),
through the project's retriever, reranker and RAG arm, checked against the libraries called directly.

The FlagEmbedding tests are skipped only when FlagEmbedding (the `[bge]` extra, which `make install`
installs) is not importable."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

from eval.benchmarks.synthetic import make_haystack
from rag.arm import retrieval_query
from rag.build import build_rag_arm

HAS_FLAG = importlib.util.find_spec("FlagEmbedding") is not None
needs_flag = pytest.mark.skipif(not HAS_FLAG, reason="FlagEmbedding is not installed (the [bge] extra: "
                                                      "pip install '.[bge]', or make install)")

RAG = {"chunk_size": 64, "chunk_overlap": 8, "top_k": 8, "order": "score", "recall_at": [1, 3, 5, 10]}


def m3(model, **kw) -> dict:
    """conf/retriever/bge_m3.yaml with a local model, on CPU."""
    return {"name": "bge_m3", "kind": "dense", "backend": "flag_m3", "model": str(model), "index": "flat",
            "gpu": "auto", "batch_size": 16, "max_length": 8192, "device": "cpu", "fp16": True, "dense_weight": 1.0,
            "sparse_weight": 0.3, **kw}


@pytest.fixture(scope="module")
def sample():
    return make_haystack(seed=4, language="en", tokens=2000, n_questions=1)[0]


def ranking(meta) -> list[int]:
    return [r["chunk"] for r in meta["retrieved"]]


def direct_m3_scores(model, query: str, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Dense and lexical-matching scores of each text for the query, from BGEM3FlagModel itself."""
    from FlagEmbedding import BGEM3FlagModel

    lib = BGEM3FlagModel(str(model), use_fp16=False, devices="cpu")
    p = lib.encode(texts, return_dense=True, return_sparse=True)
    q = lib.encode([query], return_dense=True, return_sparse=True)
    dense = p["dense_vecs"] @ q["dense_vecs"][0]
    sparse = lib.compute_lexical_matching_score(q["lexical_weights"], p["lexical_weights"])[0]
    return np.asarray(dense, dtype=np.float64), np.asarray(sparse, dtype=np.float64)


@needs_flag
def test_bge_m3_dense_and_sparse_scores_through_the_arm(generator, tiny_bge_m3, sample, tmp_path):
    """The arm ranks by dense_weight x dense + sparse_weight x sparse, both as BGEM3FlagModel computes them;
    dense only, sparse only and the fusion give three different rankings."""
    query = retrieval_query(sample)
    arm = build_rag_arm(generator, RAG, m3(tiny_bge_m3), None, None, tmp_path)
    fused = arm.retrieve(sample)
    texts = [c.text for c in arm.chunks_for(sample)]
    dense, sparse = direct_m3_scores(tiny_bge_m3, query, texts)
    assert len(texts) > 10
    assert np.allclose(np.linalg.norm(arm.retriever.passage_vectors(texts, arm.cache, arm.chunk_key(sample)), axis=1),
                       1)
    # lexical weights come back: many texts share a weighted token with the query, not all equally
    assert (sparse > 0).sum() >= 10 and np.ptp(sparse) > 0.1 * sparse.max()

    expected = 1.0 * dense + 0.3 * sparse
    order = list(np.argsort(-expected, kind="stable")[:8])
    assert ranking(fused) == order
    assert [r["score"] for r in fused["retrieved"]] == pytest.approx(expected[order], abs=2e-4)

    dense_only = build_rag_arm(generator, RAG, m3(tiny_bge_m3, sparse_weight=0.0), None, None,
                               tmp_path).retrieve(sample)
    sparse_only = build_rag_arm(generator, RAG, m3(tiny_bge_m3, dense_weight=0.0, sparse_weight=1.0), None, None,
                                tmp_path).retrieve(sample)
    assert ranking(dense_only) == list(np.argsort(-dense, kind="stable")[:8])
    assert [r["score"] for r in dense_only["retrieved"]] == pytest.approx(np.sort(dense)[::-1][:8], abs=2e-4)
    assert ranking(sparse_only) == list(np.argsort(-sparse, kind="stable")[:8])
    assert ranking(fused) != ranking(dense_only) and ranking(fused) != ranking(sparse_only), "the fusion uses both"


@needs_flag
def test_bge_m3_caches_key_on_the_model(generator, tiny_bge_m3, tiny_bge_m3_other, sample, tmp_path):
    """Embeddings, sparse weights and build timings are cached per model: another model is a miss with its
    own results, the same model again is a hit with the same results (a hybrid's parts included)."""
    def arm(retriever):
        return build_rag_arm(generator, RAG, retriever, None, None, tmp_path)

    def figures(meta):
        return {k: v for k, v in meta.items() if k not in ("retrieval_s", "retrieval_cpu_s")}  # measured each time

    def hits(a, kind):
        stats = a.cache_stats().get(kind, {"hits": 0, "misses": 0})
        return stats["hits"], stats["misses"]

    def build_timings(a):
        """`timings` holds the index's build time and, beside each query vector read from disk or computed, what
        computing it took (charged to the question again when the vector is served): the build time's entry alone."""
        (t_hit, t_miss), (q_hit, q_miss) = hits(a, "timings"), hits(a, "queries")
        return t_hit - q_hit, t_miss - q_miss

    first, other, again = arm(m3(tiny_bge_m3)), arm(m3(tiny_bge_m3_other)), arm(m3(tiny_bge_m3))
    a, b, c = first.retrieve(sample), other.retrieve(sample), again.retrieve(sample)
    # (query vectors are counted apart: the embedder's in-process memo answers once a test has asked the question)
    assert [hits(first, k) for k in ("embeddings", "sparse")] + [build_timings(first)] == [(0, 1)] * 3
    assert [hits(other, k) for k in ("embeddings", "sparse")] + [build_timings(other)] == [(0, 1)] * 3, \
        "another model: new entries"
    assert hits(other, "queries")[0] == 0, "another model's query vectors are its own"
    assert [hits(again, k) for k in ("embeddings", "sparse")] + [build_timings(again)] == [(1, 0)] * 3, \
        "the same model: hits"
    assert hits(other, "chunks") == (1, 0), "chunks do not depend on the embedder"
    assert figures(c) == figures(a) and [r["score"] for r in b["retrieved"]] != [r["score"] for r in a["retrieved"]]

    def hybrid(model):
        return {"name": "hybrid", "kind": "hybrid", "rrf_k": 60, "depth": 100, "weights": None,
                "retrievers": [{"kind": "bm25"}, m3(model, sparse_weight=0.0)]}

    h1, h2, h3 = arm(hybrid(tiny_bge_m3)), arm(hybrid(tiny_bge_m3_other)), arm(hybrid(tiny_bge_m3))
    for h in (h1, h2, h3):
        h.retrieve(sample)
    # the measured build time (index_seconds) is the model's own, not the other hybrid's
    assert [build_timings(h) for h in (h1, h2, h3)] == [(0, 1), (0, 1), (1, 0)]


@needs_flag
def test_an_index_with_sparse_weights_encodes_the_passages_once(tiny_bge_m3, monkeypatch):
    """Dense vectors and lexical weights of the passages come from one encoder pass, equal to two separate ones."""
    from rag.retrievers import build_retriever

    retriever = build_retriever(m3(tiny_bge_m3))
    emb = retriever.embedder
    texts = [f"record {i}: the {w} mill by the river holds {i % 5} sacks" for i, w in enumerate(["old", "red"] * 10)]
    calls = []
    encode = emb.model.encode
    monkeypatch.setattr(emb.model, "encode",
                        lambda sentences, **kw: calls.append(len(sentences)) or encode(sentences, **kw))
    index = retriever.index(texts, "en")
    assert calls == [len(texts)], "one pass over the passages"
    assert np.allclose(index.vecs, emb.embed_passages(texts), atol=1e-6)
    sparse_index = index.sparse[0]
    q = emb.lexical_weights(["red mill"])[0]
    assert np.allclose(sparse_index.scores(q),
                       emb.model.compute_lexical_matching_score([q], emb.lexical_weights(texts))[0], atol=1e-6)


@needs_flag
def test_bge_m3_max_length_is_capped_at_the_models_positions(tiny_bge_m3):
    """max_length 8192 (conf/retriever/bge_m3.yaml) on a 512-position model: long passages are truncated
    (FlagEmbedding 1.4 otherwise backs its batch size off to nothing and fails with an AttributeError)."""
    from rag.retrievers import build_retriever

    emb = build_retriever(m3(tiny_bge_m3, batch_size=4)).embedder
    assert emb.max_length == 512 and emb.fingerprint()["max_length"] == 512
    vecs = emb.embed_passages([" ".join(["the mill by the river"] * 200), "short"])
    assert vecs.shape == (2, 128) and np.isfinite(vecs).all()


@needs_flag
def test_a_folder_without_the_bge_m3_heads_is_refused(tiny_reranker):
    """FlagEmbedding would load any encoder and give it random sparse and ColBERT heads, silently."""
    from rag.retrievers import build_retriever

    with pytest.raises(FileNotFoundError,
                       match=r"not a BGE-M3 folder: it lacks colbert_linear\.pt and sparse_linear\.pt"):
        build_retriever(m3(tiny_reranker))


def _direct_reranker_scores(kind: str, model, query: str, texts: list[str]) -> list[float]:
    """The reranker's scores from the library itself."""
    if kind == "bge_reranker":
        from FlagEmbedding import FlagReranker

        return FlagReranker(str(model), use_fp16=False, devices="cpu").compute_score([[query, t] for t in texts])
    from sentence_transformers import CrossEncoder

    return list(map(float, CrossEncoder(str(model), device="cpu", max_length=512).predict([(query, t) for t in texts])))


@pytest.mark.parametrize("kind", [pytest.param("bge_reranker", marks=needs_flag), "cross_encoder"])
def test_reranker_reorders_the_candidates_by_the_librarys_scores(kind, generator, tiny_reranker, sample, tmp_path):
    """Through the arm: the first stage's top `candidates` come back sorted by the scores FlagReranker /
    CrossEncoder give when called directly; device=auto is resolved (to cuda when torch sees a GPU)."""
    from rag.embedders import resolve_device
    from rag.rerank import build_reranker

    cfg = {"kind": kind, "model": str(tiny_reranker), "candidates": 8, "batch_size": 32, "device": "cpu",
           **({"fp16": True} if kind == "bge_reranker" else {"max_length": 512})}
    first = build_rag_arm(generator, RAG, {"kind": "bm25"}, None, None, tmp_path).retrieve(sample)
    arm = build_rag_arm(generator, RAG, {"kind": "bm25"}, None, cfg, tmp_path)
    reranked = arm.retrieve(sample)
    candidates = ranking(first)
    texts = [c.text for c in arm.chunks_for(sample)]
    scores = _direct_reranker_scores(kind, tiny_reranker, retrieval_query(sample), [texts[i] for i in candidates])
    by_score = sorted(range(len(candidates)), key=lambda j: -scores[j])
    assert ranking(reranked) == [candidates[j] for j in by_score]
    assert [r["score"] for r in reranked["retrieved"]] == pytest.approx([scores[j] for j in by_score], abs=2e-4)
    assert ranking(reranked) != candidates, "the reranker changed the order"

    model = build_reranker({**cfg, "device": "auto"}).scorer.model
    device = model.target_devices[0] if kind == "bge_reranker" else str(model.device)
    assert device.startswith(resolve_device("auto"))


@needs_flag
def test_retrieval_only_run_with_bge_m3_and_bge_reranker(tiny_bge_m3, tiny_reranker, tmp_path):
    """`python -m experiments.run arm=rag retriever=bge_m3 reranker=bge_reranker generator=none` with local
    models, twice on one cache: the second run embeds nothing and records the same retrievals."""
    from experiments.run import run
    from tests.conftest import compose

    cfg = compose(["benchmark.languages=[en]", "benchmark.levels=[400]", "benchmark.questions_per_haystack=2",
                   "arm=rag", "retriever=bge_m3", f"retriever.model={tiny_bge_m3}", "reranker=bge_reranker",
                   f"reranker.model={tiny_reranker}", "reranker.candidates=6", "reranker.device=auto",
                   "generator=none", "rag.chunk_size=64", "rag.top_k=6", "rag.order=score",
                   f"run.cache_dir={tmp_path / 'cache'}", "run.progress=false"])
    runs = []
    for name in ("first", "second"):
        (tmp_path / name).mkdir()
        metrics = run(cfg, tmp_path / name)
        records = [json.loads(x) for x in (tmp_path / name / "records.jsonl").read_text().splitlines()]
        runs.append((metrics, records))
    (m1, r1), (m2, r2) = runs
    assert m1["knobs"]["retriever"] == "bge_m3" and m1["knobs"]["reranker"] == "bge_reranker"
    assert len(r1) == 2 and all(r["status"] == "retrieved" and len(r["retrieved"]) == 6 for r in r1)
    assert m1["cache_stats"]["embeddings"] == {"hits": 0, "misses": 1, "corrupt": 0}
    assert m1["cache_stats"]["sparse"] == {"hits": 0, "misses": 1, "corrupt": 0}
    assert m2["cache_stats"]["embeddings"]["hits"] == 1 and m2["cache_stats"]["sparse"]["hits"] == 1
    assert m2["cache_stats"]["embeddings"]["misses"] == 0 and m2["index_seconds"] == m1["index_seconds"]
    assert [r["retrieved"] for r in r2] == [r["retrieved"] for r in r1]
    for rec in r1:  # reranked: best reranker score first
        scores = [x["score"] for x in rec["retrieved"]]
        assert scores == sorted(scores, reverse=True)
