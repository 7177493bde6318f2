"""Locate a benchmark's evidence text in its context as a char span, exactly or fuzzily.

Benchmarks ship gold evidence as text that is often not a verbatim substring of the context
(LooGLE's `S`: line breaks differ, words were dropped or edited by annotators). `align` finds the
best char span and says how good it is:

1. `exact`: the stripped evidence occurs verbatim (quality 1.0);
2. `tokens`: the evidence's word tokens occur contiguously, ignoring case, punctuation and
   whitespace (quality 1.0);
3. `fuzzy`: token-level alignment. Candidate places are voted for by the evidence's tokens (each
   occurrence of an evidence token in the context votes for where the evidence would start); around
   the best candidates the evidence is aligned to the context tokens by longest common subsequence
   (rapidfuzz), and the densest run of matched blocks gives the span. Quality = share of the
   evidence's tokens matched, in order, inside the span.

Tokens are runs of letters and digits (NFKC, case-folded); each CJK character is a token of its
own. Index a context once with `TokenIndex` when several pieces of evidence share it.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass

from rapidfuzz.distance import Indel

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+")

METHODS = ("exact", "tokens", "fuzzy")


@dataclass(frozen=True)
class Alignment:
    start: int
    end: int
    quality: float  # share of the evidence's tokens matched inside [start, end)
    method: str  # exact | tokens | fuzzy


def _norm(token: str) -> str:
    return unicodedata.normalize("NFKC", token).casefold() if not token.isascii() else token.lower()


def tokenize(text: str) -> tuple[list[str], list[int], list[int]]:
    """Normalised tokens of `text` with their char start and end offsets."""
    toks, starts, ends = [], [], []
    for m in _TOKEN.finditer(text):
        toks.append(_norm(m.group()))
        starts.append(m.start())
        ends.append(m.end())
    return toks, starts, ends


class TokenIndex:
    """A context's tokens, their offsets and where each token occurs (build once per context)."""

    def __init__(self, text: str):
        self.text = text
        self.tokens, self.starts, self.ends = tokenize(text)
        self.positions: dict[str, list[int]] = {}
        for i, t in enumerate(self.tokens):
            self.positions.setdefault(t, []).append(i)

    def __len__(self) -> int:
        return len(self.tokens)


def _find_token_run(index: TokenIndex, ev: list[str]) -> int | None:
    """First context token position where the whole token sequence `ev` occurs, or None."""
    rare = min(range(len(ev)), key=lambda p: len(index.positions.get(ev[p], ())))
    for q in index.positions.get(ev[rare], ()):
        s = q - rare
        if s >= 0 and index.tokens[s : s + len(ev)] == ev:
            return s
    return None


def _find_exact(index: TokenIndex, ev_text: str, ev: list[str], starts: list[int], ends: list[int]) -> int:
    """Where `ev_text` first occurs verbatim in the context (-1: nowhere), found through the index: a token the
    quote holds whole (not at its edges, where the context's token may run on) is tokenized alike in the context,
    so every occurrence of the quote holds an occurrence of its rarest such token at the same offset. The quote's
    first occurrence is then the first of those places where the text matches, without scanning the whole context
    for each quote (a folder of 5 MB, questions over all of it). A quote without such a token: `str.find`."""
    inner = [i for i in range(len(ev)) if starts[i] > 0 and ends[i] < len(ev_text)]
    if not inner:
        return index.text.find(ev_text)
    rare = min(inner, key=lambda i: len(index.positions.get(ev[i], ())))
    for q in index.positions.get(ev[rare], ()):
        at = index.starts[q] - starts[rare]
        if at >= 0 and index.text.startswith(ev_text, at):
            return at
    return -1


def _candidates(index: TokenIndex, ev: list[str], max_occurrences: int, n: int) -> list[int]:
    """Likely start positions (context token index) of the evidence, best first."""
    votes: Counter[int] = Counter()
    for p, t in enumerate(ev):
        occ = index.positions.get(t)
        if not occ or len(occ) > max_occurrences:
            continue
        for q in occ:
            votes[q - p] += 1
    if not votes:  # only very common tokens: let them vote after all
        for p, t in enumerate(ev):
            for q in index.positions.get(t, ()):
                votes[q - p] += 1
    if not votes:
        return []
    # smooth: insertions and deletions spread one alignment's votes over neighbouring offsets
    width = max(2, len(ev) // 5)
    offsets = sorted(votes)
    smoothed = []
    prefix = [0]
    for o in offsets:
        prefix.append(prefix[-1] + votes[o])
    for o in offsets:
        lo, hi = bisect_left(offsets, o - width), bisect_left(offsets, o + width + 1)
        smoothed.append((prefix[hi] - prefix[lo], -o))
    smoothed.sort(reverse=True)
    picked: list[int] = []
    for _, neg in smoothed:
        o = -neg
        if all(abs(o - p) > width for p in picked):
            picked.append(o)
            if len(picked) == n:
                break
    return picked


def _best_run(blocks: list[tuple[int, int, int]], max_gap: int) -> tuple[int, int, int]:
    """Densest run of matched blocks (ev_start, win_start, size): (matched, first win pos, last win end)."""
    best = (0, 0, 0)
    run_matched, run_start, prev_end = 0, None, 0
    for _, j, size in blocks:
        if run_start is None or j - prev_end > max_gap:
            run_matched, run_start = 0, j
        run_matched += size
        prev_end = j + size
        if run_matched > best[0]:
            best = (run_matched, run_start, prev_end)
    return best


def _run(ev: list[str], tokens: list[str], lo: int, hi: int, max_gap: int) -> tuple[int, int, int] | None:
    """(matched, start, end) in context token positions of the densest aligned run within [lo, hi)."""
    blocks = [(b.a, b.b, b.size) for b in Indel.opcodes(ev, tokens[lo:hi]).as_matching_blocks() if b.size]
    if not blocks:
        return None
    matched, j0, j1 = _best_run(blocks, max_gap)
    return matched, lo + j0, lo + j1


def align(evidence: str, context: str | TokenIndex, max_occurrences: int = 100,
          candidates: int = 5) -> Alignment | None:
    """The best char span of `context` for `evidence`, or None when not a single token matches."""
    index = context if isinstance(context, TokenIndex) else TokenIndex(context)
    ev_text = evidence.strip()
    if not ev_text:
        return None
    ev, ev_starts, ev_ends = tokenize(ev_text)
    at = _find_exact(index, ev_text, ev, ev_starts, ev_ends)
    if at >= 0:
        return Alignment(at, at + len(ev_text), 1.0, "exact")
    if not ev or not index.tokens:
        return None
    m = len(ev)
    s = _find_token_run(index, ev)
    if s is not None:
        return Alignment(index.starts[s], index.ends[s + m - 1], 1.0, "tokens")
    best: tuple[int, int, int, int] | None = None  # (matched, -start, start_tok, end_tok)
    slack = max(8, m // 2)
    max_gap = max(3, m // 3)
    for o in _candidates(index, ev, max_occurrences, candidates):
        lo, hi = max(0, o - slack), min(len(index), o + m + slack)
        if lo >= hi:
            continue
        run = _run(ev, index.tokens, lo, hi, max_gap)
        if run is None:
            continue
        # LCS may have matched a word far away when a near copy was there too: align again
        # around the run, where only near copies are left to choose from
        near = _run(ev, index.tokens, max(0, run[1] - max_gap), min(len(index), run[2] + max_gap), max_gap)
        if near is not None and near[0] >= run[0]:
            run = near
        matched, a, b = run
        key = (matched, -a, a, b)
        if best is None or key > best:
            best = key
    if best is None or best[0] == 0:
        return None
    matched, _, a, b = best
    return Alignment(index.starts[a], index.ends[b - 1], round(matched / m, 4), "fuzzy")


def align_all(pieces: list[str], context: str | TokenIndex,
              threshold: float = 0.8) -> tuple[list[Alignment], list[tuple[str, float]]]:
    """Align every piece; keep those with quality >= threshold. Returns (kept, dropped as (text, quality))."""
    index = context if isinstance(context, TokenIndex) else TokenIndex(context)
    kept, dropped = [], []
    for piece in pieces:
        if not piece or not piece.strip():
            continue
        a = align(piece, index)
        if a is not None and a.quality >= threshold:
            kept.append(a)
        else:
            dropped.append((piece, 0.0 if a is None else a.quality))
    return kept, dropped
