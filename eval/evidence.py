"""Did the gold evidence reach the model? Recall@n for retrieval, retention for truncation.

Regions are what an arm put into the prompt: char spans of the context, each optionally tagged
with the document it comes from. A char-span piece of evidence counts as present when the regions
cover at least `min_coverage` of its characters; a document-level piece (no char span) counts as
present when any region comes from that document.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

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


def present_fraction(spans: Sequence[Span], regions: Sequence[Region], min_coverage: float) -> float | None:
    """Share of `spans` present in `regions`; None when there is no evidence to check."""
    if not spans:
        return None
    return sum(is_present(s, regions, min_coverage) for s in spans) / len(spans)


def recall_at(spans: Sequence[Span], ranked: Sequence[Region], ns: Iterable[int], min_coverage: float) -> dict[str, float] | None:
    """{n: share of gold evidence present in the top-n ranked regions} (keys as strings, for JSON)."""
    if not spans:
        return None
    return {str(n): present_fraction(spans, ranked[:n], min_coverage) for n in ns}  # type: ignore[misc]
