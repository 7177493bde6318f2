"""Where questions are asked from: passages sampled, seeded, across documents and depths, snapped to sentences
(testset package docstring: "What is asked")."""

from __future__ import annotations

import math
import random
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from eval.corpus.parsers import ParsedDocument

TYPES = ("locate", "compare", "reason", "unanswerable")
DEPTHS = ("start", "middle", "end")
PASSAGE_CHARS = 1000


@dataclass(frozen=True)
class Passage:
    document: str
    start: int
    end: int
    depth: str

    def span(self) -> dict[str, Any]:
        return {"document": self.document, "start": self.start, "end": self.end, "depth": self.depth}


@dataclass(frozen=True)
class Task:
    index: int
    type: str
    passages: tuple[Passage, ...]

    @property
    def document(self) -> str:
        return self.passages[0].document


# a paragraph break, a sentence end followed by space, a sentence end glued to the next capital
# ("unbuilt.Picardo", as extracted text often is), or a Chinese sentence end
_BOUNDARY = re.compile(r"\n\s*|(?<=[.!?])[\"'”’)]*\s+|(?<=[a-z][.!?])(?=[A-Z])|(?<=[。！？；])")
SNAP_CHARS = 400  # how far a passage's start moves to reach a sentence start
RETRIES = 10  # draws of a passage not planned before


def _snap(text: str, at: int, limit: int) -> int:
    """The first sentence or paragraph boundary at or after `at` (before `limit`), else `at`: passages start
    where a sentence does."""
    if at <= 0:
        return 0
    m = _BOUNDARY.search(text, at, min(len(text), limit))
    return m.end() if m else at


def _snap_back(text: str, end: int, floor: int) -> int:
    """The last sentence or paragraph end in [floor, end), else `end`: passages end where a sentence does."""
    if end >= len(text):
        return len(text)
    best = None
    for m in _BOUNDARY.finditer(text, floor, end):
        best = m.start() + len(m.group().rstrip())
    return best if best is not None and best > floor else end


def _window(doc: ParsedDocument, lo: int, hi: int, size: int, rng: random.Random, depth: str) -> Passage:
    """A passage of about `size` chars beginning at a random sentence start in [lo, hi)."""
    text = doc.text
    at = rng.randint(lo, hi - size) if hi - size > lo else lo
    start = min(_snap(text, at, at + SNAP_CHARS), len(text) - 1)
    end = _snap_back(text, min(len(text), start + size), start + size // 2)
    return Passage(doc.doc_id, start, max(end, start + 1), depth)


def _band(doc: ParsedDocument, depth: str, size: int) -> tuple[int, int]:
    n = len(doc.text)
    b = DEPTHS.index(depth)
    return (n * b) // 3, max((n * (b + 1)) // 3, min(n, (n * b) // 3 + size))


def _passage(doc: ParsedDocument, depth: str, size: int, rng: random.Random) -> Passage:
    if len(doc.text) <= size:
        return Passage(doc.doc_id, 0, len(doc.text), depth)
    lo, hi = _band(doc, depth, size)
    return _window(doc, lo, hi, size, rng, depth)


def _two_passages(doc: ParsedDocument, depth: str, size: int, rng: random.Random) -> tuple[Passage, Passage]:
    """Two passages of one document from different depths (its two halves when it is short)."""
    n = len(doc.text)
    if n < 2 * size:
        mid = _snap(doc.text, n // 2, n)
        mid = mid if 0 < mid < n else n // 2
        if mid == 0:  # a one-character document: no two passages to show
            whole = Passage(doc.doc_id, 0, n, "start")
            return whole, whole
        return Passage(doc.doc_id, 0, mid, "start"), Passage(doc.doc_id, mid, n, "end")
    other = rng.choice([d for d in DEPTHS if d != depth])
    first, second = sorted((depth, other), key=DEPTHS.index)
    a = _passage(doc, first, size, rng)
    b = _passage(doc, second, size, rng)
    if b.start < a.end:  # bands of a short document may touch: the second starts after the first
        b = Passage(doc.doc_id, a.end, max(a.end + 1, min(n, a.end + size)), second)
    return a, b


def plan(docs: list[ParsedDocument], n: int, types: Iterable[str], seed: int,
         passage_chars: int = PASSAGE_CHARS) -> list[Task]:
    """`n` tasks, seeded: documents in turn (a shuffled order), depths in turn within each document (from a
    random first depth per document), types mixed in equal shares in a shuffled order; a passage is not planned
    twice unless its document has no other left."""
    rng = random.Random(f"generate_questions/{seed}")
    types = list(types)
    order = sorted(docs, key=lambda d: d.doc_id)
    rng.shuffle(order)
    mix = (types * math.ceil(n / len(types)))[:n]
    rng.shuffle(mix)
    first_depth = {d.doc_id: rng.randrange(len(DEPTHS)) for d in order}
    seen: dict[str, int] = {}
    used: set[Passage] = set()
    tasks = []
    for i in range(n):
        doc = order[i % len(order)]
        k = seen.get(doc.doc_id, 0)
        seen[doc.doc_id] = k + 1
        depth = DEPTHS[(first_depth[doc.doc_id] + k) % len(DEPTHS)]
        kind = mix[i]
        for _ in range(RETRIES):  # a passage already planned is drawn again (a short document may run out)
            passages = _two_passages(doc, depth, passage_chars * 7 // 10, rng) if kind == "compare" \
                else (_passage(doc, depth, passage_chars, rng),)
            if not used.intersection(passages):
                break
        used.update(passages)
        tasks.append(Task(i, kind, passages))
    return tasks
