"""A GGUF model's weights, converted once and kept.

transformers reads a GGUF file by parsing all of it (the vocabulary field by field, in Python) and de-quantizing
every tensor: about 24 s for the bundled SmolLM2 on 2 idle cores, paid by every process that generates (each run
of a sweep, the demo, every test process). The converted model is saved once as safetensors (about 0.5 GB for
SmolLM2 in float32) under `$RAGLC_WEIGHTS_CACHE`, else `$XDG_CACHE_HOME/rag-or-long-context/weights`
(`~/.cache/...`), and read back in well under a second, tensor for tensor the same. The copy is named by the file
(path, size, modification time), the dtype and the transformers and torch versions that converted it, so a changed
file or library converts anew. A copy that cannot be read is converted again, a half-written one that a killed
save left is removed by the next save an hour on, and `RAGLC_WEIGHTS_CACHE=off` keeps nothing (every load
converts).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def weights_cache_dir() -> Path | None:
    """Where converted GGUF weights are kept; None when `RAGLC_WEIGHTS_CACHE=off`."""
    chosen = os.environ.get("RAGLC_WEIGHTS_CACHE")
    if chosen:
        return None if chosen.strip().lower() == "off" else Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "rag-or-long-context" / "weights"


def kept_copy(gguf_path: Path, dtype: str) -> Path | None:
    """Where the weights converted from `gguf_path` in `dtype` are kept (None: nothing is kept)."""
    import torch
    import transformers

    folder = weights_cache_dir()
    if folder is None:
        return None
    stat = gguf_path.stat()
    key = hashlib.sha256(json.dumps([str(gguf_path.resolve()), stat.st_size, stat.st_mtime_ns, dtype,
                                     transformers.__version__, torch.__version__]).encode()).hexdigest()[:16]
    return folder / f"{gguf_path.stem}-{dtype}-{key}"


def load_kept(gguf_path: Path, dtype: str, convert: Callable[[], Any], read: Callable[[Path], Any]) -> Any:
    """The model converted from `gguf_path`: read from its kept copy (`read(folder)`) when there is one, else
    `convert()` and kept (written whole, then renamed: a concurrent process's copy is kept if it won)."""
    saved = kept_copy(gguf_path, dtype)
    if saved is None:
        return convert()
    if saved.is_dir():
        try:
            return read(saved)
        except Exception as exc:  # noqa: BLE001 - safetensors, json and OS errors alike mean "convert again"
            log.warning("%s: unreadable converted weights (%s): converting %s again", saved, exc, gguf_path.name)
            shutil.rmtree(saved, ignore_errors=True)
    model = convert()
    _drop_stale_parts(saved.parent)
    tmp = saved.with_name(f"{saved.name}.{os.getpid()}.{time.time_ns()}.tmp")
    try:
        model.save_pretrained(tmp)
        tmp.rename(saved)
        log.info("kept the converted weights of %s in %s", gguf_path.name, saved)
    except OSError as exc:  # a full disk or a copy another process kept first: this run goes on converted
        log.info("converted weights of %s not kept (%s)", gguf_path.name, exc)
        shutil.rmtree(tmp, ignore_errors=True)
    return model


STALE_S = 3600.0  # a half-written copy untouched this long was left by a process that died while saving


def _drop_stale_parts(folder: Path) -> None:
    """Remove the half-written copies (`*.tmp`, about 0.5 GB each) that processes killed while saving left in
    `folder`; a save still under way (touched within STALE_S) is left alone."""
    if not folder.is_dir():
        return
    for part in folder.glob("*.tmp"):
        try:
            if time.time() - part.stat().st_mtime > STALE_S:
                shutil.rmtree(part, ignore_errors=True)
        except OSError:  # another process removed or renamed it first
            continue
