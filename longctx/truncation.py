"""Truncation policies: which char spans of an over-long context are kept.

Policies work on token offsets (from the generator's tokenizer) and return the kept char
regions, so the arm knows exactly which evidence survived.

- `middle` (LongBench, LooGLE): keep the first and last budget/2 tokens of the context, drop the
  middle, so the instruction before the context and the question after it always survive.
- `prompt_middle` (LV-Eval's `utils.truncate_prompt`): the whole raw prompt (template, context and
  question) is cut to `window - longctx.reserve_tokens` tokens, first and last half kept; the
  template's text being shorter than a half, this keeps `half - head` tokens of the context's start
  and `half - tail` of its end (`longctx.arm`, which knows the template). `keep_regions` treats it
  as `middle`.
- `head`: keep the first `budget` tokens.
- `tail`: keep the last `budget` tokens.
- `drop_documents` (Loong): for multi-document contexts, keep whole documents in order and drop
  each one that would overflow what is left of the budget (Loong's released code; a later, shorter
  document may still fit); a context without documents, or where no document fits, is cut like
  `head`. With a `walk` order and a `reshuffle` (Loong's items: `released_documents`), the
  documents are dropped in the order of the released first shuffle and the kept ones put in the
  order of its second shuffle, as the released step 1 does (shuffle, drop, shuffle).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence

Offsets = Sequence[tuple[int, int]]
POLICIES = ("middle", "head", "tail", "drop_documents", "prompt_middle")


def keep_regions(offsets: Offsets, text_len: int, budget: int, policy: str,
                 documents: Sequence[tuple[int, int]] = ()) -> list[tuple[int, int]]:
    """Char regions to keep so that at most `budget` tokens remain.

    `documents` are the (start, end) char spans of the context's documents, in order; only
    `drop_documents` uses them.
    """
    if policy not in POLICIES:
        raise ValueError(f"truncation policy {policy!r}; allowed: {', '.join(POLICIES)}")
    n = len(offsets)
    if n <= budget:
        return [(0, text_len)]
    if budget <= 0:
        return []
    if policy == "drop_documents" and documents:
        return _whole_documents(offsets, budget, documents)
    if policy in ("head", "drop_documents"):
        return [(0, offsets[budget - 1][1])]
    if policy == "tail":
        return [(offsets[n - budget][0], text_len)]
    return keep_ends(offsets, text_len, budget // 2, budget - budget // 2)


def keep_ends(offsets: Offsets, text_len: int, head: int, tail: int) -> list[tuple[int, int]]:
    """The first `head` and the last `tail` tokens (all of the text when they cover it)."""
    n = len(offsets)
    if head + tail >= n:
        return [(0, text_len)]
    regions = []
    if head > 0:
        regions.append((0, offsets[head - 1][1]))
    if tail > 0:
        regions.append((offsets[n - tail][0], text_len))
    return regions


def token_ends(offsets: Offsets) -> Sequence[int]:
    """The end of each token, in order: kept with the offsets where they come from a context's cache
    (`longctx.context_tokens.TokenSpans.ends`), else read off them."""
    ends = getattr(offsets, "ends", None)
    return ends if ends is not None else [b for _, b in offsets]


def apply(text: str, regions: list[tuple[int, int]]) -> str:
    return "".join(text[a:b] for a, b in regions)


def _whole_documents(offsets: Offsets, budget: int, documents: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Whole documents, in order, skipping each one that would overflow what is left of the budget
    (as Loong's released code does: a later, shorter document may still fit)."""
    ends = token_ends(offsets)
    docs = sorted(documents)
    text_end = int(ends[-1]) if len(ends) else 0

    def tokens(a: int, b: int) -> int:
        return bisect_right(ends, b) - bisect_right(ends, a)

    # each document owns the text up to the next one (its separator); text before the first is kept
    pieces = [(start, docs[i + 1][0] if i + 1 < len(docs) else max(end, text_end))
              for i, (start, end) in enumerate(docs)]
    regions, used = [], 0
    if docs[0][0] > 0:
        regions.append((0, docs[0][0]))
        used = tokens(0, docs[0][0])
    for a, b in pieces:
        n = tokens(a, b)
        if used + n <= budget:
            regions.append((a, b))
            used += n
    if len(regions) == (1 if docs[0][0] > 0 else 0):  # not one document fits: cut like `head`
        return [(0, offsets[budget - 1][1])]
    return _merge(regions)


def released_documents(offsets: Offsets, text_len: int, budget: int, documents: Sequence[tuple[str, int, int]],
                       walk: Sequence[str], reshuffle: Callable[[list], None] | None) -> list[tuple[int, int]]:
    """Loong's released `get_doc_str` over a context built in its final (all-fit) order: each
    document (id, start, end) owns the text up to the next one; walking them in `walk` order, keep
    every one that fits what is left of `budget`, then `reshuffle` the kept ones in place (the
    released second shuffle). Regions come back in the order the text is to be joined; everything
    fits: the whole context as it is; not one document fits: cut like `head`."""
    n = len(offsets)
    if n <= budget:
        return [(0, text_len)]
    if budget <= 0:
        return []
    ends = token_ends(offsets)
    docs = sorted(documents, key=lambda d: d[1])
    text_end = int(ends[-1]) if len(ends) else 0
    piece = {d[0]: (d[1], docs[i + 1][1] if i + 1 < len(docs) else max(d[2], text_end)) for i, d in enumerate(docs)}
    lead: list[tuple[int, int]] = [(0, docs[0][1])] if docs and docs[0][1] > 0 else []
    used = sum(bisect_right(ends, b) - bisect_right(ends, a) for a, b in lead)
    kept = []
    for doc_id in walk:
        a, b = piece[doc_id]
        tokens = bisect_right(ends, b) - bisect_right(ends, a)
        if used + tokens <= budget:
            kept.append(doc_id)
            used += tokens
    if not kept:
        return [(0, offsets[budget - 1][1])]
    if reshuffle is not None:
        reshuffle(kept)
    return lead + [piece[d] for d in kept]


def _merge(regions: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in regions:
        if out and out[-1][1] >= a:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out
