"""Truncation policies: which char spans of an over-long context are kept.

Policies work on token offsets (from the generator's tokenizer) and return the kept char
regions, so the arm knows exactly which evidence survived.

- `middle` (LV-Eval, LongBench): keep the first and last budget/2 tokens, drop the middle, so the
  instruction before the context and the question after it always survive.
- `head`: keep the first `budget` tokens.
- `tail`: keep the last `budget` tokens.
"""

from __future__ import annotations

from typing import Sequence

Offsets = Sequence[tuple[int, int]]
POLICIES = ("middle", "head", "tail")


def keep_regions(offsets: Offsets, text_len: int, budget: int, policy: str) -> list[tuple[int, int]]:
    """Char regions to keep so that at most `budget` tokens remain."""
    if policy not in POLICIES:
        raise ValueError(f"truncation policy {policy!r}; allowed: {', '.join(POLICIES)}")
    n = len(offsets)
    if n <= budget:
        return [(0, text_len)]
    if budget <= 0:
        return []
    if policy == "head":
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
