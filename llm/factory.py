"""Build the configured generator (the `generator` config group)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llm.base import Generator
from llm.cache import CachedGenerator, ResponseCache

BACKENDS = ("transformers",)


def build_generator(cfg: dict[str, Any], cache_dir: str | Path | None = None) -> Generator:
    backend = cfg.get("backend")
    if backend == "transformers":
        from llm.transformers_backend import TransformersGenerator

        gen: Generator = TransformersGenerator(
            model=cfg["model"], context_window=cfg.get("context_window"), dtype=cfg.get("dtype", "float32"),
            device=cfg.get("device", "cpu"), threads=cfg.get("threads"), temperature=cfg.get("temperature", 0.0),
        )
    else:
        raise ValueError(f"generator.backend={backend!r} is not one of: {', '.join(BACKENDS)}")
    if cache_dir is not None:
        gen = CachedGenerator(gen, ResponseCache(Path(cache_dir) / "responses.sqlite"))
    return gen
