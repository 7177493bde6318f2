"""Parsed documents cached by file content, so a folder is parsed once and its char offsets stay stable.

An entry is keyed by `eval.corpus.parsers.document_key` (SHA-256 of the file's bytes, its suffix, the parser
version and the parsing libraries' versions) and holds the parse as JSON: `text`, `title`,
`page_starts`, `warnings`, `footnotes`, or `unparsable` with the reason a file gives no text (a broken file is not
parsed again either). It lives in `<cache_dir>/parsed_documents.sqlite`, an `eval.storage.JSONCache`
(checked on every read, safe for parallel runs); an entry that fails its checksum or does not have
this shape is logged, counted and parsed again, never an error.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from eval.corpus.parsers import ParsedDocument, Unparsable
from eval.storage import JSONCache

log = logging.getLogger(__name__)

FILE_NAME = "parsed_documents.sqlite"


def _check(entry: dict[str, Any]) -> None:
    """Raise ValueError/TypeError unless `entry` is a parse as `ParsedDocumentCache.put` writes it."""
    if set(entry) == {"unparsable"}:
        if not isinstance(entry["unparsable"], str):
            raise TypeError("unparsable: not text")
        return
    if set(entry) - {"footnotes"} != {"text", "title", "page_starts", "warnings"}:
        raise ValueError(f"unexpected fields {sorted(entry)}")
    if type(entry.get("footnotes", 0)) is not int:
        raise TypeError("footnotes must be a count")
    text, starts = entry["text"], entry["page_starts"]
    if not isinstance(text, str) or not isinstance(entry["title"], str):
        raise TypeError("text and title must be text")
    if not all(isinstance(w, str) for w in entry["warnings"]):
        raise TypeError("warnings must be text")
    if not all(type(s) is int for s in starts) or starts != sorted(starts) or any(s > len(text) for s in starts):
        raise ValueError("page_starts must be ascending offsets into the text")


class ParsedDocumentCache:
    """Parses by `document_key` in the SQLite file `path`; `hits` and `misses` count the look-ups."""

    def __init__(self, path: str | Path):
        self.store = JSONCache(path, "parsed_documents", label="parsed-document cache", logger=log)
        self.path = self.store.path
        self.hits = 0
        self.misses = 0

    @classmethod
    def in_folder(cls, cache_dir: str | Path | None) -> ParsedDocumentCache | None:
        """The cache in `cache_dir` (None: no cache)."""
        return None if cache_dir in (None, "") else cls(Path(cache_dir) / FILE_NAME)

    @property
    def corrupted(self) -> int:
        """Entries read as misses because they failed their check."""
        return self.store.corrupted

    def get(self, key: str) -> ParsedDocument | Unparsable | None:
        entry = self.store.get_json(key, _check)
        if entry is None:
            self.misses += 1
            return None
        self.hits += 1
        if "unparsable" in entry:
            return Unparsable(entry["unparsable"])
        return ParsedDocument("", entry["text"], entry["title"], entry["page_starts"], entry["warnings"],
                              entry.get("footnotes", 0))

    def put(self, key: str, parsed: ParsedDocument | Unparsable) -> None:
        if isinstance(parsed, Unparsable):
            self.store.put_json(key, {"unparsable": str(parsed)})
            return
        self.store.put_json(key, {"text": parsed.text, "title": parsed.title, "page_starts": parsed.page_starts,
                                  "warnings": parsed.warnings, "footnotes": parsed.footnotes})

    def close(self) -> None:
        self.store.close()


__all__ = ["FILE_NAME", "ParsedDocumentCache"]
