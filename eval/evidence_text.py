"""The text a reader needs to see one question: its gold evidence quoted, a window of the context around
it, and whether a gold answer appears in what the model was given.

Records keep these (experiments/records.py) so the report's question viewer can show a question without
reloading its benchmark: quotes and windows are cut to a few hundred characters each, never a whole
document. `answer_in_text` is the second signal beside evidence recall where a benchmark has answers but
no evidence quotes: the gold answer (normalised) appears in the prompt's context.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eval.answers import Answer, answer_texts
from eval.metrics.text import normalize_en, normalize_zh
from eval.sample import Span

QUOTE_CHARS = 600  # an evidence quote longer than this is cut (its offsets still say where it ends)
WINDOW_CHARS = 400  # context shown on each side of the evidence
WINDOW_MAX = 3000  # a window never holds more than this many characters


def evidence_quotes(context: str, evidence: Sequence[Span]) -> list[dict[str, Any]]:
    """The char-span evidence as {start, end, text} (text cut to QUOTE_CHARS), in document order."""
    out = []
    for s in sorted((s for s in evidence if s.is_char_span), key=lambda s: (s.start, s.end)):
        assert s.start is not None and s.end is not None
        quote = {"start": s.start, "end": s.end, "text": context[s.start:s.end][:QUOTE_CHARS]}
        if s.alt:
            quote["alt"] = s.alt
        out.append(quote)
    return out


def window_around(context: str, evidence: Sequence[Span], chars: int = WINDOW_CHARS) -> dict[str, Any] | None:
    """The context from `chars` before the first evidence span to `chars` after the last (at most WINDOW_MAX
    characters from its start: evidence spread further is cut): {start, end, text}; None when there is no
    char-span evidence."""
    spans = [(int(s.start), int(s.end)) for s in evidence if s.start is not None and s.end is not None]
    if not spans:
        return None
    start = max(0, min(a for a, _ in spans) - chars)
    end = min(len(context), max(b for _, b in spans) + chars, start + WINDOW_MAX)
    return {"start": start, "end": end, "text": context[start:end]}


def _normal(text: str, language: str) -> str:
    return normalize_zh(text) if language == "zh" else " " + normalize_en(text) + " "


def answer_in_text(answers: Sequence[Answer], text: str, language: str = "en") -> bool | None:
    """Whether any gold answer, normalised as the metrics normalise (English: whole words), appears in
    `text`; None when there is no non-empty answer to look for."""
    wanted = answer_texts(answers)  # an answer's alternatives each count
    if not wanted:
        return None
    hay = _normal(text, language)
    for a in wanted:
        needle = _normal(a, language).strip()
        if needle and ((" " + needle + " ") in hay if language != "zh" else needle in hay):
            return True
    return False
