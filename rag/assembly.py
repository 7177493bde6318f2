"""Context assembly: which retrieved chunks go into the prompt, and in which order.

Selection is by count (`top_k`) or by token budget (`budget_tokens`: best first while the next
chunk still fits, for budget-matched comparisons with long context); either way never beyond the
room the model's window leaves. Order is `score` (best first) or `document` (original position,
as OP-RAG: order-preserving RAG).
"""

from __future__ import annotations

from typing import Sequence

from rag.chunking import Chunk

ORDERS = ("document", "score")


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
