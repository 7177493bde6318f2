"""What the RAG arm caches on disk and under which keys: chunks, embeddings and indexes.

Keys are hashes of what determines the content: (document hash, chunker config, tokenizer) for
chunks; plus the embedder's fingerprint for embeddings; plus the index settings for indexes. So a
top-k, order or budget sweep finds everything cached, and a chunk-size sweep embeds once per size.

The store itself is `eval.storage.DiskCache` (checksummed entries, atomic writes, safe for
parallel processes); this module holds the keys, the entry kinds and the (de)serialisers.

Nothing here unpickles: arrays are `.npy` (allow_pickle=False), faiss indexes use faiss's own
serialisation, metadata is JSON.
"""

from __future__ import annotations

import hashlib
import io
import json
from typing import Any

import numpy as np

KINDS = ("chunks", "embeddings", "indexes", "sparse", "queries", "timings")  # timings: measured index build seconds


def content_key(*parts: Any) -> str:
    """Stable hash of JSON-able parts (dicts are key-sorted)."""
    payload = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


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
