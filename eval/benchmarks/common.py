"""Helpers several benchmarks share: grouping samples of one context, an approximate token count that
needs no tokenizer, and length levels as buckets of it (LooGLE, a team's own corpus)."""

from __future__ import annotations

import re
from typing import Iterable

from eval.sample import Sample

_TOKEN = re.compile(r"[\u3400-\u9fff]|[A-Za-z0-9]+|[^\sA-Za-z0-9\u3400-\u9fff]")


def approx_tokens(text: str) -> int:
    """Tokens as one CJK character, one alphanumeric run or one other symbol each."""
    return len(_TOKEN.findall(text))


def consecutive_groups(samples: list[Sample]) -> list[Sample]:
    """Stable reorder so that samples of one group are consecutive (at the group's first place)."""
    order: dict[str, int] = {}
    for s in samples:
        order.setdefault(s.group, len(order))
    return sorted(samples, key=lambda s: order[s.group])  # sorted() is stable


def _k(n: int) -> str:
    return f"{n // 1000}k" if n % 1000 == 0 else str(n)


def level_names(edges: Iterable[int]) -> list[str]:
    edges = list(edges)
    names, low = [], 0
    for e in edges:
        names.append(f"{_k(low) if low else 0}-{_k(e)}")
        low = e
    names.append(f"{_k(low)}+")
    return names


def length_level(tokens: int, edges: Iterable[int]) -> str:
    """The bucket of a context of `tokens` approximate tokens: `16k-32k` holds 16,001..32,000."""
    edges = list(edges)
    names = level_names(edges)
    for name, e in zip(names, edges):
        if tokens <= e:
            return name
    return names[-1]
