"""Chunkers: turn a context into chunks that are exact char spans of it.

Three kinds (the `chunker` config group; sizes are `rag.chunk_size` / `rag.chunk_overlap`, counted
in tokens of the generator's tokenizer):

- `tokens`: fixed windows of `size` tokens, `overlap` shared by neighbours. Our own code: it is a
  plain sliding window over the tokenizer's offset mapping, which gives exact char spans for free
  and is fast on 256k-token contexts. llama-index's TokenTextSplitter splits on whitespace first
  (so it is not a token window for Chinese, which has no spaces) and returns strings, not offsets.
- `sentence`: llama-index's `SentenceSplitter` with the generator's Hugging Face tokenizer and a
  sentence splitter for English and Chinese (punctuation `.!?` followed by space, and `。！？；`),
  so no chunk cuts a sentence unless that sentence alone is longer than `size`. Overlap is made of
  whole sentences (at most `overlap` tokens).
- `llamaindex`: `SentenceSplitter` with llama-index's own defaults (nltk punkt sentences), as the
  LooGLE paper's RAG baseline used (1024-token chunks, 20 overlap): for comparisons with the paper.

Every chunker is document-aware: with several documents (Loong), each document is chunked on its
own, so no chunk spans two documents, and every chunk carries its document id.

llama-index returns chunk strings; we map them back to char offsets exactly by locating the
splitter's own splits (`SentenceSplitter._split`) in the text and following its overlap rule, so
repeated passages still get their true positions. tiktoken is never used: the tokenizer is always
passed in (llama-index's default tokenizer would download a tiktoken file at run time).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from eval.registry import Registry, require
from eval.sample import Document
from llm.base import Tokenizer


@dataclass(frozen=True)
class Chunk:
    index: int  # position in the context (chunks are numbered in document order)
    start: int
    end: int
    text: str
    doc_id: str | None = None
    n_tokens: int = 0


@dataclass(frozen=True)
class ChunkerConfig:
    kind: str = "tokens"
    size: int = 128
    overlap: int = 16

    def __post_init__(self) -> None:
        if self.kind not in CHUNKERS:
            raise ValueError(f"chunker.kind={self.kind!r}; allowed: {', '.join(CHUNKERS.names())}")
        if self.size <= 0:
            raise ValueError(f"rag.chunk_size must be positive, got {self.size}")
        if not 0 <= self.overlap < self.size:
            raise ValueError(f"rag.chunk_overlap must be in [0, chunk_size), got {self.overlap} "
                             f"with chunk_size {self.size}")

    def key(self) -> dict[str, Any]:
        return asdict(self)


def token_windows(n_tokens: int, size: int, overlap: int) -> list[tuple[int, int]]:
    """[start, end) token windows of `size` with `overlap`, covering all tokens."""
    if size <= 0:
        raise ValueError(f"rag.chunk_size must be positive, got {size}")
    if not 0 <= overlap < size:
        raise ValueError(f"rag.chunk_overlap must be in [0, chunk_size), got {overlap} with chunk_size {size}")
    step = size - overlap
    windows, start = [], 0
    while start < n_tokens:
        end = min(start + size, n_tokens)
        windows.append((start, end))
        if end == n_tokens:
            break
        start += step
    return windows


def _parts(text: str, documents: Sequence[Document]) -> list[tuple[int, int, str | None]]:
    return [(d.start, d.end, d.doc_id) for d in documents] or [(0, len(text), None)]


def chunk_by_tokens(text: str, tokenizer: Tokenizer, size: int, overlap: int,
                    documents: Sequence[Document] = ()) -> list[Chunk]:
    chunks: list[Chunk] = []
    for start, end, doc_id in _parts(text, documents):
        offsets = tokenizer.offsets(text[start:end])
        for a, b in token_windows(len(offsets), size, overlap):
            cs, ce = start + offsets[a][0], start + offsets[b - 1][1]
            if ce > cs:
                chunks.append(Chunk(len(chunks), cs, ce, text[cs:ce], doc_id, b - a))
    return chunks


# A sentence ends at . ! ? (then closing quotes/brackets, then whitespace) or at a CJK terminator.
_SENTENCE_END = re.compile(r"[.!?]+[\"'”’)\]]*\s+|[。！？；]+[”’」』）]*\s*|\n\s*")


def split_sentences(text: str) -> list[str]:
    """English and Chinese sentences; they concatenate back to `text` exactly."""
    out, last = [], 0
    for m in _SENTENCE_END.finditer(text):
        if m.end() > last:
            out.append(text[last:m.end()])
            last = m.end()
    if last < len(text):
        out.append(text[last:])
    return out


def _hf_token_ids(tokenizer: Tokenizer) -> Callable[[str], list]:
    """The callable llama-index wants (text -> tokens), from our tokenizer view."""
    hf = getattr(tokenizer, "hf", None)
    if hf is not None:
        return lambda t: hf(t, add_special_tokens=False)["input_ids"]
    return lambda t: [0] * tokenizer.count(t)


def _sentence_splitter(tokenizer: Tokenizer, size: int, overlap: int, llamaindex_defaults: bool):
    SentenceSplitter = require("llama_index.core.node_parser", "chunker.kind=sentence/llamaindex",
                               "make install").SentenceSplitter
    kwargs: dict[str, Any] = {"chunk_size": size, "chunk_overlap": overlap, "tokenizer": _hf_token_ids(tokenizer)}
    if not llamaindex_defaults:
        kwargs["chunking_tokenizer_fn"] = split_sentences
    return SentenceSplitter(**kwargs)


def _locate(piece: str, pieces: Sequence[str], cursor: int = 0) -> list[int]:
    """Start offset of each of `pieces` in `piece`, in order (gaps between them may only be dropped whitespace)."""
    starts = []
    for p in pieces:
        i = piece.find(p, cursor)
        if i < 0:
            raise RuntimeError(f"llama-index split {p[:40]!r} is not a substring of the text at or after {cursor}")
        starts.append(i)
        cursor = i + len(p)
    return starts


def _merge_ranges(tokens: Sequence[int], is_sentence: Sequence[bool], size: int, overlap: int) -> list[tuple[int, int]]:
    """(first, last) split index of each chunk, by the rules of llama-index's `SentenceSplitter._merge`.

    A chunk takes splits while they fit in `size` tokens (a new chunk always takes one). When it closes,
    its trailing splits worth at most `overlap` tokens open the next chunk, and are dropped from the
    front again when the next split would not fit beside them.
    """
    ranges: list[tuple[int, int]] = []
    cur: list[int] = []
    cur_len, fresh, i = 0, True, 0

    def close() -> None:
        nonlocal cur, cur_len, fresh
        ranges.append((cur[0], cur[-1]))
        last, cur, cur_len, fresh = cur, [], 0, True
        for k in reversed(last):
            if cur_len + tokens[k] > overlap:
                break
            cur.insert(0, k)
            cur_len += tokens[k]

    while i < len(tokens):
        if cur_len + tokens[i] > size and not fresh:
            close()
            continue
        while fresh and cur and cur_len + tokens[i] > size:
            cur_len -= tokens[cur.pop(0)]
        if is_sentence[i] or cur_len + tokens[i] <= size or fresh:
            cur.append(i)
            cur_len += tokens[i]
            i, fresh = i + 1, False
        else:
            close()
    if not fresh:
        ranges.append((cur[0], cur[-1]))
    return ranges


def _align_chunks(piece: str, splitter, size: int, overlap: int) -> list[tuple[int, int]]:
    """Char spans of `splitter.split_text(piece)` in `piece`, exact even for repeated text.

    Searching for each chunk's text is ambiguous when text repeats ('3.143.143.14'), so the merge
    is replayed on the splitter's own splits, and the result is checked against its chunks.
    """
    texts = splitter.split_text(piece)
    splits = splitter._split(piece, chunk_size=size)
    s_starts = _locate(piece, [s.text for s in splits])
    spans: list[tuple[int, int]] = []
    for first, last in _merge_ranges([s.token_size for s in splits], [s.is_sentence for s in splits], size, overlap):
        a, b = s_starts[first], s_starts[last] + len(splits[last].text)
        while a < b and piece[a].isspace():
            a += 1
        while b > a and piece[b - 1].isspace():
            b -= 1
        if b > a:  # llama-index drops chunks that are only whitespace
            spans.append((a, b))
    if [piece[a:b] for a, b in spans] != [t for t in texts if t]:
        raise RuntimeError(
            "rag/chunking.py: this llama-index version merges splits differently from the replay in "
            f"_merge_ranges ({len(texts)} chunks from llama-index, {len(spans)} replayed); chunk offsets "
            "would be wrong, so use chunker.kind=tokens or the llama-index-core version in pyproject.toml"
        )
    return spans


def chunk_by_sentences(text: str, tokenizer: Tokenizer, size: int, overlap: int,
                       documents: Sequence[Document] = (), llamaindex_defaults: bool = False) -> list[Chunk]:
    splitter = _sentence_splitter(tokenizer, size, overlap, llamaindex_defaults)
    chunks: list[Chunk] = []
    for start, end, doc_id in _parts(text, documents):
        piece = text[start:end]
        if not piece.strip():
            continue
        for a, b in _align_chunks(piece, splitter, size, overlap):
            cs, ce = start + a, start + b
            chunks.append(Chunk(len(chunks), cs, ce, text[cs:ce], doc_id, tokenizer.count(text[cs:ce])))
    return chunks


def chunk_like_llamaindex(text: str, tokenizer: Tokenizer, size: int, overlap: int,
                          documents: Sequence[Document] = ()) -> list[Chunk]:
    """Sentence chunks with llama-index's own splitter defaults (its paragraph and secondary separators)."""
    return chunk_by_sentences(text, tokenizer, size, overlap, documents, llamaindex_defaults=True)


# `chunker.kind` -> a function (text, tokenizer, size, overlap, documents) -> chunks in document order, each with
# its character offsets in `text`: a new chunker is its function and one entry here (and conf/chunker/<name>.yaml)
CHUNKERS = Registry("chunker.kind", {"tokens": chunk_by_tokens, "sentence": chunk_by_sentences,
                                     "llamaindex": chunk_like_llamaindex})
KINDS = tuple(CHUNKERS.names())


def make_chunks(text: str, tokenizer: Tokenizer, cfg: ChunkerConfig, documents: Sequence[Document] = ()) -> list[Chunk]:
    return CHUNKERS.get(cfg.kind)(text, tokenizer, cfg.size, cfg.overlap, documents)


def document_of(documents: Sequence[Document], char: int) -> str | None:
    starts = [d.start for d in documents]
    i = bisect.bisect_right(starts, char) - 1
    return documents[i].doc_id if i >= 0 else None
