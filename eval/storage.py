"""Caches and files on disk: the one ground-level home every layer asks (eval/ imports nothing above).

- `CheckedSQLiteCache` (implemented in `eval.sqlite_cache`): a checked key -> text store in one
  SQLite file shared by processes; the response cache (`llm.cache`) and the judgment cache
  (`eval.metrics.judge`) are built on it.
- `DiskCache`: checksummed blobs in a folder tree, `<root>/<kind>/<key[:2]>/<key>.<ext>`, each
  entry starting with a line holding the SHA-256 of its payload; a corrupted or truncated entry
  fails that check, counts as a miss and is rewritten. The RAG arm's chunks, embeddings and
  indexes use it (their keys live in `rag.cache`).
- `atomic_write_bytes`: a temporary file in the same folder moved into place with `os.replace`,
  so parallel processes (Hydra joblib or SLURM jobs over one cache) never see half of a file; two
  writers of identical content both succeed and the last rename wins.

(`experiments.records.write_json_atomic`, the runner's metrics.json writer, predates this module
and stays with the record schema.)
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

from eval.sqlite_cache import CheckedSQLiteCache, entry_checksum

__all__ = ["CheckedSQLiteCache", "DiskCache", "atomic_write_bytes", "entry_checksum"]

log = logging.getLogger(__name__)


def atomic_write_bytes(path: str | Path, data: bytes, fsync: bool = False) -> None:
    """Write `data` to `path` through a temporary file in the same folder moved into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:16]}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if fsync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


class DiskCache:
    """Checksummed, atomically written blobs; hit/miss counts per kind. `root=None`: caches nothing."""

    def __init__(self, root: str | Path | None):
        self.root = Path(root) if root is not None else None
        self.stats: dict[str, dict[str, int]] = defaultdict(lambda: {"hits": 0, "misses": 0, "corrupt": 0})

    @property
    def enabled(self) -> bool:
        return self.root is not None

    def _path(self, kind: str, key: str, ext: str) -> Path:
        assert self.root is not None
        return self.root / kind / key[:2] / f"{key}.{ext}"

    def read(self, kind: str, key: str, ext: str) -> bytes | None:
        if self.root is None:
            return None
        path = self._path(kind, key, ext)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        head, sep, payload = raw.partition(b"\n")
        if not sep or head.decode("ascii", "replace") != hashlib.sha256(payload).hexdigest():
            self.stats[kind]["corrupt"] += 1
            log.warning("cache entry %s is corrupted; recomputing it", path)
            return None
        return payload

    def write(self, kind: str, key: str, ext: str, payload: bytes) -> None:
        if self.root is None:
            return
        atomic_write_bytes(self._path(kind, key, ext), hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload)

    def get_or_compute(self, kind: str, key: str, ext: str, compute: Callable[[], Any],
                       dump: Callable[[Any], bytes], load: Callable[[bytes], Any]) -> Any:
        payload = self.read(kind, key, ext)
        if payload is not None:
            try:
                value = load(payload)
            except Exception as err:  # noqa: BLE001 - a bad entry is recomputed, never trusted
                self.stats[kind]["corrupt"] += 1
                log.warning("cache entry %s/%s unreadable (%s); recomputing it", kind, key, err)
            else:
                self.stats[kind]["hits"] += 1
                return value
        self.stats[kind]["misses"] += 1
        value = compute()
        self.write(kind, key, ext, dump(value))
        return value

    def summary(self) -> dict[str, dict[str, int]]:
        return {k: dict(self.stats[k]) for k in sorted(self.stats)}
