"""Exact character offsets for byte-level BPE tokenizers whose vocabulary lacks some bytes.

A byte-level BPE tokenizer (GPT-2 style: SmolLM2, Llama 3, Qwen) turns text into UTF-8 bytes and
each byte into a printable stand-in character. When the vocabulary has no token for some byte
(SmolLM2 lacks a few control characters and the lead bytes 0xF1/0xF2 of unassigned planes), the
byte is dropped silently, and the fast tokenizer's `offset_mapping` then gives the *next* tokens of
the same word the span of the dropped character: in "\\x04:" the ':' is reported at (0, 1).
Chunking and truncation cut text at token offsets, so such a shift would leave characters in no
chunk or cut a window one character early.

`ByteTable.for_tokenizer(hf)` reads the bytes of every vocabulary entry once. `realign` then checks
cheaply whether the token bytes add up to the text's bytes (nothing dropped: the tokenizer's own
offsets are right) and otherwise recomputes every span by matching the token bytes against the
text's bytes in order, skipping only bytes the vocabulary cannot represent.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

log = logging.getLogger(__name__)


def byte_stand_ins() -> dict[int, str]:
    """Byte -> the printable character that stands for it in a byte-level BPE vocabulary (GPT-2's map).

    Printable Latin-1 bytes stand for themselves; the others (controls, space, 0x7F-0xA0, 0xAD)
    are moved, in byte order, to the characters from U+0100 on.
    """
    keep = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAC + 1), *range(0xAE, 0xFF + 1)]
    table = {b: chr(b) for b in keep}
    moved = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + moved)
            moved += 1
    return table


def _no_normaliser(normalizer: Any) -> bool:
    """None, or an empty `Sequence` (transformers 4.x's conversion of a GGUF byte-level tokenizer)."""
    if normalizer is None:
        return True
    state = json.loads(normalizer.__getstate__())
    return state.get("type") == "Sequence" and not state.get("normalizers")


@dataclass
class ByteTable:
    """The bytes of every token id of one byte-level tokenizer, and the bytes it cannot represent."""

    token_bytes: list[bytes]
    lengths: np.ndarray  # len(token_bytes[i]) for each id
    unrepresentable: frozenset[int]

    @classmethod
    def for_tokenizer(cls, hf: Any) -> ByteTable | None:
        """The table for a Hugging Face fast tokenizer, or None when it is not plain byte-level BPE."""
        backend = getattr(hf, "backend_tokenizer", None)
        if backend is None or not _no_normaliser(backend.normalizer):
            return None  # a normaliser changes the text: byte matching against the input would be wrong
        pre = backend.pre_tokenizer
        if pre is None or b'"ByteLevel"' not in pre.__getstate__():
            return None
        from_char = {c: b for b, c in byte_stand_ins().items()}
        vocab = hf.get_vocab()
        added = hf.get_added_vocab()
        token_bytes: list[bytes] = [b""] * (max(vocab.values()) + 1)
        for token, i in vocab.items():
            if token in added:
                token_bytes[i] = token.encode("utf-8")
                continue
            try:
                token_bytes[i] = bytes(from_char[c] for c in token)
            except KeyError:
                return None  # not a byte-level vocabulary after all
        single = {t for t in token_bytes if len(t) == 1}
        missing = frozenset(b for b in range(256) if bytes([b]) not in single)
        return cls(token_bytes, np.fromiter(map(len, token_bytes), dtype=np.int64, count=len(token_bytes)), missing)

    def realign(self, text: str, ids: Sequence[int], offsets: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """`offsets` when nothing was dropped; else exact spans recomputed from the token bytes."""
        data = text.encode("utf-8")
        if not len(ids) or int(self.lengths[np.asarray(ids)].sum()) == len(data):
            return offsets
        char_of = np.repeat(np.arange(len(text)), [len(c.encode("utf-8")) for c in text]).tolist()
        out: list[tuple[int, int]] = []
        cursor = 0
        for i in ids:
            piece = self.token_bytes[i]
            pos = data.find(piece, cursor) if piece else cursor
            if pos < 0 or any(b not in self.unrepresentable for b in data[cursor:pos]):
                log.debug("token bytes do not match the text at byte %d; keeping the tokenizer's offsets", cursor)
                return offsets
            if not piece:  # an id with no bytes (never produced by encoding): an empty span where we are
                at = char_of[pos] if pos < len(data) else len(text)
                out.append((at, at))
                continue
            end = pos + len(piece)
            out.append((char_of[pos], char_of[end - 1] + 1))
            cursor = end
        return out
