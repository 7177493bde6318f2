"""Content-addressed on-disk caches for chunks, embeddings and indexes.

Keys are hashes of what determines the content: (document hash, chunker config, tokenizer) for
chunks; plus the embedder's fingerprint for embeddings; plus the index settings for indexes. So a
top-k, order or budget sweep finds everything cached, and a chunk-size sweep embeds once per size.

Layout: `<root>/<kind>/<key[:2]>/<key>.<ext>`. Every entry starts with a line holding the SHA-256
of its payload; a corrupted or truncated entry fails that check, counts as a miss and is rewritten.
Writes go to a temporary file in the same folder and are moved into place with `os.replace`, so
parallel processes (Hydra joblib or SLURM jobs over one cache) never see half-written entries; two
processes computing the same entry both write identical content and the last rename wins.

Nothing here unpickles: arrays are `.npy` (allow_pickle=False), faiss indexes use faiss's own
serialisation, metadata is JSON.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

import numpy as np

log = logging.getLogger(__name__)

KINDS = ("chunks", "embeddings", "indexes", "sparse", "queries", "timings")  # timings: measured index build seconds


def content_key(*parts: Any) -> str:
    """Stable hash of JSON-able parts (dicts are key-sorted)."""
    payload = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class DiskCache:
    """Checksummed, atomically written blobs; hit/miss counts per kind."""

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
        path = self._path(kind, key, ext)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key[:8]}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload)
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            raise

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
        return {k: dict(self.stats[k]) for k in KINDS if k in self.stats}


# ---------------------------------------------------------------- (de)serialisers, no pickle
def dump_array(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(a), allow_pickle=False)
    return buf.getvalue()


def load_array(b: bytes) -> np.ndarray:
    return np.load(io.BytesIO(b), allow_pickle=False)


def dump_json(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def load_json(b: bytes) -> Any:
    return json.loads(b.decode())


def dump_faiss(index) -> bytes:
    import faiss

    return faiss.serialize_index(index).tobytes()


def load_faiss(b: bytes):
    import faiss

    return faiss.deserialize_index(np.frombuffer(b, dtype=np.uint8))
