"""What is computed over a whole context once, however many questions are asked over it.

Questions over one document, or over a whole folder (`benchmark=corpus` with `context: corpus`), share one
context string: its tokens, its hash, the place of each of its documents. A loader hands every such question the
same string object, so `PerContext` keys its values by the text itself: a lookup costs a dictionary probe (a
string's hash is computed once and kept by the string; the same object compares equal at once), and an equal text
in another object still finds the value (then compared once, at memory speed). Only the last `size` contexts are
kept, since questions over one context come together (the runner answers a group at a time), and a folder's
values can be large (its token offsets).

`key` extends the text with what else a value depends on (e.g. the sample's documents); objects in it are held, so
an identity in the key (`id(documents)`) cannot be reused while the value is kept.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class PerContext(Generic[T]):
    """Values computed once per context text (and `extra` key parts), the `size` most recently used kept."""

    def __init__(self, size: int = 2):
        if size < 1:
            raise ValueError(f"PerContext keeps at least one context, got size={size}")
        self.size = size
        self._values: OrderedDict[tuple[str, Hashable], tuple[Any, T]] = OrderedDict()
        self.computed = 0  # how many values were computed (a test's check that a context was done once)

    def get(self, text: str, compute: Callable[[], T], extra: Any = None) -> T:
        """The value for `text` (and `extra`, held by identity: a list or object the value depends on)."""
        key = (text, id(extra))
        hit = self._values.get(key)
        if hit is not None and hit[0] is extra:
            self._values.move_to_end(key)
            return hit[1]
        value = compute()
        self.computed += 1
        self._values[key] = (extra, value)
        self._values.move_to_end(key)
        while len(self._values) > self.size:
            self._values.popitem(last=False)
        return value

    def clear(self) -> None:
        self._values.clear()


__all__ = ["PerContext"]
