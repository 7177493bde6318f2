"""Truncation policies: which char spans of an over-long context are kept.

Policies work on token offsets (from the generator's tokenizer) and return the kept char
regions, so the arm knows exactly which evidence survived.

- `middle` (LV-Eval, LongBench): keep the first and last budget/2 tokens, drop the middle, so the
  instruction before the context and the question after it always survive.
- `head`: keep the first `budget` tokens.
- `tail`: keep the last `budget` tokens.
- `drop_documents` (Loong): for multi-document contexts, keep whole documents from the start and
  drop every document from the first one that no longer fits; a context without documents (or
  whose first document alone is over budget) is cut like `head`.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Sequence

Offsets = Sequence[tuple[int, int]]
POLICIES = ("middle", "head", "tail", "drop_documents")


def keep_regions(offsets: Offsets, text_len: int, budget: int, policy: str,
                 documents: Sequence[tuple[int, int]] = ()) -> list[tuple[int, int]]:
    """Char regions to keep so that at most `budget` tokens remain.

    `documents` are the (start, end) char spans of the context's documents, in order; only
    `drop_documents` uses them.
    """
    if policy not in POLICIES:
        raise ValueError(f"truncation policy {policy!r}; allowed: {', '.join(POLICIES)}")
    n = len(offsets)
    if n <= budget:
        return [(0, text_len)]
    if budget <= 0:
        return []
    if policy == "drop_documents" and documents:
        return _whole_documents(offsets, budget, documents)
    if policy in ("head", "drop_documents"):
        return [(0, offsets[budget - 1][1])]
    if policy == "tail":
        return [(offsets[n - budget][0], text_len)]
    head = budget // 2
    tail = budget - head
    regions = []
    if head:
        regions.append((0, offsets[head - 1][1]))
    if tail:
        regions.append((offsets[n - tail][0], text_len))
    return regions


def apply(text: str, regions: list[tuple[int, int]]) -> str:
    return "".join(text[a:b] for a, b in regions)


def _whole_documents(offsets: Offsets, budget: int, documents: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The context up to the end of the last document that still fits entirely."""
    ends = [b for _, b in offsets]
    keep_to = 0
    for _, doc_end in sorted(documents):
        if bisect_right(ends, doc_end) > budget:  # tokens ending within the context up to this document
            break
        keep_to = doc_end
    if not keep_to:  # not even the first document fits: cut it like `head` rather than send nothing
        return [(0, offsets[budget - 1][1])]
    return [(0, keep_to)]
