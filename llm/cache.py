"""Response cache: a rerun of a finished sweep makes no generation call.

Keyed by (model id, exact messages, max new tokens, sampling params). The first measured latency
and token counts are kept, so records of a cached rerun report what generation actually cost; with them the
setup they were measured under (`Generation.timed_under`: the generator's `timing_context()`, e.g. backend,
device, prefix reuse, batch policy). A hit measured under another setup (or before setups were kept) never passes
its timings off as this one's: a local generator (`Generator.local`: machine time only) answers it again and the
entry is replaced; a remote one (a paid API) replays the answer marked `timings_replayed`, which the records and
the report show.

The store is `eval.storage.JSONCache` (table `generations`, one JSON `Generation`
per entry): safe for parallel Hydra jobs (joblib or SLURM array jobs sharing one cache file) through
SQLite's WAL mode, a busy timeout and bounded retries with backoff when SQLite still answers
"database is locked"; every entry carries a checksum of its key and value, and an entry that fails
it or does not parse (a damaged file, a half-written or hand-edited row) is logged and recomputed,
never trusted; a file that is not an SQLite database at all is moved aside and rebuilt empty.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import asdict, fields, replace
from pathlib import Path

from eval.storage import JSONCache, entry_checksum
from llm.base import Generator
from llm.prompt import Generation, Prompt

log = logging.getLogger(__name__)
_GENERATION_FIELDS = {f.name for f in fields(Generation)}
TABLE = "generations"

__all__ = ["CachedGenerator", "ResponseCache", "entry_checksum", "response_key"]


def response_key(model_id: str, prompt: Prompt, params: dict) -> str:
    entry: dict = {"model": model_id, "messages": prompt.messages(), "max_new_tokens": prompt.max_new_tokens,
                   "params": params}
    # only when set, so keys of prompts without them stay what they were
    if not prompt.chat:
        entry["chat"] = False
    if prompt.repetition_penalty is not None:
        entry["repetition_penalty"] = prompt.repetition_penalty
    if prompt.sample:
        entry["sample"] = prompt.sample
    payload = json.dumps(entry, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()


class ResponseCache(JSONCache):
    """One SQLite file of generations (table `generations`, one JSON `Generation` per entry).
    `busy_timeout_s`: how long SQLite itself waits for a lock; `lock_retries`: how many more times
    an operation is retried when it still finds one."""

    def __init__(self, path: str | Path, busy_timeout_s: float = 60.0, lock_retries: int = 30):
        super().__init__(path, TABLE, label="response cache", logger=log, busy_timeout_s=busy_timeout_s,
                         lock_retries=lock_retries)

    def get(self, key: str) -> Generation | None:
        data = self.get_json(key, _check_generation)
        return None if data is None else Generation(**{**data, "cached": True})

    def put(self, key: str, gen: Generation, timed_under: dict | None = None) -> None:
        self.put_json(key, {**asdict(gen), "cached": False, "timings_replayed": False,
                            "timed_under": timed_under if timed_under is not None else gen.timed_under})


def _check_generation(data: dict) -> None:
    if set(data) - _GENERATION_FIELDS:
        raise ValueError("unexpected fields")
    Generation(**data)  # missing fields: TypeError


class CachedGenerator(Generator):
    """Wraps any generator; prompts already answered are served from the cache."""

    def __init__(self, inner: Generator, cache: ResponseCache):
        self.inner, self.cache = inner, cache
        self.model_id, self.context_window, self.tokenizer = inner.model_id, inner.context_window, inner.tokenizer
        self.generates = inner.generates
        self.local = inner.local
        self.calls = 0  # prompts actually sent to the backend
        self.retimed = 0  # hits answered again: their timings were measured under another setup
        self.replayed = 0  # hits served with another setup's timings, marked (remote generators)

    def timing_context(self) -> dict:
        return self.inner.timing_context()

    def prompt_tokens(self, prompt: Prompt) -> int:
        return self.inner.prompt_tokens(prompt)

    def sampling_params(self) -> dict:
        return self.inner.sampling_params()

    def generate(self, prompts: list[Prompt]) -> list[Generation]:
        params = self.inner.sampling_params()
        keys = [response_key(self.model_id, p, params) for p in prompts]
        context = self.inner.timing_context()
        out: list[Generation | None] = [self._served(self.cache.get(k), context) for k in keys]
        missing = [i for i, g in enumerate(out) if g is None]
        if missing:
            fresh = self.inner.generate([prompts[i] for i in missing])
            self.calls += len(missing)
            for i, g in zip(missing, fresh, strict=True):
                self.cache.put(keys[i], g, context)
                out[i] = g
        done = [g for g in out if g is not None]
        if len(done) != len(out):
            raise RuntimeError(f"{len(out) - len(done)} of {len(out)} prompts got no generation")
        return done

    def _served(self, hit: Generation | None, context: dict) -> Generation | None:
        """A cache hit as served under `context`: as it is when its timings were measured under the same setup;
        else None (answer it again) for a local generator, or marked `timings_replayed` for a remote one."""
        if hit is None or hit.timed_under == context:
            return hit
        if self.local:
            self.retimed += 1
            return None
        self.replayed += 1
        return replace(hit, timings_replayed=True)
