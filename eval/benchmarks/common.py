"""Helpers several benchmarks share: grouping samples of one context, and an approximate token count
that needs no tokenizer (length levels of generated and bucketed benchmarks)."""

from __future__ import annotations

import re

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
