"""Where a stop string ends an answer: only once the answer has content.

A stop string (`generator.stop`, e.g. `generator=smollm2_brief`'s newline and sentence end) ends an answer
where it first appears after the answer's leading whitespace, unless the text before it is still a bare
lead-in: empty, ending in a colon ("The two rules of references:"), or ending in a list marker alone on its
line ("...:\n1" before ". "). Such a stop is passed over and decoding goes on to the answer itself, so a
one-sentence answer that opens with a lead-in is not cut to the lead-in.

An answer that still ends as a bare lead-in (the model ended it there, a server applied the stop string
itself) ends with `finish_reason` "lead_in": it counts as cut
(`answers_cut_share`), like an answer cut at the token limit, since its score says nothing about what the
arm's context held. The local transformers backend and the OpenAI-compatible and vLLM backends apply the
same rule wherever stop strings are configured.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

LEAD_IN = "lead_in"  # finish_reason of an answer that ended after a lead-in and before any content
STOP = "stop"

# A line holding only a list marker: "1", "1.", "a)", "iv.", "-", "*", "•" (the marker of an item not yet written)
_LIST_MARKER = re.compile(r"(?:\d{1,3}|[a-zA-Z]|[ivxIVX]{1,4})[.)]?|[-*•·–]")
_ENUMERATOR = re.compile(r"\d{1,3}|[a-zA-Z]|[ivxIVX]{1,4}")  # "1", "b", "iv": before ". " it opens a list item
_LEAD_IN_END = (":", "：")  # an ASCII or a full-width colon


def is_lead_in(text: str) -> bool:
    """Whether `text` (an answer, or the text before a stop string) has no content yet: empty, ending in a colon,
    or ending in a line that holds only a list marker below such a lead-in ("The two rules:\n1."). A lone
    number or letter is content ("3", "B"): the answer to a count or a choice."""
    stripped = text.strip()
    if not stripped or stripped.endswith(_LEAD_IN_END):
        return True
    lines = stripped.split("\n")
    return len(lines) > 1 and bool(_LIST_MARKER.fullmatch(lines[-1].strip())) and is_lead_in("\n".join(lines[:-1]))


def _opens_item(before: str, stop: str) -> bool:
    """The stop string right after a lone enumerator at the start ("1" + ". "): the first item of a list."""
    return stop[:1] in ".)" and bool(_ENUMERATOR.fullmatch(before.strip()))


def first_stop(text: str, stop: tuple[str, ...]) -> int | None:
    """Where the first stop string that ends `text` starts: the earliest occurrence of any of `stop` after the
    leading whitespace whose preceding text has content (not `is_lead_in`, and not a lone "1" before ". ");
    None when there is none."""
    if not stop:
        return None
    start = len(text) - len(text.lstrip())
    found = sorted((i, s) for s in stop for i in _occurrences(text, s, start))
    return next((i for i, s in found if not is_lead_in(text[:i]) and not _opens_item(text[:i], s)), None)


def _occurrences(text: str, s: str, start: int) -> list[int]:
    out, i = [], text.find(s, start)
    while i >= 0:
        out.append(i)
        i = text.find(s, i + 1)
    return out


def finish_after_stop(text: str, finish: str | None, stop: Sequence[str] | None) -> str | None:
    """How an answer ended, in the project's words, once stop strings are configured: "lead_in" for an answer
    that ended ("stop") as a bare lead-in; any other ending as it was. Without stop strings nothing changes."""
    if stop and finish == STOP and is_lead_in(text):
        return LEAD_IN
    return finish


__all__ = ["LEAD_IN", "first_stop", "finish_after_stop", "is_lead_in"]


def stop_strings(stop) -> tuple[str, ...]:
    """`generator.stop` checked: a list of non-empty strings (or one string), or nothing."""
    if stop is None:
        return ()
    items = [stop] if isinstance(stop, str) else list(stop)
    if not all(isinstance(s, str) and s for s in items):
        raise ValueError(f"generator.stop must be a list of non-empty strings, got {stop!r}")
    return tuple(items)


LOOP_SPAN = 12  # tokens a repeated block must cover (at least 3 copies) before an answer counts as looping
LOOP_UNIT = 16  # the longest repeated block looked for, in tokens


def looping(tokens: list[int]) -> bool:
    """The answer ends in one block of tokens repeated back to back, at least 3 times and over at least
    `LOOP_SPAN` tokens ("is the mayor of X is the mayor of X ...", "klaklakla..."): greedy decoding of a small
    model that falls into such a loop never leaves it, so the rest of its token limit buys nothing."""
    for unit in range(1, LOOP_UNIT + 1):
        copies = max(3, -(-LOOP_SPAN // unit))
        if len(tokens) < unit * copies:
            break
        block = tokens[-unit:]
        if all(tokens[-unit * (k + 1): len(tokens) - unit * k] == block for k in range(1, copies)):
            return True
    return False
