"""Response cache: a rerun of a finished sweep makes no generation call.

Keyed by (model id, exact messages, max new tokens, sampling params). The first measured latency
and token counts are kept, so records of a cached rerun report what generation actually cost.

Safe for parallel Hydra jobs (joblib or SLURM array jobs sharing one cache file): SQLite in WAL
mode, a busy timeout, and bounded retries with backoff when SQLite still answers "database is
locked" (which the busy timeout does not cover, e.g. while another process switches the journal
mode). Every entry carries a checksum of its key and value: an entry that fails it (a damaged
file, a half-written or hand-edited row) is logged and recomputed, never trusted.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import sqlite3
import threading
import time
from dataclasses import asdict, fields
from pathlib import Path
from typing import Callable, TypeVar

from llm.base import Generator
from llm.prompt import Generation, Prompt

log = logging.getLogger(__name__)
T = TypeVar("T")
_GENERATION_FIELDS = {f.name for f in fields(Generation)}


def response_key(model_id: str, prompt: Prompt, params: dict) -> str:
    payload = json.dumps(
        {"model": model_id, "messages": prompt.messages(), "max_new_tokens": prompt.max_new_tokens, "params": params},
        sort_keys=True, ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def entry_checksum(key: str, value: str) -> str:
    return hashlib.sha256(f"{key}\n{value}".encode()).hexdigest()


def _is_lock_error(err: sqlite3.OperationalError) -> bool:
    text = str(err).lower()
    return "locked" in text or "busy" in text


class ResponseCache:
    """One SQLite file of generations. `busy_timeout_s`: how long SQLite itself waits for a lock;
    `lock_retries`: how many more times an operation is retried when it still finds one."""

    def __init__(self, path: str | Path, busy_timeout_s: float = 60.0, lock_retries: int = 30):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.lock_retries = lock_retries
        self.retries = 0    # operations retried after "database is locked"
        self.corrupted = 0  # entries that failed their checksum or did not parse
        self._lock = threading.Lock()
        self._db = self._retry(lambda: sqlite3.connect(self.path, timeout=busy_timeout_s, isolation_level=None,
                                                       check_same_thread=False))
        self._retry(lambda: self._db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}"))
        self._retry(lambda: self._db.execute("PRAGMA journal_mode=WAL"))
        self._retry(lambda: self._db.execute(
            "CREATE TABLE IF NOT EXISTS generations (key TEXT PRIMARY KEY, value TEXT NOT NULL, checksum TEXT NOT NULL)"))

    def _retry(self, op: Callable[[], T]) -> T:
        for attempt in range(self.lock_retries + 1):
            try:
                return op()
            except sqlite3.OperationalError as err:
                if not _is_lock_error(err) or attempt == self.lock_retries:
                    if _is_lock_error(err):
                        raise sqlite3.OperationalError(
                            f"response cache {self.path}: still locked after {self.lock_retries} retries ({err})"
                        ) from err
                    raise
                self.retries += 1
                time.sleep(min(2.0, 0.02 * 2 ** attempt) * random.uniform(0.5, 1.0))
        raise AssertionError("unreachable")

    def get(self, key: str) -> Generation | None:
        with self._lock:
            row = self._retry(lambda: self._db.execute(
                "SELECT value, checksum FROM generations WHERE key = ?", (key,)).fetchone())
        if row is None:
            return None
        value, checksum = row
        problem = None
        if not isinstance(value, str) or checksum != entry_checksum(key, value):
            problem = "checksum mismatch"
        else:
            try:
                data = json.loads(value)
                if not isinstance(data, dict) or set(data) - _GENERATION_FIELDS:
                    raise ValueError("unexpected fields")
                return Generation(**{**data, "cached": True})
            except (TypeError, ValueError) as err:
                problem = f"unreadable ({err})"
        self.corrupted += 1
        log.warning("response cache %s: entry %s is corrupted (%s); recomputing it", self.path, key[:16], problem)
        return None

    def put(self, key: str, gen: Generation) -> None:
        value = json.dumps({**asdict(gen), "cached": False}, ensure_ascii=False, sort_keys=True)
        with self._lock:
            self._retry(lambda: self._db.execute(
                "INSERT OR REPLACE INTO generations (key, value, checksum) VALUES (?, ?, ?)",
                (key, value, entry_checksum(key, value))))

    def __len__(self) -> int:
        with self._lock:
            return self._retry(lambda: self._db.execute("SELECT COUNT(*) FROM generations").fetchone()[0])

    def close(self) -> None:
        self._db.close()


class CachedGenerator(Generator):
    """Wraps any generator; prompts already answered are served from the cache."""

    def __init__(self, inner: Generator, cache: ResponseCache):
        self.inner, self.cache = inner, cache
        self.model_id, self.context_window, self.tokenizer = inner.model_id, inner.context_window, inner.tokenizer
        self.generates = inner.generates
        self.calls = 0  # prompts actually sent to the backend

    def prompt_tokens(self, prompt: Prompt) -> int:
        return self.inner.prompt_tokens(prompt)

    def sampling_params(self) -> dict:
        return self.inner.sampling_params()

    def generate(self, prompts: list[Prompt]) -> list[Generation]:
        params = self.inner.sampling_params()
        keys = [response_key(self.model_id, p, params) for p in prompts]
        out: list[Generation | None] = [self.cache.get(k) for k in keys]
        missing = [i for i, g in enumerate(out) if g is None]
        if missing:
            fresh = self.inner.generate([prompts[i] for i in missing])
            self.calls += len(missing)
            for i, g in zip(missing, fresh):
                self.cache.put(keys[i], g)
                out[i] = g
        return out  # type: ignore[return-value]
