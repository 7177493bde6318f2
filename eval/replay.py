"""Random draws that can be replayed: a benchmark that shuffles as its released code does records the
RNG's state as (seed, words drawn), and whoever re-runs a later shuffle of that code (the long-context
arm, over the documents it kept) rebuilds the same state from the sample's metadata."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Any


class CountingRandom(random.Random):
    """`random.Random` that counts the 32-bit words it has drawn, so the state at any point is
    (seed, words): `advanced(seed, words)` rebuilds it."""

    def __init__(self, seed: int):
        self.words = 0
        super().__init__(seed)

    def getrandbits(self, k: int) -> int:
        self.words += max(1, -(-k // 32))
        return super().getrandbits(k)


def advanced(seed: int, words: int) -> random.Random:
    """A `random.Random(seed)` after `words` 32-bit draws (the state `CountingRandom` counted)."""
    rng = random.Random(seed)
    for _ in range(words):
        rng.getrandbits(32)
    return rng


def replayed_shuffle(state: Mapping[str, Any] | None) -> Callable[[list], None] | None:
    """The `shuffle` of the RNG state a loader recorded as `{"seed", "words"}` (None: no shuffle)."""
    if not state:
        return None
    return advanced(int(state["seed"]), int(state["words"])).shuffle
