"""records.jsonl: one JSON line per sample, appended as each sample finishes.

Each line is written with a single `write` on a file opened for appending and synced, so a crash
loses at most the line being written; a torn last line is cut off on the next open. The last
record of an id wins, so a sample that failed and later succeeded counts once.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

FINAL = ("ok", "skipped", "retrieved")  # statuses that are not retried on resume (retrieved: a retrieval-only run)


class RecordStore:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def load(self) -> dict[str, dict[str, Any]]:
        """Records by sample id, repairing a torn tail left by a crash."""
        records: dict[str, dict[str, Any]] = {}
        if not self.path.exists():
            return records
        data = self.path.read_bytes()
        good_end = 0
        pos = 0
        for lineno, raw in enumerate(data.splitlines(keepends=True), 1):
            end = pos + len(raw)
            if not raw.endswith(b"\n"):
                log.warning("%s: dropping an unfinished last line (%d bytes) left by an interrupted run", self.path, len(raw))
                break
            try:
                rec = json.loads(raw)
                records[rec["id"]] = rec
            except (ValueError, KeyError, TypeError) as err:
                raise ValueError(f"{self.path}:{lineno}: not a valid record ({err}); move the file away to start over") from None
            good_end = pos = end
        if good_end < len(data):
            with open(self.path, "r+b") as f:
                f.truncate(good_end)
        return records

    def append(self, record: dict[str, Any]) -> None:
        line = (json.dumps(record, ensure_ascii=False, default=_jsonable) + "\n").encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)


def write_json_atomic(path: str | Path, obj: Any) -> None:
    """Write JSON to `path` through a synced temporary file moved into place: a reader or a crash
    sees the old file or the new one, never half of it."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(obj, fh, indent=2, ensure_ascii=False, default=_jsonable)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _jsonable(obj: Any) -> Any:
    if hasattr(obj, "item"):
        return obj.item()
    if isinstance(obj, (set, tuple)):
        return list(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")
