"""Helpers several benchmarks share: their config keys checked, a selection of tasks or levels, the first
samples of several files, grouping samples of one context, an approximate token count that
needs no tokenizer, and length levels as buckets of it (LooGLE, a team's own corpus)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from eval.benchmarks.base import COMMON_KEYS
from eval.sample import Sample

_TOKEN = re.compile(r"[\u3400-\u9fff]|[A-Za-z0-9]+|[^\sA-Za-z0-9\u3400-\u9fff]")


def approx_tokens(text: str) -> int:
    """Tokens as one CJK character, one alphanumeric run or one other symbol each."""
    return len(_TOKEN.findall(text))


def consecutive_groups(samples: list[Sample]) -> list[Sample]:
    """Stable reorder so that samples of one group are consecutive (at the group's first place)."""
    order: dict[str, int] = {}
    for s in samples:
        order.setdefault(s.group, len(order))
    return sorted(samples, key=lambda s: order[s.group])  # sorted() is stable


def _k(n: int) -> str:
    return f"{n // 1000}k" if n % 1000 == 0 else str(n)


def level_names(edges: Iterable[int]) -> list[str]:
    edges = list(edges)
    names, low = [], 0
    for e in edges:
        names.append(f"{_k(low) if low else 0}-{_k(e)}")
        low = e
    names.append(f"{_k(low)}+")
    return names


def length_level(tokens: int, edges: Iterable[int]) -> str:
    """The bucket of a context of `tokens` approximate tokens: `16k-32k` holds 16,001..32,000."""
    edges = list(edges)
    names = level_names(edges)
    for name, e in zip(names[:-1], edges, strict=True):  # the last name, above every edge, is the rest
        if tokens <= e:
            return name
    return names[-1]


def selection(value: Any, known: Sequence[str], key: str, benchmark: str) -> tuple[list[str], bool]:
    """(the selected names in `known`'s order, whether the user narrowed the selection)."""
    if value is None:
        return list(known), False
    wanted = [str(v) for v in ([value] if isinstance(value, (str, int)) else value)]
    unknown = [v for v in wanted if v not in known]
    if unknown:
        raise ValueError(f"benchmark.{key}: unknown {unknown} for {benchmark}; available: {', '.join(known)}")
    return [k for k in known if k in wanted], True


def first_samples(streams: Iterable[Iterable[Any]], limit: int | None) -> list[Any]:
    """The samples of each stream in turn (a stream per data file, opened when reached), up to `limit`.

    Samples of one group get one shared context string, so a context asked about 30 times is held once.
    """
    samples: list[Any] = []
    contexts: dict[str, str] = {}
    for stream in streams:
        if limit is not None and len(samples) >= limit:
            break  # files past the limit are never opened, so the first `limit` samples are final
        for sample in stream:
            sample.context = contexts.setdefault(sample.group, sample.context)
            samples.append(sample)
            if limit is not None and len(samples) >= limit:
                break
    return samples


def check_keys(benchmark: str, cfg: dict[str, Any], known: Iterable[str]) -> None:
    """Reject unknown keys of a `benchmark` config group, naming the known ones."""
    known = set(known)
    unknown = set(cfg) - known - set(COMMON_KEYS)
    if unknown:
        raise ValueError(f"benchmark={benchmark}: unknown keys {sorted(unknown)}; "
                         f"known: {sorted(known | set(COMMON_KEYS))}")


def as_list(value: Any) -> list[str] | None:
    """A config value that may be one name or a list of names, as a list of strings (None stays None)."""
    if value is None:
        return None
    if isinstance(value, (str, int)):
        return [str(value)]
    return [str(v) for v in value]
