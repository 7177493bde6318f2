"""retriever=oracle: the gold evidence's chunks through the same arm, template and budget; a clear stop without
evidence."""

import pytest

from eval.benchmarks.synthetic import make_haystack
from eval.evidence import Region, present_fraction
from rag.arm import RagArm, RagConfig
from rag.retrievers import BM25Retriever, OracleRetriever, build_retriever


def test_oracle_gives_the_evidence_chunks_in_document_order_within_top_k(generator):
    samples = make_haystack(seed=3, language="en", tokens=3000, n_questions=6, two_hop_share=0.5)
    oracle = RagArm(generator, build_retriever({"kind": "oracle", "name": "oracle"}),
                    RagConfig(chunk_size=64, chunk_overlap=8, top_k=4))
    bm25 = RagArm(generator, BM25Retriever(), RagConfig(chunk_size=64, chunk_overlap=8, top_k=4))
    for s in samples:
        p, q = oracle.build(s), bm25.build(s)
        meta = p.meta
        assert meta["evidence_in_prompt"] == 1.0 and meta["evidence_recall"]["5"] == 1.0
        assert meta["first_evidence_rank"] == 1 and meta["evidence_in_top_k"] == 1.0
        chunks = meta["retrieved"]
        assert 1 <= len(chunks) <= 4
        # only chunks that hold evidence, and the prompt holds them in document order
        assert all(present_fraction(s.evidence, [Region(c["start"], c["end"])], 0.01) for c in chunks)
        positions = [p.user.index(c["text"]) for c in sorted(chunks, key=lambda c: c["start"])]
        assert positions == sorted(positions)
        # the same template around a different context
        assert p.user.endswith(q.user[q.user.rindex("Question:"):])
        assert p.meta["context_tokens"] <= 4 * (64 + 2)


def test_oracle_keeps_the_best_covering_chunks_when_evidence_spans_more_than_top_k(generator):
    samples = make_haystack(seed=5, language="en", tokens=3000, n_questions=3, two_hop_share=1.0)
    arm = RagArm(generator, OracleRetriever(), RagConfig(chunk_size=64, chunk_overlap=8, top_k=1))
    for s in samples:
        meta = arm.build(s).meta
        assert len(meta["retrieved"]) == 1
        assert meta["evidence_in_prompt"] in (0.5, 1.0)  # two needles: one chunk holds one of them (or both)


def test_oracle_on_a_benchmark_without_evidence_stops_with_one_line(generator):
    samples = [s.__class__(**{**s.__dict__, "evidence": []})
               for s in make_haystack(seed=1, language="en", tokens=1000, n_questions=2)]
    arm = RagArm(generator, OracleRetriever(), RagConfig(chunk_size=64, chunk_overlap=8, top_k=2))
    with pytest.raises(ValueError, match="retriever=oracle needs gold evidence .* has none for any of its 2 samples"):
        arm.check(samples)
    arm.check(make_haystack(seed=1, language="en", tokens=1000, n_questions=2))  # with evidence: no complaint
