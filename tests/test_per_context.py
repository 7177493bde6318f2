"""Work over a whole context is done once per context, not once per question: long context tokenizes a folder
once for all the questions asked over it, RAG hashes it once, the corpus loader counts its tokens once; and what
each question gets is what it got when every question did that work itself."""

from __future__ import annotations

import json
import random

import pytest

import eval.benchmarks.corpus as corpus
from eval.benchmarks import load_benchmark
from eval.evidence import Region
from eval.per_context import PerContext
from eval.sample import Document
from longctx.arm import LongContextArm, LongContextConfig, _DocumentIndex

WORDS = "ledger harbor copper orchard lantern quarry beacon summit glacier canyon harvest river stone vault".split()


class SmallWindow:
    """The real generator seen through a smaller window, counting how often the context is tokenized."""

    def __init__(self, gen, window):
        self.gen, self.context_window, self.model_id = gen, window, gen.model_id
        self.tokenizer, self.offsets_calls = self, 0

    def count(self, text):
        return self.gen.tokenizer.count(text)

    def offsets(self, text):
        self.offsets_calls += 1
        return self.gen.tokenizer.offsets(text)

    def prompt_tokens(self, prompt):
        return self.gen.prompt_tokens(prompt)


@pytest.fixture(scope="module")
def folder_samples(tmp_path_factory):
    """12 documents and 12 questions that name none: every question is asked over the whole folder."""
    root = tmp_path_factory.mktemp("folder")
    docs, rows = root / "docs", []
    docs.mkdir()
    for i in range(12):
        rng = random.Random(i)
        fact = f"The access code of ledger {i} is {rng.choice(WORDS)} {1000 + i}."
        words = " ".join(rng.choice(WORDS) for _ in range(120 + 40 * (i % 3)))
        (docs / f"doc{i:02d}.txt").write_text(f"{words}. {fact} {words}.", encoding="utf-8")
        rows.append({"id": f"q{i:02d}", "question": f"What is the access code of ledger {i}?",
                     "answers": [fact.split(" is ")[1].rstrip(".")], "evidence": [fact]})
    questions = root / "questions.jsonl"
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    calls = []
    real = corpus.approx_tokens
    corpus.approx_tokens = lambda text: calls.append(len(text)) or real(text)
    try:
        samples = load_benchmark({"name": "corpus", "path": str(docs), "questions": str(questions),
                                  "cache_dir": None}).samples
    finally:
        corpus.approx_tokens = real
    return samples, calls


def test_the_corpus_loader_counts_a_folder_once_for_all_its_questions(folder_samples):
    samples, calls = folder_samples
    assert len(samples) == 12 and len({id(s.context) for s in samples}) == 1  # one context object, shared
    assert calls == [len(samples[0].context)]
    assert {s.metadata["approx_tokens"] for s in samples} == {corpus.approx_tokens(samples[0].context)}


@pytest.mark.parametrize("policy", ["middle", "drop_documents", "head"])
def test_long_context_tokenizes_a_folder_once_and_builds_what_each_question_built_alone(generator, folder_samples,
                                                                                       policy):
    samples, _ = folder_samples
    cfg = LongContextConfig(truncation=policy)
    shared = SmallWindow(generator, 1024)
    arm = LongContextArm(shared, cfg)
    together = [arm.build(s) for s in samples]
    assert shared.offsets_calls == 1 and arm.tokens.tokenized == 1
    for s, got in zip(samples, together, strict=True):
        alone = LongContextArm(SmallWindow(generator, 1024), cfg).build(s)  # tokenizes the folder for itself
        assert got.user == alone.user and got.meta == alone.meta
    assert all(p.meta["truncated"] for p in together) and any(p.meta["evidence_retained"] == 0 for p in together)
    assert any(p.meta["evidence_retained"] == 1 for p in together)


def _regions_one_by_one(kept, documents):
    """Every document looked at for every kept region (what the index must agree with)."""
    regions = []
    for a, b in kept:
        for d in documents:
            lo, hi = max(a, d.start), min(b, d.end)
            if hi > lo:
                regions.append(Region(lo, hi, d.doc_id))
        regions.append(Region(a, b))
    return regions


def test_document_regions_by_bisection_match_looking_at_every_document():
    rng = random.Random(7)
    for trial in range(300):
        at, documents = rng.randint(0, 5), []
        for i in range(rng.randint(0, 12)):
            length = rng.randint(0, 40)
            documents.append(Document(f"d{i}", at, at + length))
            at += length + rng.randint(0, 3)
        if trial % 5 == 0 and len(documents) > 2:  # overlapping documents: every one is looked at
            documents.append(Document("over", documents[0].start, documents[-1].end))
        cuts = sorted(rng.randint(0, at + 5) for _ in range(2 * rng.randint(0, 3)))
        kept = [(cuts[i], cuts[i + 1]) for i in range(0, len(cuts), 2)]
        got = _DocumentIndex(documents).regions(kept)
        assert sorted(got, key=repr) == sorted(_regions_one_by_one(kept, documents), key=repr), (documents, kept)


def test_rag_hashes_a_folder_once_for_all_its_questions(generator, folder_samples, tmp_path):
    from rag.arm import RagArm, RagConfig
    from rag.retrievers import BM25Retriever

    samples, _ = folder_samples
    arm = RagArm(generator, BM25Retriever(), RagConfig(top_k=2, cache=False))
    metas = [arm.retrieve(s) for s in samples]
    assert arm._keys.computed == 1 and arm.index_builds == 1 and arm._documents.computed == 1
    fresh = [RagArm(generator, BM25Retriever(), RagConfig(top_k=2, cache=False)).retrieve(s) for s in samples[:3]]
    drop = ("retrieval_s", "retrieval_cpu_s")
    assert [{k: v for k, v in m.items() if k not in drop} for m in metas[:3]] == \
        [{k: v for k, v in m.items() if k not in drop} for m in fresh]
    assert sum(m["evidence_recall"]["10"] for m in metas) >= 10  # each question's own document is found


def test_per_context_keeps_the_latest_contexts_and_tells_equal_texts_and_other_documents_apart():
    memo: PerContext[int] = PerContext(size=2)
    a, docs = "x" * 1000, [1]
    assert memo.get(a, lambda: 1, docs) == 1 and memo.get("".join(["x"] * 1000), lambda: 2, docs) == 1  # equal text
    assert memo.get(a, lambda: 3, [1]) == 3  # another documents list: computed for it
    memo.get("y", lambda: 4)
    assert memo.get(a, lambda: 5, docs) == 5 and memo.computed == 4  # the oldest was let go
    with pytest.raises(ValueError, match="at least one"):
        PerContext(size=0)


def test_a_verbatim_quote_is_found_through_the_index_where_a_scan_finds_it():
    from eval.align import TokenIndex, align

    rng = random.Random(3)
    alphabet = ["vault", "Vault", "code", "4417", "the", "金库", "密码", "naïve", "x_y", ",", ".", " ", "  ", "\n"]
    for _ in range(400):
        text = "".join(rng.choice(alphabet) + rng.choice(["", " "]) for _ in range(rng.randint(0, 60)))
        index = TokenIndex(text)
        for _ in range(5):
            if text and rng.random() < 0.7:  # a piece of the text, cut anywhere (mid-word too)
                a = rng.randrange(len(text))
                quote = text[a:a + rng.randint(1, 40)]
            else:
                quote = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6)))
            got = align(quote, index)
            at = text.find(quote.strip())
            if quote.strip() and at >= 0:
                assert got is not None and (got.start, got.method) == (at, "exact"), (text, quote)
            else:
                assert got is None or got.method != "exact", (text, quote)
