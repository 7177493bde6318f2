"""One answer's token usage as each server reports it, read into one shape (issue 38).

`read_usage(usage, extras)` takes a response's `usage` (a mapping, or the openai client's object) and the response's
top-level fields (`extras`: llama.cpp's `timings` and `tokens_cached`) and gives `Usage`: every prompt token
(`prompt_tokens`, those read from and written to a prompt cache included), `completion_tokens`, the prompt tokens
read from the provider's or server's prompt cache (`cached_tokens`) and written to it (`cache_write_tokens`).

The shapes it reads, each from its provider's documented response:

- OpenAI (and `vllm serve --enable-prompt-tokens-details`, LiteLLM for OpenAI models): `prompt_tokens` counts every
  prompt token; `prompt_tokens_details.cached_tokens` the ones read from the cache. `vllm serve` without the flag
  sends no details: nothing is known as cached.
- OpenRouter: as OpenAI, and `prompt_tokens_details.cache_write_tokens` for models with explicit caching.
- LiteLLM for Anthropic models: as OpenAI, plus `cache_creation_input_tokens` (and `cache_read_input_tokens`) beside
  `prompt_tokens`.
- Anthropic's Messages API: `input_tokens` (the prompt tokens after the last cache breakpoint only),
  `cache_read_input_tokens`, `cache_creation_input_tokens`, `output_tokens`: the prompt is their sum.
- Anthropic's OpenAI-compatible endpoint and proxies that keep Anthropic's counting under OpenAI's names: the
  prompt EXCLUDES the cached tokens. Read so where the caller says (`prompt_includes_cache=False`, the backend does
  for api.anthropic.com) or where the cached and written tokens exceed `prompt_tokens` (no other reading adds up).
- llama.cpp's server: `prompt_tokens` with, in newer releases, `timings.cache_n` (prompt tokens its KV cache
  served) and, in older ones, `tokens_cached` at the top level.
- No usage at all: every field None (the backend counts the tokens itself).

A count it cannot read (not a whole number, negative, or cached tokens that cannot be part of the prompt) costs the
answer its cached share, never the answer: `cached_tokens` and `cache_write_tokens` None and `warning` says why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int | None
    completion_tokens: int | None
    cached_tokens: int | None = None
    cache_write_tokens: int | None = None
    shape: str = "none"  # which shape it was read as
    warning: str | None = None  # why a cached share was dropped


def as_mapping(value: Any) -> dict[str, Any]:
    """A usage or response object as a plain dict: a mapping as it is, a pydantic model (the openai client's objects,
    extra fields included) through `model_dump`, anything else empty."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return dict(value)
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        out = dump()
        return dict(out) if isinstance(out, Mapping) else {}
    return {}


def _count(value: Any) -> int | None:
    """A token count: a whole number >= 0 (None when absent or unreadable)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def _bad(value: Any) -> bool:
    return value is not None and _count(value) is None


def read_usage(usage: Any, extras: Mapping[str, Any] | None = None,
               prompt_includes_cache: bool | None = None) -> Usage:
    """`usage` (and the response's top-level `extras`) -> Usage (see the module docstring)."""
    u, top = as_mapping(usage), dict(extras or {})
    if "input_tokens" in u and "prompt_tokens" not in u:
        return _anthropic(u)
    if not u and not top:
        return Usage(None, None)
    prompt, completion = _count(u.get("prompt_tokens")), _count(u.get("completion_tokens"))
    details = as_mapping(u.get("prompt_tokens_details"))
    read_raw, write_raw, shape = details.get("cached_tokens"), details.get("cache_write_tokens"), "openai"
    if write_raw is not None:
        shape = "openrouter"
    if read_raw is None and u.get("cache_read_input_tokens") is not None:
        read_raw, shape = u.get("cache_read_input_tokens"), "litellm"
    if write_raw is None and u.get("cache_creation_input_tokens") is not None:
        write_raw, shape = u.get("cache_creation_input_tokens"), "litellm"
    server_cache = False  # a llama.cpp KV cache: its count is always part of the prompt
    timings = as_mapping(top.get("timings"))
    if read_raw is None and timings.get("cache_n") is not None:
        read_raw, shape, server_cache = timings.get("cache_n"), "llamacpp", True
    if read_raw is None and top.get("tokens_cached") is not None:
        read_raw, shape, server_cache = top.get("tokens_cached"), "llamacpp (old)", True
    if prompt is None:
        return Usage(None, completion, shape=shape if u else "none")
    if _bad(read_raw) or _bad(write_raw):
        return Usage(prompt, completion, shape=shape, warning=(
            f"usage ({shape}): unreadable cache counts (read {read_raw!r}, written {write_raw!r}); priced as uncached"))
    read, written = _count(read_raw), _count(write_raw)
    cache_sum = (read or 0) + (written or 0)
    excludes = prompt_includes_cache is False or (prompt_includes_cache is None and cache_sum > prompt)
    if excludes and not server_cache:
        return Usage(prompt + cache_sum, completion, read, written, shape=f"{shape} (prompt excludes cached)")
    if cache_sum > prompt:
        return Usage(prompt, completion, shape=shape, warning=(
            f"usage ({shape}): {cache_sum} cached tokens of a {prompt}-token prompt cannot be read; priced as "
            "uncached"))
    return Usage(prompt, completion, read, written, shape=shape)


def _anthropic(u: Mapping[str, Any]) -> Usage:
    """Anthropic's Messages API: the prompt is input + cache reads + cache writes."""
    fresh, completion = _count(u.get("input_tokens")), _count(u.get("output_tokens"))
    read_raw, write_raw = u.get("cache_read_input_tokens"), u.get("cache_creation_input_tokens")
    if fresh is None:
        return Usage(None, completion, shape="anthropic")
    if _bad(read_raw) or _bad(write_raw):
        return Usage(fresh, completion, shape="anthropic", warning=(
            f"usage (anthropic): unreadable cache counts (read {read_raw!r}, written {write_raw!r}); priced as "
            "uncached, the prompt counted without them"))
    read, written = _count(read_raw), _count(write_raw)
    return Usage(fresh + (read or 0) + (written or 0), completion, read, written, shape="anthropic")
