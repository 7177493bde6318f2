"""A context's tokens as char spans, computed once per context and kept compactly.

Long context cuts every question's context at token borders. Questions over one document, or a whole folder,
share the context, so its offsets are tokenized once (`PerContext`: a 5.4 MB folder takes the tokenizer 4.5 s)
and kept as two integer arrays (16 bytes a token, where a list of tuples takes about 100). `TokenSpans` reads as
the sequence of (start, end) pairs the truncation policies take, and `ends` is the array they search.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import overload

import numpy as np

from eval.per_context import PerContext


class TokenSpans(Sequence[tuple[int, int]]):
    """(start, end) char span of each token of one text."""

    __slots__ = ("starts", "ends")

    def __init__(self, spans: Sequence[tuple[int, int]]):
        pairs = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
        self.starts = np.ascontiguousarray(pairs[:, 0])
        self.ends = np.ascontiguousarray(pairs[:, 1])

    def __len__(self) -> int:
        return len(self.starts)

    @overload
    def __getitem__(self, i: int) -> tuple[int, int]: ...

    @overload
    def __getitem__(self, i: slice) -> list[tuple[int, int]]: ...

    def __getitem__(self, i):
        if isinstance(i, slice):
            return list(zip(self.starts[i].tolist(), self.ends[i].tolist(), strict=True))
        return int(self.starts[i]), int(self.ends[i])

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return iter(zip(self.starts.tolist(), self.ends.tolist(), strict=True))

    def tokens_between(self, a: int, b: int) -> int:
        """Tokens ending in (a, b]: those a cut at chars a and b holds."""
        return int(np.searchsorted(self.ends, b, "right") - np.searchsorted(self.ends, a, "right"))


class ContextTokens:
    """Token spans of the contexts a tokenizer was asked for, each context tokenized once (the last two kept)."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self._spans: PerContext[TokenSpans] = PerContext(size=2)

    def of(self, text: str) -> TokenSpans:
        return self._spans.get(text, lambda: TokenSpans(self.tokenizer.offsets(text)))

    @property
    def tokenized(self) -> int:
        """How many contexts were tokenized."""
        return self._spans.computed


__all__ = ["ContextTokens", "TokenSpans"]
