import pytest

from eval.benchmarks.synthetic import make_haystack
from eval.evidence import Region, covered_fraction, recall_at
from eval.sample import Document, Span
from rag.arm import RagArm, RagConfig
from rag.chunking import chunk_by_tokens, token_windows
from rag.retrievers import BM25Retriever, DenseRetriever


def test_token_windows_cover_everything_with_overlap():
    assert token_windows(10, 4, 1) == [(0, 4), (3, 7), (6, 10)]
    assert token_windows(3, 4, 1) == [(0, 3)]
    for n, size, ov in [(1000, 128, 16), (129, 128, 0), (5, 2, 1)]:
        w = token_windows(n, size, ov)
        assert w[0][0] == 0 and w[-1][1] == n
        assert all(b - a <= size for a, b in w)
        assert all(w[i + 1][0] == w[i][1] - ov for i in range(len(w) - 1))
    with pytest.raises(ValueError, match="chunk_overlap"):
        token_windows(10, 4, 4)


def test_chunks_are_exact_spans_and_respect_documents(tokenizer):
    text = "Alpha beta gamma. " * 40 + "||" + "Delta epsilon zeta. " * 40
    cut = text.index("||")
    docs = [Document("d1", 0, cut), Document("d2", cut, len(text))]
    chunks = chunk_by_tokens(text, tokenizer, 32, 8, docs)
    assert all(text[c.start:c.end] == c.text for c in chunks)
    assert all((c.end <= cut) if c.doc_id == "d1" else (c.start >= cut) for c in chunks)
    assert {c.doc_id for c in chunks} == {"d1", "d2"}
    assert [c.index for c in chunks] == list(range(len(chunks)))


def test_evidence_coverage_and_recall():
    span = Span(100, 200)
    assert covered_fraction(span, [Region(0, 150)]) == 0.5
    assert covered_fraction(span, [Region(120, 160), Region(150, 180), Region(300, 400)]) == 0.6
    ranked = [Region(0, 50), Region(90, 210), Region(500, 600, "doc")]
    assert recall_at([span], ranked, [1, 3], 0.6) == {"1": 0.0, "3": 1.0}
    assert recall_at([Span(doc_id="doc")], ranked, [1, 2, 3], 0.6) == {"1": 0.0, "2": 0.0, "3": 1.0}
    assert recall_at([], ranked, [1], 0.6) is None


@pytest.mark.parametrize("language", ["en", "zh"])
def test_bm25_retrieves_planted_needle_at_1(tokenizer, language):
    samples = make_haystack(seed=2, language=language, tokens=8000, n_questions=6, two_hop_share=0.0,
                            confusing_share=0.0)
    chunks = chunk_by_tokens(samples[0].context, tokenizer, 128, 16)
    index = BM25Retriever().index([c.text for c in chunks], language)
    hits = 0
    for s in samples:
        best = chunks[index.search(s.question, 1)[0][0]]
        hits += recall_at(s.evidence, [Region(best.start, best.end)], [1], 0.6)["1"] == 1.0
    assert hits == len(samples), f"BM25 found {hits}/{len(samples)} needles at n=1"


def test_dense_minilm_retrieves_needles(tokenizer, minilm):
    samples = make_haystack(seed=2, language="en", tokens=4000, n_questions=4, two_hop_share=0.0, confusing_share=0.0)
    chunks = chunk_by_tokens(samples[0].context, tokenizer, 128, 16)
    index = DenseRetriever(minilm).index([c.text for c in chunks], "en")
    found = 0
    for s in samples:
        top = [Region(chunks[i].start, chunks[i].end) for i, _ in index.search(s.question, 3)]
        found += recall_at(s.evidence, top, [3], 0.6)["3"] == 1.0
    assert found >= 3, f"MiniLM found {found}/4 needles in its top 3"


def test_rag_arm_builds_prompt_in_document_order(generator):
    samples = make_haystack(seed=0, language="en", tokens=3000, n_questions=3)
    arm = RagArm(generator, BM25Retriever(), RagConfig(chunk_size=64, chunk_overlap=8, top_k=3))
    for s in samples:
        p = arm.build(s)
        starts = [r["start"] for r in sorted(p.meta["retrieved"], key=lambda r: r["start"])]
        positions = [p.user.index(s.context[r["start"]:r["end"]])
                     for r in sorted(p.meta["retrieved"], key=lambda r: r["start"])]
        assert positions == sorted(positions) and len(starts) == 3
        assert set(p.meta["evidence_recall"]) == {"1", "3", "5", "10"}
        assert p.user.endswith(f"Question: {s.question}\nAnswer:")
        assert p.meta["context_tokens"] <= 3 * (64 + 2)
    assert arm.index_builds == 1, "questions sharing a haystack share its index"
    with pytest.raises(ValueError, match="allowed: document, score"):
        RagConfig(order="random")
    with pytest.raises(ValueError, match="rag.top_k"):
        RagConfig(top_k=0)
    with pytest.raises(ValueError, match="rag.budget_tokens"):
        RagConfig(budget_tokens=0)
    assert RagConfig(top_k=None, budget_tokens=500).budget_tokens == 500


def test_rag_run_records_retrieval_time_and_measured_index_time(tmp_path):
    """Retrieval-only BM25 run: each record's retrieval_s (search time) and metrics.json's
    index_seconds (chunk + index build time, measured) and document count (issue 14 item 4)."""
    import json

    from experiments.run import run
    from tests.conftest import compose

    cfg = compose(["benchmark.languages=[en]", "benchmark.levels=[400,800]", "benchmark.questions_per_haystack=2",
                   "arm=rag", "retriever=bm25", "generator=none", "rag.chunk_size=64",
                   f"run.cache_dir={tmp_path / 'c'}", "run.progress=false"])
    metrics = run(cfg, tmp_path)
    records = [json.loads(x) for x in (tmp_path / "records.jsonl").read_text().splitlines()]
    assert len(records) == 4 and all(r["status"] == "retrieved" for r in records)
    assert all(r["retrieval_s"] > 0 for r in records)
    # what a router reads: the question's text, and how much of it the chunks in the prompt hold
    assert all(r["question"].endswith("?") and 0.0 <= r["retrieved_overlap"] <= 1.0 for r in records)
    assert max(r["retrieved_overlap"] for r in records) > 0
    assert metrics["index_builds"] == 2 and metrics["n_documents"] == 2
    assert metrics["index_seconds"] > 0
    # a second run loads the cached index, and still reports what building it took
    again = tmp_path / "again"
    again.mkdir()
    assert run(cfg, again)["index_seconds"] == pytest.approx(metrics["index_seconds"], abs=2e-4)
