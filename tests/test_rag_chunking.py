"""Chunkers: exact char spans, document boundaries, whole sentences (English and Chinese)."""

import re

import pytest

from eval.benchmarks.synthetic import make_haystack
from eval.sample import Document
from rag.chunking import ChunkerConfig, chunk_by_sentences, make_chunks, split_sentences

EN = ("The harbour of Vellmar froze in the long night. Traders left for the south! Did the mayor stay? "
      "Nobody knows, said the archivist. ") * 30
ZH = ("沅砚堡的集市上常见蜂蜡蜡烛和黑麦粉。来到沅砚堡的旅人常常谈起那座泥泞的石桥！"
      "谁修了钟楼？没有人记得；档案员这样说。") * 30


def _sentence_spans(text):
    spans, start = [], 0
    for s in split_sentences(text):
        spans.append((start, start + len(s.rstrip())))
        start += len(s)
    return spans


def test_split_sentences_is_lossless_and_bilingual():
    for text in (EN, ZH, "no terminator at all", "3.5 percent. Next"):
        assert "".join(split_sentences(text)) == text
    assert split_sentences("Hi there. Bye!") == ["Hi there. ", "Bye!"]
    assert split_sentences("甲。乙！丙") == ["甲。", "乙！", "丙"]
    assert split_sentences("It costs 3.5 coins. Fine") == ["It costs 3.5 coins. ", "Fine"]


@pytest.mark.parametrize("kind", ["sentence", "llamaindex"])
@pytest.mark.parametrize("text", [EN, ZH], ids=["en", "zh"])
def test_sentence_chunks_are_exact_spans_within_size(tokenizer, kind, text):
    chunks = make_chunks(text, tokenizer, ChunkerConfig(kind, 48, 12))
    assert len(chunks) > 5
    assert all(text[c.start:c.end] == c.text for c in chunks)
    assert [c.start for c in chunks] == sorted(c.start for c in chunks)
    assert all(c.n_tokens <= 48 + 2 for c in chunks)  # joining splits may merge a token boundary or two
    assert chunks[0].start == 0 and chunks[-1].end == len(text.rstrip())
    covered = sorted((c.start, c.end) for c in chunks)
    assert all(b[0] <= a[1] + 1 for a, b in zip(covered, covered[1:], strict=False)), "no text left out between chunks"


@pytest.mark.parametrize("text", [EN, ZH], ids=["en", "zh"])
def test_sentence_chunker_never_cuts_a_sentence(tokenizer, text):
    chunks = make_chunks(text, tokenizer, ChunkerConfig("sentence", 48, 12))
    sentences = _sentence_spans(text)
    starts = {a for a, _ in sentences}
    ends = {b for _, b in sentences}
    for c in chunks:
        assert c.start in starts, f"chunk starts mid-sentence: {c.text[:30]!r}"
        assert c.end in ends, f"chunk ends mid-sentence: {c.text[-30:]!r}"
    # the token chunker, by contrast, cuts sentences
    cuts = make_chunks(text, tokenizer, ChunkerConfig("tokens", 48, 12))
    assert any(c.end not in ends for c in cuts)


def test_sentence_longer_than_size_is_split(tokenizer):
    long = "word " * 300 + "end. Short one. "
    chunks = make_chunks(long, tokenizer, ChunkerConfig("sentence", 64, 0))
    assert len(chunks) >= 5 and all(c.n_tokens <= 66 for c in chunks)
    assert all(long[c.start:c.end] == c.text for c in chunks)


def test_repeated_text_gets_true_positions(tokenizer):
    text = "Alpha beta gamma. " * 60
    chunks = make_chunks(text, tokenizer, ChunkerConfig("sentence", 32, 8))
    starts = [c.start for c in chunks]
    steps = {b - a for a, b in zip(starts, starts[1:], strict=False)}
    assert len(steps) == 1 and steps.pop() > 0, "identical chunks still march through the text evenly"
    assert chunks[-1].end == len(text.rstrip())


@pytest.mark.parametrize("kind", ["tokens", "sentence", "llamaindex"])
def test_chunks_never_span_documents(tokenizer, kind):
    a, b = EN[:1500], ZH[:600]
    text = a + "\n" + b
    docs = [Document("doc-a", 0, len(a)), Document("doc-b", len(a) + 1, len(text))]
    chunks = make_chunks(text, tokenizer, ChunkerConfig(kind, 40, 8), docs)
    assert {c.doc_id for c in chunks} == {"doc-a", "doc-b"}
    for c in chunks:
        d = docs[0] if c.doc_id == "doc-a" else docs[1]
        assert d.start <= c.start < c.end <= d.end
        assert text[c.start:c.end] == c.text
    assert [c.index for c in chunks] == list(range(len(chunks)))


def test_llamaindex_chunker_matches_llamaindex_nodes(tokenizer):
    from llama_index.core import Document as LIDocument
    from llama_index.core.node_parser import SentenceSplitter

    from rag.chunking import _hf_token_ids

    context = make_haystack(seed=5, language="en", tokens=3000, n_questions=1)[0].context
    ours = make_chunks(context, tokenizer, ChunkerConfig("llamaindex", 128, 20))
    splitter = SentenceSplitter(chunk_size=128, chunk_overlap=20, tokenizer=_hf_token_ids(tokenizer))
    nodes = splitter.get_nodes_from_documents([LIDocument(text=context)])
    assert [c.text for c in ours] == [n.get_content() for n in nodes]
    assert [(c.start, c.end) for c in ours] == [(n.start_char_idx, n.end_char_idx) for n in nodes]


def test_chunker_config_errors_name_the_field():
    with pytest.raises(ValueError, match="chunker.kind"):
        ChunkerConfig("paragraphs", 10, 0)
    with pytest.raises(ValueError, match="rag.chunk_overlap"):
        ChunkerConfig("sentence", 10, 10)


def test_a_new_chunker_is_one_registry_entry(tokenizer, monkeypatch):
    """A chunker of paragraphs, registered in CHUNKERS alone, is accepted by the config and used by make_chunks."""
    from rag import chunking

    def by_paragraph(text, tokenizer, size, overlap, documents=()):
        spans = [(m.start(), m.end()) for m in re.finditer(r"[^\n]+", text)]
        return [chunking.Chunk(i, a, b, text[a:b], None, tokenizer.count(text[a:b])) for i, (a, b) in enumerate(spans)]

    with pytest.raises(ValueError, match="chunker.kind='paragraphs'; allowed: tokens, sentence, llamaindex"):
        ChunkerConfig("paragraphs", 10, 0)
    monkeypatch.setitem(chunking.CHUNKERS._entries, "paragraphs", by_paragraph)
    text = "First paragraph here.\nSecond one, longer than the first.\nThird."
    chunks = make_chunks(text, tokenizer, ChunkerConfig("paragraphs", 10, 0))
    assert [c.text for c in chunks] == text.split("\n")
    assert all(text[c.start:c.end] == c.text for c in chunks)


def test_no_tiktoken_download(tokenizer, monkeypatch):
    import tiktoken

    def forbidden(*args, **kwargs):
        raise AssertionError("tiktoken must not be used: it downloads its files at run time")

    monkeypatch.setattr(tiktoken, "get_encoding", forbidden)
    monkeypatch.setattr(tiktoken, "encoding_for_model", forbidden)
    chunks = chunk_by_sentences(EN, tokenizer, 64, 8, llamaindex_defaults=True)
    assert chunks and re.search(r"Vellmar", chunks[0].text)
