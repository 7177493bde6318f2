"""Token-based chunking with overlap, by the generator's tokenizer.

Chunks are char spans of the context (so evidence coverage is exact) and never cross a document
boundary when the sample has several documents.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Sequence

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


def chunk_by_tokens(text: str, tokenizer: Tokenizer, size: int, overlap: int,
                    documents: Sequence[Document] = ()) -> list[Chunk]:
    parts = [(d.start, d.end, d.doc_id) for d in documents] or [(0, len(text), None)]
    chunks: list[Chunk] = []
    for start, end, doc_id in parts:
        piece = text[start:end]
        offsets = tokenizer.offsets(piece)
        for a, b in token_windows(len(offsets), size, overlap):
            cs, ce = start + offsets[a][0], start + offsets[b - 1][1]
            if ce > cs:
                chunks.append(Chunk(len(chunks), cs, ce, text[cs:ce], doc_id, b - a))
    return chunks


def document_of(documents: Sequence[Document], char: int) -> str | None:
    starts = [d.start for d in documents]
    i = bisect.bisect_right(starts, char) - 1
    return documents[i].doc_id if i >= 0 else None
