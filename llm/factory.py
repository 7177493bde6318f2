"""Build the configured generator (the `generator` config group).

Backends are created once per process and configuration, so the jobs of a Hydra multirun
(which the basic launcher runs one after another in one process) load the model once.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from llm.base import Generator
from llm.cache import CachedGenerator, ResponseCache

BACKENDS = ("transformers",)


@lru_cache(maxsize=2)
def _backend(cfg_json: str) -> Generator:
    cfg = json.loads(cfg_json)
    backend = cfg.get("backend")
    if backend == "transformers":
        from llm.transformers_backend import TransformersGenerator

        return TransformersGenerator(
            model=cfg["model"], context_window=cfg.get("context_window"), dtype=cfg.get("dtype", "float32"),
            device=cfg.get("device", "cpu"), threads=cfg.get("threads"), temperature=cfg.get("temperature", 0.0),
            reuse_prefix=cfg.get("reuse_prefix", True),
        )
    raise ValueError(f"generator.backend={backend!r} is not one of: {', '.join(BACKENDS)}")


def build_generator(cfg: dict[str, Any], cache_dir: str | Path | None = None) -> Generator:
    gen = _backend(json.dumps(cfg, sort_keys=True))
    if cache_dir is not None:
        gen = CachedGenerator(gen, ResponseCache(Path(cache_dir) / "responses.sqlite"))
    return gen
