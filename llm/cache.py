"""Response cache: a rerun of a finished sweep makes no generation call.

Keyed by (model id, exact messages, max new tokens, sampling params). SQLite in WAL mode so that
parallel Hydra jobs can share one cache file. The first measured latency and token counts are
kept, so records of a cached rerun report what generation actually cost.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import asdict
from pathlib import Path

from llm.base import Generator
from llm.prompt import Generation, Prompt


def response_key(model_id: str, prompt: Prompt, params: dict) -> str:
    payload = json.dumps(
        {"model": model_id, "messages": prompt.messages(), "max_new_tokens": prompt.max_new_tokens, "params": params},
        sort_keys=True, ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


class ResponseCache:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=120, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value TEXT NOT NULL)")

    def get(self, key: str) -> Generation | None:
        row = self._db.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            return Generation(**{**json.loads(row[0]), "cached": True})
        except (TypeError, ValueError):
            return None  # an unreadable entry is recomputed, never trusted

    def put(self, key: str, gen: Generation) -> None:
        value = json.dumps({**asdict(gen), "cached": False}, ensure_ascii=False)
        self._db.execute("INSERT OR REPLACE INTO responses (key, value) VALUES (?, ?)", (key, value))

    def close(self) -> None:
        self._db.close()


class CachedGenerator(Generator):
    """Wraps any generator; prompts already answered are served from the cache."""

    def __init__(self, inner: Generator, cache: ResponseCache):
        self.inner, self.cache = inner, cache
        self.model_id, self.context_window, self.tokenizer = inner.model_id, inner.context_window, inner.tokenizer
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
