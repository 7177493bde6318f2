"""On-disk caches: content-addressed, checksummed, atomic; sweeps reuse chunks and embeddings."""

import multiprocessing as mp

import numpy as np
import pytest

from eval.benchmarks.synthetic import make_haystack
from eval.storage import DiskCache
from rag.build import build_rag_arm
from rag.cache_keys import content_key, dump_array, load_array

MINILM = {"name": "minilm", "kind": "dense", "backend": "sentence_transformers", "model": "bundled:all-MiniLM-L6-v2",
          "index": "flat", "batch_size": 64, "normalize": True, "device": "cpu", "query_instruction": "",
          "passage_instruction": ""}
RAG = {"chunk_size": 96, "chunk_overlap": 8, "top_k": 2, "order": "document"}


def test_checksum_detects_corruption_and_recomputes(tmp_path):
    cache = DiskCache(tmp_path)
    calls = []

    def compute():
        calls.append(1)
        return np.arange(6, dtype=np.float32).reshape(2, 3)

    key = content_key("x", 1)
    a = cache.get_or_compute("embeddings", key, "npy", compute, dump_array, load_array)
    b = cache.get_or_compute("embeddings", key, "npy", compute, dump_array, load_array)
    assert np.array_equal(a, b) and len(calls) == 1
    path = next((tmp_path / "embeddings").rglob("*.npy"))
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 0xFF  # flip one byte of the payload
    path.write_bytes(bytes(raw))
    c = cache.get_or_compute("embeddings", key, "npy", compute, dump_array, load_array)
    assert np.array_equal(a, c) and len(calls) == 2
    assert cache.summary()["embeddings"] == {"hits": 1, "misses": 2, "corrupt": 1}
    path.write_bytes(path.read_bytes()[:20])  # truncated by a crash
    cache.get_or_compute("embeddings", key, "npy", compute, dump_array, load_array)
    assert len(calls) == 3
    assert not list(tmp_path.rglob("*.tmp")), "no temporary files left behind"


def test_arrays_never_unpickle():
    obj = np.array([{"a": 1}], dtype=object)
    with pytest.raises(ValueError):
        dump_array(obj)  # object arrays would need pickle: refused


def _writer(root, n):
    cache = DiskCache(root)
    for i in range(n):
        cache.write("chunks", content_key("same"), "json", (b"[%d]" % (i % 3)) * 2000)


def test_parallel_writers_leave_a_valid_entry(tmp_path):
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(tmp_path, 40)) for _ in range(2)]
    for p in procs:
        p.start()
    cache = DiskCache(tmp_path)
    seen = 0
    while any(p.is_alive() for p in procs):
        payload = cache.read("chunks", content_key("same"), "json")
        seen += payload is not None
        assert payload is None or payload in {(b"[%d]" % i) * 2000 for i in range(3)}
    for p in procs:
        p.join()
        assert p.exitcode == 0
    assert cache.read("chunks", content_key("same"), "json") is not None
    assert cache.summary().get("chunks", {}).get("corrupt", 0) == 0


def test_topk_and_order_sweep_never_rechunks_or_reembeds(generator, minilm, tmp_path):
    samples = make_haystack(seed=4, language="en", tokens=3000, n_questions=2)
    first = build_rag_arm(generator, RAG, MINILM, {"kind": "tokens"}, {"kind": "none"}, tmp_path)
    base = [first.retrieve(s) for s in samples]
    assert first.cache_stats()["chunks"]["misses"] == 1 and first.cache_stats()["embeddings"]["misses"] == 1
    for top_k, order, budget in [(1, "score", None), (4, "document", None), (2, "score", 300)]:
        arm = build_rag_arm(generator, {**RAG, "top_k": top_k, "order": order, "budget_tokens": budget}, MINILM,
                            {"kind": "tokens"}, {"kind": "none"}, tmp_path)
        metas = [arm.retrieve(s) for s in samples]
        stats = arm.cache_stats()
        assert stats["chunks"] == {"hits": 1, "misses": 0, "corrupt": 0}
        assert stats["embeddings"] == {"hits": 1, "misses": 0, "corrupt": 0}
        assert [m["evidence_recall"] for m in metas] == [m["evidence_recall"] for m in base]
    # a new chunk size re-chunks and re-embeds, once
    arm = build_rag_arm(generator, {**RAG, "chunk_size": 64}, MINILM, {"kind": "tokens"}, {"kind": "none"}, tmp_path)
    for s in samples:
        arm.retrieve(s)
    assert arm.cache_stats()["embeddings"]["misses"] == 1 and arm.cache_stats()["chunks"]["misses"] == 1
    assert len(list((tmp_path / "rag" / "embeddings").rglob("*.npy"))) == 2


def test_cache_off_writes_nothing(generator, tmp_path):
    arm = build_rag_arm(generator, {**RAG, "cache": False}, {"kind": "bm25"}, None, None, tmp_path)
    arm.retrieve(make_haystack(seed=4, language="en", tokens=1500, n_questions=1)[0])
    assert not (tmp_path / "rag").exists() and arm.cache_stats()["disk"] is False


def test_cached_chunks_equal_fresh_ones(generator, tmp_path):
    s = make_haystack(seed=6, language="zh", tokens=2000, n_questions=1)[0]
    a = build_rag_arm(generator, RAG, {"kind": "bm25"}, {"kind": "sentence"}, None, tmp_path)
    b = build_rag_arm(generator, RAG, {"kind": "bm25"}, {"kind": "sentence"}, None, tmp_path)
    assert a.chunks_for(s) == b.chunks_for(s)
    assert b.cache_stats()["chunks"]["hits"] == 1
