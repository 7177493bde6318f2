"""A team's folder as documents: every file under it (recursively, hidden files and folders left out),
named by its path relative to the folder, parsed once (eval.corpus.cache) and in a pool of processes
when there are many; a file that cannot be parsed is a `BadFile` with its reason, and the caller
decides whether that stops the load."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from pathlib import Path

from eval.corpus.beir import beir_companion, beir_corpus
from eval.corpus.cache import ParsedDocumentCache
from eval.corpus.parsers import (
    BEIR_CORPUS,
    PARSERS,
    BadFile,
    ParsedDocument,
    Unparsable,
    document_key,
    parse_bytes,
    unknown_extension,
)

log = logging.getLogger(__name__)
POOL_MIN_FILES = 16  # fewer files to parse than this: parsed in this process (starting a pool costs ~1 s)


KeyedParse = tuple[str | None, ParsedDocument | Unparsable]  # (cache key, or None: unreadable; the parse)


def files_under(root: Path) -> list[Path]:
    """Every file under `root`, hidden files and folders left out, in a stable order."""
    out = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_file() and not any(part.startswith(".") for part in rel.parts):
            out.append(path)
    return out


def document_files(root: Path, leave_out: Iterable[Path] = ()) -> list[Path]:
    """The files under `root` that are read as documents: all but `leave_out` and BEIR companions."""
    skip = {p.resolve() for p in leave_out}
    return [p for p in files_under(root) if p.resolve() not in skip and not beir_companion(p, root)]


def _parse_path(path: Path) -> KeyedParse:
    """(cache key, parse) of one file; runs in a worker process. An unreadable file has no key."""
    try:
        data = path.read_bytes()
    except OSError as err:
        return None, Unparsable(f"cannot be read: {err.strerror or err}")
    try:
        return document_key(data, path.suffix), parse_bytes(data, path.suffix)
    except Unparsable as err:
        return document_key(data, path.suffix), err


def default_workers() -> int:
    """The CPUs this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def parse_paths(paths: list[Path], workers: int | None = None) -> Iterator[KeyedParse]:
    """`_parse_path` of every path, yielded in order as they are parsed (the caller caches each meanwhile).
    `workers=None`: a pool of a process per CPU this process may use when there are at least
    `POOL_MIN_FILES` paths, else here; `workers=1`: here; `workers=N`: a pool of N processes."""
    fewest = POOL_MIN_FILES if workers is None else 2  # asked for: a pool from two files on (tests use it)
    workers = default_workers() if workers is None else max(1, int(workers))
    if workers == 1 or len(paths) < fewest:
        yield from (_parse_path(p) for p in paths)
        return
    done = 0
    # spawn: a fork of a process holding threads (torch, tokenizers) may hang
    pool = ProcessPoolExecutor(min(workers, len(paths)), mp_context=get_context("spawn"))
    try:
        for item in pool.map(_parse_path, paths, chunksize=max(1, min(16, len(paths) // (4 * workers)))):
            done += 1
            yield item
    except BrokenProcessPool as err:  # a worker died (out of memory, or could not start): the rest are parsed here
        log.warning("the parsing processes failed after %d of %d files (%s); parsing the rest in this process",
                    done, len(paths), err)
        yield from (_parse_path(p) for p in paths[done:])
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # stopped early (an error here): no parsing left running


def _cached(path: Path, cache: ParsedDocumentCache | None) -> ParsedDocument | Unparsable | None:
    """The cached parse of `path`'s bytes, or None (no cache, not cached, or unreadable: parsed later)."""
    if cache is None:
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return cache.get(document_key(data, path.suffix))


def _named(name: str, parsed: ParsedDocument | Unparsable) -> ParsedDocument | BadFile:
    if isinstance(parsed, Unparsable):
        return BadFile(name, str(parsed))
    return ParsedDocument(name, parsed.text, parsed.title, list(parsed.page_starts), list(parsed.warnings),
                          parsed.footnotes)


def read_folder(root: str | Path, leave_out: Iterable[Path] = (), cache: ParsedDocumentCache | None = None,
                workers: int | None = None) -> tuple[list[ParsedDocument], list[BadFile]]:
    """(documents, bad files) of every file under `root`, in the files' order; `leave_out`: files that are
    not documents (the questions file, when it lies in the folder); `cache`: parses by `document_key`, read
    and written; `workers`: processes for the files not cached (`parse_paths`)."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"benchmark.path={str(root)!r} is not a folder")
    slots: list[list[ParsedDocument | BadFile]] = []
    todo: list[tuple[int, Path, str]] = []
    for path in document_files(root, leave_out):
        name = path.relative_to(root).as_posix()
        if path.name == BEIR_CORPUS:
            slots.append(list(beir_corpus(path, name)))
        elif path.suffix.lower() not in PARSERS:
            slots.append([BadFile(name, unknown_extension(path.suffix))])
        else:
            hit = _cached(path, cache)
            slots.append([] if hit is None else [_named(name, hit)])
            if hit is None:
                todo.append((len(slots) - 1, path, name))
    for (slot, _, name), (key, parsed) in zip(todo, parse_paths([p for _, p, _ in todo], workers), strict=True):
        if cache is not None and key is not None:
            cache.put(key, parsed)
        slots[slot] = [_named(name, parsed)]
    items = [item for slot in slots for item in slot]
    return [d for d in items if isinstance(d, ParsedDocument)], [b for b in items if isinstance(b, BadFile)]
