"""Context assembly: which retrieved chunks go into the prompt, and in which order.

Selection is by count (`top_k`) or by token budget (`budget_tokens`: best first while the next
chunk still fits, for budget-matched comparisons with long context); either way never beyond the
room the model's window leaves. Order is `score` (best first) or `document` (original position,
as OP-RAG: order-preserving RAG).

With several documents in a context (Loong), a chunk cut from the middle of one would not say
which document (company, paper, judgment) it comes from, while the long-context arm shows every
document under its title. `with_titles` heads each such chunk with its document's header
(`rag.doc_titles`: `auto` = on for contexts of several documents, `true`, `false`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from eval.sample import Document
from rag.chunking import Chunk

ORDERS = ("document", "score")
TITLES = ("auto", True, False)


def titles_on(doc_titles: Any, n_documents: int) -> bool:
    """Whether chunks are headed by their document's title: `auto` when the context joins several documents."""
    if doc_titles not in TITLES:
        raise ValueError(f"rag.doc_titles={doc_titles!r}; allowed: auto, true, false")
    return n_documents > 1 if doc_titles == "auto" else bool(doc_titles)


def hashed_rag(rag: dict[str, Any], multi_document: bool) -> dict[str, Any]:
    """The `rag` section as the config hash sees it: `doc_titles` only when it heads chunks, so runs made
    before the option existed (single-document benchmarks, or titles off) keep their hash and resume."""
    if "doc_titles" in rag and not titles_on(rag["doc_titles"], 2 if multi_document else 1):
        return {k: v for k, v in rag.items() if k != "doc_titles"}
    return rag


def with_titles(chunks: Sequence[Chunk], documents: Sequence[Document] | Mapping[str, Document],
                count: Callable[[str], int]) -> list[Chunk]:
    """Each chunk headed by its document's header (`Document.heading()`), its tokens counted in
    `n_tokens`; a chunk that begins its document already holds the header and is left as it is. `documents`: the
    context's documents, or them by id (built once per context by a caller that asks for many questions)."""
    docs = documents if isinstance(documents, Mapping) else {d.doc_id: d for d in documents}
    costs: dict[str, int] = {}
    out = []
    for c in chunks:
        doc = docs.get(c.doc_id) if c.doc_id is not None else None
        head = doc.heading() if doc is not None else ""
        if doc is None or not head or c.start < doc.start + len(head):
            out.append(c)
            continue
        if head not in costs:
            costs[head] = count(head)
        out.append(replace(c, text=head + c.text, n_tokens=c.n_tokens + costs[head]))
    return out


def select_chunks(ranked: Sequence[Chunk], room: int, sep_tokens: int, top_k: int | None = None,
                  budget_tokens: int | None = None) -> tuple[list[Chunk], int]:
    """Best-first selection: at most `top_k` chunks (when set) within min(`budget_tokens`, `room`) tokens.

    Returns the chunks (best first) and the tokens they take with their separators.
    """
    limit = room if budget_tokens is None else min(room, budget_tokens)
    selected: list[Chunk] = []
    used = 0
    for c in ranked:
        if top_k is not None and len(selected) >= top_k:
            break
        cost = c.n_tokens + (sep_tokens if selected else 0)
        if used + cost > limit:
            break
        selected.append(c)
        used += cost
    return selected, used


def order_chunks(selected: Sequence[Chunk], order: str) -> list[Chunk]:
    if order not in ORDERS:
        raise ValueError(f"rag.order={order!r}; allowed: {', '.join(ORDERS)}")
    if order == "document":
        return sorted(selected, key=lambda c: c.index)
    return list(selected)


def join_chunks(chunks: Sequence[Chunk], separator: str) -> str:
    return separator.join(c.text for c in chunks)
