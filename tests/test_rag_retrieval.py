"""Indexes, hybrid fusion, reranking, context assembly, the arm's retrieval-only view, LlamaIndex parity."""

import logging

import numpy as np
import pytest

from eval.benchmarks.synthetic import make_haystack
from eval.evidence import Region, recall_at
from eval.storage import DiskCache
from rag.assembly import order_chunks, select_chunks
from rag.build import build_rag_arm
from rag.chunking import Chunk, ChunkerConfig, make_chunks
from rag.indexes import build_faiss, faiss_search
from rag.retrievers import BM25Retriever, DenseRetriever, HybridRetriever, reciprocal_rank_fusion

MINILM = {"name": "minilm", "kind": "dense", "backend": "sentence_transformers", "model": "bundled:all-MiniLM-L6-v2",
          "index": "flat", "batch_size": 64, "normalize": True, "device": "cpu", "query_instruction": "",
          "passage_instruction": ""}


def test_rrf_scores_and_order():
    fused = reciprocal_rank_fusion([[(1, 9.0), (2, 5.0), (3, 1.0)], [(3, 0.9), (1, 0.8)]], k=60)
    assert [d for d, _ in fused] == [1, 3, 2]
    assert fused[0][1] == pytest.approx(1 / 61 + 1 / 62)
    assert fused[2][1] == pytest.approx(1 / 62)
    weighted = reciprocal_rank_fusion([[(1, 0)], [(2, 0)]], k=60, weights=[1.0, 2.0])
    assert [d for d, _ in weighted] == [2, 1]


def test_faiss_kinds_agree_with_flat():
    rng = np.random.default_rng(0)
    vecs = rng.standard_normal((3000, 32)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    queries = vecs[:20] + 0.05 * rng.standard_normal((20, 32)).astype(np.float32)
    exact = [r[0][0] for r in faiss_search(build_faiss(vecs, "flat"), queries, 5)]
    assert exact == list(range(20))
    for kind, opts in [("hnsw", {}), ("ivf", {"ivf_min_vectors": 1000, "nprobe": 8})]:
        index = build_faiss(vecs, kind, **opts)
        assert type(index).__name__ == {"hnsw": "IndexHNSWFlat", "ivf": "IndexIVFFlat"}[kind]
        got = [r[0][0] for r in faiss_search(index, queries, 5)]
        assert sum(a == b for a, b in zip(got, exact, strict=True)) >= 18, kind
    assert type(build_faiss(vecs[:100], "ivf")).__name__ == "IndexFlatIP", "too few vectors to train IVF"
    with pytest.raises(ValueError, match="retriever.index"):
        build_faiss(vecs, "lsh")


def test_hnsw_index_is_cached_on_disk(minilm, tmp_path):
    texts = [f"the {w} mill stands by the river number {i}" for i, w in enumerate(["old", "new", "red"] * 20)]
    cache = DiskCache(tmp_path)
    r = DenseRetriever(minilm, index="hnsw")
    a = r.index(texts, "en", cache, "k1").search("red mill river number 5", 3)
    b = DenseRetriever(minilm, index="hnsw").index(texts, "en", cache, "k1").search("red mill river number 5", 3)
    assert a == b
    assert cache.summary()["indexes"] == {"hits": 1, "misses": 1, "corrupt": 0}
    assert cache.summary()["embeddings"] == {"hits": 1, "misses": 1, "corrupt": 0}


@pytest.mark.parametrize("language", ["en", "zh"])
def test_hybrid_is_rrf_of_its_parts_and_finds_needles(tokenizer, minilm, language):
    samples = make_haystack(seed=2, language=language, tokens=4000, n_questions=4, two_hop_share=0.0,
                            confusing_share=0.0)
    chunks = make_chunks(samples[0].context, tokenizer, ChunkerConfig("tokens", 128, 16))
    texts = [c.text for c in chunks]
    hybrid = HybridRetriever([BM25Retriever(), DenseRetriever(minilm)], rrf_k=60, depth=50).index(texts, language)
    bm25, dense = BM25Retriever().index(texts, language), DenseRetriever(minilm).index(texts, language)
    found = 0
    for s in samples:
        ranked = hybrid.search(s.question, 3)
        assert ranked == reciprocal_rank_fusion([bm25.search(s.question, 50), dense.search(s.question, 50)], 60)[:3]
        regions = [Region(chunks[i].start, chunks[i].end) for i, _ in ranked]
        found += recall_at(s.evidence, regions, [3], 0.6)["3"] == 1.0
    if language == "en":  # MiniLM is English-only: on Chinese its ranking is noise and drags the fusion down
        assert found >= 3, f"hybrid found {found}/4 needles in its top 3"


def test_bm25_is_silent(tokenizer, capsys, caplog):
    caplog.set_level(logging.DEBUG)
    index = BM25Retriever().index(["alpha beta", "gamma delta", "beta gamma"], "en")
    assert index.search("gamma", 2)[0][0] in (1, 2)
    out = capsys.readouterr()
    assert out.out == "" and "Split strings" not in out.err and "%" not in out.err
    assert not [r for r in caplog.records if r.name.startswith("bm25s") and r.levelno < logging.WARNING]


def _chunks(sizes):
    return [Chunk(i, 10 * i, 10 * i + 5, f"c{i}", None, n) for i, n in enumerate(sizes)]


def test_selection_by_count_by_budget_and_room():
    ranked = list(reversed(_chunks([50, 40, 30, 20, 10])))  # best first: 4, 3, 2, 1, 0
    sel, used = select_chunks(ranked, room=1000, sep_tokens=2, top_k=3)
    assert [c.index for c in sel] == [4, 3, 2] and used == 10 + 20 + 30 + 2 * 2
    sel, used = select_chunks(ranked, room=1000, sep_tokens=2, budget_tokens=65)
    assert [c.index for c in sel] == [4, 3, 2] and used == 64
    sel, _ = select_chunks(ranked, room=33, sep_tokens=2, top_k=5)
    assert [c.index for c in sel] == [4, 3], "never beyond the window"
    assert [c.index for c in order_chunks(sel, "document")] == [3, 4]
    assert [c.index for c in order_chunks(sel, "score")] == [4, 3]


def test_arm_retrieve_matches_build_and_reports_figures(generator, tmp_path):
    samples = make_haystack(seed=1, language="en", tokens=3000, n_questions=3)
    rag = {"chunk_size": 64, "chunk_overlap": 8, "top_k": 3, "order": "score", "recall_at": [1, 3, 5]}
    arm = build_rag_arm(generator, rag, {"kind": "bm25"}, {"kind": "tokens"}, {"kind": "none"}, tmp_path)
    for s in samples:
        meta = arm.retrieve(s)
        prompt = arm.build(s)
        # measured each time, in wall and in process CPU seconds: this question's query embedding, search and rerank
        timing = ("retrieval_s", "retrieval_cpu_s")
        assert all(meta[t] > 0 and prompt.meta[t] > 0 for t in timing)
        assert {k: v for k, v in meta.items() if k not in timing} == {
            k: v for k, v in prompt.meta.items() if k not in timing}
        assert set(meta) >= {"n_chunks", "retrieved", "context_tokens", "retrieved_tokens", "evidence_recall",
                             "evidence_in_prompt", "distractors_retrieved", "first_evidence_rank"}
        assert len(meta["retrieved"]) == 3 and [r["rank"] for r in meta["retrieved"]] == [1, 2, 3]
        texts = [s.context[r["start"]:r["end"]] for r in meta["retrieved"]]
        positions = [prompt.user.index(t) for t in texts]
        assert positions == sorted(positions), "order=score puts the best chunk first"
        assert meta["retrieved_tokens"] <= meta["context_tokens"]
        if meta["first_evidence_rank"] == 1:
            assert meta["evidence_recall"]["1"] > 0
    budget = build_rag_arm(generator, {**rag, "budget_tokens": 200}, {"kind": "bm25"}, None, None, tmp_path)
    meta = budget.retrieve(samples[0])
    assert 200 - 66 < meta["context_tokens"] <= 200 and len(meta["retrieved"]) >= 3


def test_reranker_reorders_candidates_by_cross_encoder_scores(generator, tmp_path):
    import torch

    from llm.bundled import bundled_path
    from rag.rerank import build_reranker

    torch.manual_seed(0)  # MiniLM has no trained cross-encoder head: a real model with a fresh head
    reranker = build_reranker({"kind": "cross_encoder", "model": str(bundled_path("all-MiniLM-L6-v2")),
                               "candidates": 4})
    texts = ["the mill by the river", "a red bell tower", "salted eels at the market", "the stone bridge", "tail"]
    ranked = [(0, 5.0), (1, 4.0), (2, 3.0), (3, 2.0), (4, 1.0)]
    out = reranker.rerank("where is the mill", ranked, texts)
    scores = reranker.scorer.score("where is the mill", texts[:4])
    assert [i for i, _ in out[:4]] == sorted(range(4), key=lambda j: -scores[j])
    assert out[4] == (4, 1.0), "beyond the candidates the first-stage order stays"
    with pytest.raises(ValueError, match="reranker.kind"):
        build_reranker({"kind": "magic", "model": "x"})
    with pytest.raises(FileNotFoundError, match="reranker.model"):
        build_reranker({"kind": "cross_encoder", "model": "cross-encoder/ms-marco-MiniLM-L-6-v2"})


def test_llamaindex_pipeline_and_arm_retrieve_the_same(generator, minilm, monkeypatch):
    import tiktoken

    from rag.llamaindex_pipeline import LlamaIndexPipeline

    def forbidden(*args, **kwargs):
        raise AssertionError("tiktoken must not be used")

    monkeypatch.setattr(tiktoken, "get_encoding", forbidden)
    monkeypatch.setattr(tiktoken, "encoding_for_model", forbidden)
    samples = make_haystack(seed=3, language="en", tokens=6000, n_questions=3)
    pipe = LlamaIndexPipeline(minilm, generator.tokenizer, chunk_size=256, chunk_overlap=20, top_k=2)
    pipe.index(samples[0].context)
    arm = build_rag_arm(generator, {"chunk_size": 256, "chunk_overlap": 20, "top_k": 2, "order": "score"}, MINILM,
                        {"kind": "llamaindex"}, None, None)
    for s in samples:
        theirs = [(h.start, h.end) for h in pipe.retrieve(s.question)]
        ours = [(r["start"], r["end"]) for r in arm.retrieve(s)["retrieved"]]
        assert theirs == ours


def test_hydra_config_groups_build_an_arm(generator, tmp_path):
    from conftest import compose
    from omegaconf import OmegaConf

    for overrides in (["retriever=hybrid", "chunker=sentence"], ["retriever=bm25", "rag.budget_tokens=300"],
                      ["chunker=llamaindex", "rag.chunk_size=1024", "rag.chunk_overlap=20", "rag.top_k=2"]):
        cfg = OmegaConf.to_container(compose(overrides), resolve=True)
        arm = build_rag_arm(generator, cfg["rag"], cfg["retriever"], cfg["chunker"], cfg["reranker"], tmp_path)
        meta = arm.retrieve(make_haystack(seed=0, language="en", tokens=2000, n_questions=1)[0])
        assert meta["n_chunks"] >= 1 and meta["evidence_recall"] is not None
    for name in ("bge_m3", "bge_large_en", "bge_large_zh", "openai", "minilm"):
        cfg = OmegaConf.to_container(compose([f"retriever={name}"]), resolve=True)
        assert cfg["retriever"]["kind"] == "dense" and cfg["retriever"]["model"]
    with pytest.raises(ValueError, match="rag: unknown keys"):
        build_rag_arm(generator, {"chunk_size": 64, "topk": 3}, {"kind": "bm25"})


def test_deep_dense_ranking_equals_faiss(minilm, monkeypatch):
    from rag.retrievers import DenseIndex

    texts = [f"record {i}: the {w} tower holds {i % 7} bells" for i, w in enumerate(["old", "tall", "red"] * 15)]
    index = DenseRetriever(minilm).index(texts, "en")
    shallow = index.search("the red tower with 3 bells", 20)
    monkeypatch.setattr(DenseIndex, "DEEP", 5)  # force the matrix-product path
    deep = index.search("the red tower with 3 bells", 20)
    assert [i for i, _ in deep] == [i for i, _ in shallow]
    assert np.allclose([s for _, s in deep], [s for _, s in shallow], atol=1e-5)


def test_sparse_lexical_scores():
    from rag.indexes import SparseLexicalIndex

    index = SparseLexicalIndex([{"mill": 0.5, "river": 0.2}, {"tower": 0.9}, {}])
    assert np.allclose(index.scores({"mill": 2.0, "tower": 1.0}), [1.0, 0.9, 0.0])


def test_search_reaches_as_deep_as_the_rerankers_candidates(generator, tmp_path):
    """conf/reranker/*.yaml rerank 20 candidates: the first stage must return 20, not max(top_k, recall_at)."""
    import torch

    from llm.bundled import bundled_path
    from rag.rerank import Reranker, build_reranker

    torch.manual_seed(0)
    real = build_reranker({"kind": "cross_encoder", "model": str(bundled_path("all-MiniLM-L6-v2")), "candidates": 20})
    seen = []

    class Watched(Reranker):  # the real cross-encoder reranker, counting what it is handed
        def rerank(self, query, ranked, texts):
            seen.append(len(ranked))
            return super().rerank(query, ranked, texts)

    reranker = Watched(real.scorer, real.candidates, real.name)
    samples = make_haystack(seed=5, language="en", tokens=4000, n_questions=1)
    arm = build_rag_arm(generator, {"chunk_size": 64, "chunk_overlap": 0, "top_k": 2, "recall_at": [1, 3, 5, 10]},
                        {"kind": "bm25"}, None, None, tmp_path)
    arm.reranker = reranker
    meta = arm.retrieve(samples[0])
    # the arm's one untimed warm-up reranks a search of 2 first; the timed search then hands the reranker its 20
    assert len(arm.warmups) == 1 and meta["n_chunks"] > 20 and seen == [2, 20]
