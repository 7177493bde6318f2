"""Did the gold evidence reach the model? Recall@n for retrieval, retention for truncation.

Regions are what an arm put into the prompt: char spans of the context, each optionally tagged
with the document it comes from. A char-span piece of evidence counts as present when the regions
cover at least `min_coverage` of its characters; a document-level piece (no char span) counts as
present when any region comes from that document. Spans sharing an `alt` key are one piece of
evidence found in several places (an answer occurring more than once): present when any is.

The two kinds are never averaged together: `split_kinds` separates them, and the arms record
span-level figures as `evidence_*` and document-level ones as `doc_recall` / `docs_*` (Loong's
evidence is which documents hold the answer: "recall" there is document coverage).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from eval.sample import Span


@dataclass(frozen=True)
class Region:
    start: int
    end: int
    doc_id: str | None = None


def covered_fraction(span: Span, regions: Iterable[Region]) -> float:
    """Share of `span`'s characters inside the union of `regions`."""
    assert span.start is not None and span.end is not None
    length = span.end - span.start
    if length <= 0:
        return 0.0
    pieces = sorted((max(r.start, span.start), min(r.end, span.end)) for r in regions)
    covered, reach = 0, span.start
    for a, b in pieces:
        if b <= a:
            continue
        a = max(a, reach)
        if b > a:
            covered += b - a
            reach = b
    return covered / length


def is_present(span: Span, regions: Sequence[Region], min_coverage: float) -> bool:
    if span.is_char_span:
        return covered_fraction(span, regions) >= min_coverage
    return any(r.doc_id == span.doc_id for r in regions)


def evidence_units(spans: Sequence[Span]) -> list[list[Span]]:
    """The pieces of evidence: each span alone, except spans sharing an `alt` key (one group, in
    order of first appearance)."""
    units: list[list[Span]] = []
    by_alt: dict[str, list[Span]] = {}
    for s in spans:
        if s.alt is None:
            units.append([s])
        elif s.alt in by_alt:
            by_alt[s.alt].append(s)
        else:
            by_alt[s.alt] = [s]
            units.append(by_alt[s.alt])
    return units


def split_kinds(spans: Sequence[Span]) -> tuple[list[Span], list[Span]]:
    """(char-span evidence, document-level evidence): the two kinds each arm reports under its own name."""
    return [s for s in spans if s.is_char_span], [s for s in spans if not s.is_char_span]


def present_fraction(spans: Sequence[Span], regions: Sequence[Region], min_coverage: float) -> float | None:
    """Share of the pieces of evidence in `spans` present in `regions` (an any-of group counts
    once, present when any member is); None when there is no evidence to check."""
    if not spans:
        return None
    units = evidence_units(spans)
    return sum(any(is_present(s, regions, min_coverage) for s in unit) for unit in units) / len(units)


def recall_at(spans: Sequence[Span], ranked: Sequence[Region], ns: Iterable[int],
              min_coverage: float) -> dict[str, float] | None:
    """{n: share of gold evidence present in the top-n ranked regions} (keys as strings, for JSON)."""
    if not spans:
        return None
    # (with evidence to check, every share is a number: the filter drops nothing)
    return {str(n): f for n in ns if (f := present_fraction(spans, ranked[:n], min_coverage)) is not None}
