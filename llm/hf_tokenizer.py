"""Hugging Face tokenizers by model spec, and the prompt text and token counts every backend shares.

The local transformers backend, the OpenAI-compatible backend (counting tokens before a request) and the
vLLM backend render a prompt and count its tokens the same way: the chat template where the tokenizer has
one and the prompt is a chat prompt, else the raw text with the tokenizer's own special tokens.
"""

from __future__ import annotations

import hashlib
import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from llm.bundled import resolve_model
from llm.prompt import Prompt

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def load_hf_tokenizer(spec: str, trust_remote_code: bool = False):
    """A Hugging Face tokenizer by model spec: `bundled:smollm2`, a local path or `.gguf`, a hub id.
    Loaded once per process and spec (treat it as read-only)."""
    # one cache key however it is called (`f(spec)` and `f(spec, False)` are two keys to lru_cache): SmolLM2's
    # tokenizer takes seconds to convert from its GGUF file
    return _load_hf_tokenizer(str(spec), bool(trust_remote_code))


@lru_cache(maxsize=8)
def _load_hf_tokenizer(spec: str, trust_remote_code: bool):
    from transformers import AutoTokenizer

    path, gguf_file = resolve_model(spec)
    if gguf_file:
        return _gguf_tokenizer(Path(path) / gguf_file)
    try:
        return AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code)
    except OSError as err:
        raise FileNotFoundError(
            f"cannot load tokenizer {spec!r}: {err}. Give a local path, a bundled model "
            "(bundled:smollm2), or a hub id present in the local cache."
        ) from err


def load_counting_tokenizer(spec: str):
    """A tokenizer for counting and cutting tokens only (no model behind it: `generator=none`): read from its saved
    files without importing transformers (and torch) where that gives what transformers would
    (llm/tokenizer_files.py), else `load_hf_tokenizer`'s."""
    from llm.tokenizer_files import readable

    folder = saved_folder(str(spec))
    if folder is not None and readable(folder):
        return _tokenizer_files(str(folder))
    return load_hf_tokenizer(spec)


@lru_cache(maxsize=8)
def _tokenizer_files(folder: str):
    from llm.tokenizer_files import TokenizerFiles

    return TokenizerFiles(Path(folder))


def saved_folder(spec: str) -> Path | None:
    """The folder a model spec's tokenizer is saved in: a model folder, or the converted copy of a GGUF file's
    tokenizer once a first load has made it; None for a hub id or a GGUF file not converted yet."""
    path, gguf_file = resolve_model(spec)
    if gguf_file:
        saved = converted_copy(Path(path) / gguf_file)
        return saved if saved.is_dir() else None
    return Path(path) if Path(path).is_dir() else None


def tokenizer_cache_dir() -> Path:
    """Where tokenizers converted from GGUF files are kept: `$RAGLC_TOKENIZER_CACHE`, else
    `$XDG_CACHE_HOME/rag-or-long-context/tokenizers` (`~/.cache/...`)."""
    if os.environ.get("RAGLC_TOKENIZER_CACHE"):
        return Path(os.environ["RAGLC_TOKENIZER_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "rag-or-long-context" / "tokenizers"


def converted_copy(gguf_path: Path) -> Path:
    """Where the tokenizer converted from `gguf_path` is kept: named by the file (path, size, modification time) and
    the transformers and tokenizers versions that converted it (read from their installed metadata: importing
    transformers takes seconds)."""
    from importlib.metadata import version

    stat = gguf_path.stat()
    key = hashlib.sha256(json.dumps([str(gguf_path.resolve()), stat.st_size, stat.st_mtime_ns,
                                     version("transformers"), version("tokenizers")]).encode()).hexdigest()[:16]
    return tokenizer_cache_dir() / f"{gguf_path.stem}-{key}"


def _gguf_tokenizer(gguf_path: Path):
    """The tokenizer of a GGUF file. Converting it takes transformers 15-80 s on 2 cores (every field of the
    vocabulary read in Python, the file parsed twice), and every run, dry run and test process paid it; so the
    converted tokenizer is saved once, keyed by the file (path, size, modification time) and the transformers and
    tokenizers versions, and loaded from there in about a second. A saved copy that cannot be read is converted
    again."""
    import logging
    import shutil
    import time

    from transformers import AutoTokenizer

    saved = converted_copy(gguf_path)
    tok = None
    if saved.is_dir():
        try:
            tok = AutoTokenizer.from_pretrained(saved)
        except Exception as exc:  # noqa: BLE001 - the Rust tokenizers raise a bare Exception on a damaged file
            logging.getLogger(__name__).warning("%s: unreadable converted tokenizer (%s): converting %s again",
                                                saved, exc, gguf_path.name)
            shutil.rmtree(saved, ignore_errors=True)
    if tok is None:
        logging.getLogger(__name__).info("converting the tokenizer of %s (once; kept in %s)", gguf_path.name,
                                         saved.parent)
        try:
            tok = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
        except OSError as err:
            raise FileNotFoundError(f"cannot load the tokenizer of {gguf_path}: {err}") from err
        _follow_gguf_bos(tok, gguf_path)  # saved with the copy (tokenizer_config.json `add_bos_token`)
        tmp = saved.with_name(f"{saved.name}.{os.getpid()}.{time.time_ns()}.tmp")
        try:
            tok.save_pretrained(tmp)
            tmp.rename(saved)  # whole or not at all; a concurrent process may have won: keep its copy
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
    return tok


def _follow_gguf_bos(tok, gguf_path: Path) -> None:
    """Add a BOS token to raw text only where the GGUF file says so (`tokenizer.ggml.add_bos_token`), as
    llama.cpp and vLLM do: transformers 4.x converts SmolLM2's GGUF tokenizer to one that always adds it
    (one token more on a `/v1/completions` prompt than on the same text elsewhere); 5.x reads the flag."""
    wanted = gguf_metadata(gguf_path).get("tokenizer.ggml.add_bos_token")
    if isinstance(wanted, bool) and getattr(tok, "add_bos_token", wanted) != wanted:
        tok.add_bos_token = wanted  # the fast Llama tokenizer rebuilds its post-processor on this setter


# GGUF value types (gguf spec): fixed-size scalars by struct format, 8 = string, 9 = array
_GGUF_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


def gguf_metadata(path: Path) -> dict[str, Any]:
    """The scalar key/values of a GGUF file's header (arrays are skipped, not read): a few milliseconds,
    where `gguf.GGUFReader` takes seconds to build every array of a tokenizer's vocabulary."""
    import struct

    def read(f, fmt: str):
        fmt = "<" + fmt
        return struct.unpack(fmt, f.read(struct.calcsize(fmt)))[0]

    def skip_string(f) -> None:
        f.seek(read(f, "Q"), 1)

    def value(f, kind: int):
        if kind in _GGUF_SCALARS:
            return read(f, _GGUF_SCALARS[kind])
        if kind == 8:
            return f.read(read(f, "Q")).decode("utf-8", "replace")
        if kind == 9:
            item, count = read(f, "I"), read(f, "Q")
            if item in _GGUF_SCALARS:
                f.seek(count * struct.calcsize("<" + _GGUF_SCALARS[item]), 1)
            else:
                for _ in range(count):
                    skip_string(f) if item == 8 else value(f, item)
            return None
        raise ValueError(f"{path}: unknown GGUF value type {kind}")

    out: dict[str, Any] = {}
    with open(path, "rb") as f:
        if f.read(4) != b"GGUF":
            raise ValueError(f"{path}: not a GGUF file")
        read(f, "I")  # version
        read(f, "Q")  # tensor count
        for _ in range(read(f, "Q")):
            key = f.read(read(f, "Q")).decode("utf-8", "replace")
            got = value(f, read(f, "I"))
            if got is not None:
                out[key] = got
    return out


def tokenizer_context_window(hf_tok, spec: str, configured: int | None) -> int:
    window = int(configured or getattr(hf_tok, "model_max_length", 0) or 2048)
    if window > 10_000_000:  # transformers' "no limit" sentinel
        raise ValueError(f"set generator.context_window for {spec!r}: its tokenizer states no limit")
    return window


def uses_chat_template(hf_tok, prompt: Prompt) -> bool:
    return bool(hf_tok.chat_template) and prompt.chat


def render_prompt(hf_tok, prompt: Prompt) -> str:
    """The text a model with this tokenizer sees for `prompt`: its chat template when it has one
    and the prompt is a chat prompt; else the raw text (the tokenizer adds its special tokens)."""
    if uses_chat_template(hf_tok, prompt):
        return hf_tok.apply_chat_template(prompt.messages(), add_generation_prompt=True, tokenize=False)
    return prompt.raw_text()


def count_prompt_tokens(hf_tok, prompt: Prompt) -> int:
    """Tokens of the rendered prompt (the template carries its special tokens; plain text gets the
    tokenizer's own, e.g. a BOS)."""
    return len(hf_tok(render_prompt(hf_tok, prompt),
                      add_special_tokens=not uses_chat_template(hf_tok, prompt))["input_ids"])
