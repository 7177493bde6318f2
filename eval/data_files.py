"""Reading data files with every error named: records from local files or the Hub, checked fields (used by the
benchmark loaders, a team's corpus and questions, and the rescoring command).

- `read_records(path)`: the rows of a JSON Lines file (or a `.json` file holding one JSON array),
  each as a `Row` that knows its file and line, so every error names both.
- `decode_text(data, source)`: bytes to text, where bytes that are not UTF-8 raise `DataError`
  naming the file and line instead of a bare `UnicodeDecodeError`.
- `skipping_bad_records(skip)` and `record_guard()`: `benchmark.skip_bad=true`. Loaders do the work
  on each record inside `record_guard()`; a `DataError` naming a line is then raised (the default)
  or, while `skipping_bad_records(True)` is active, collected and the record skipped.
- `Row.field(name, types)`: a field of the row, type-checked; a missing field or a wrong type
  raises `DataError` naming file, line and field.
- `hub_records(dataset_id, config, split)`: the rows of a Hugging Face dataset through `datasets`,
  never with the dataset's remote loading code; a clear `DataError` when `datasets` is missing,
  the machine is offline or the dataset does not serve that config.
- `selection(value, known, key, benchmark)`: the names a `tasks`/`levels` setting selects, in the
  benchmark's order, with an error naming the unknown ones.
- `first_samples(streams, limit)`: samples from per-file streams in turn, up to `limit`, opening no
  file past it; samples of one group share one context string.
- `inside(base, name)`: `base / name`, refused when the result leaves `base` (file names taken
  from data must never point outside their folder).
- `first_existing(folder, names)`: the first of several candidate file names that exists.

Loaders call these only for local paths or only for the Hub, never both: a configured local path
is read as it is and nothing is downloaded.
"""

from __future__ import annotations

import inspect
import json
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_MISSING = object()


class DataError(ValueError):
    """Bad input data: says where (file and line, or Hub dataset and row) and which field."""

    def __init__(self, source: str, line: int | None, message: str, field: str | None = None):
        self.source, self.line, self.field = source, line, field
        self.detail = f"field {field!r}: {message}" if field else message  # the error without where
        where = source if line is None else f"{source}:{line}"
        super().__init__(f"{where}: {self.detail}")


_TYPE_NAMES = {str: "text", int: "an integer", float: "a number", bool: "true/false", list: "a list", dict: "an object"}


def _type_names(types: tuple[type, ...]) -> str:
    return " or ".join(_TYPE_NAMES.get(t, t.__name__) for t in types)


@dataclass
class Row:
    """One record of a data file with where it came from (`line` is 1-based; a row index for the Hub)."""

    data: dict[str, Any]
    source: str
    line: int

    def error(self, message: str, field: str | None = None) -> DataError:
        return DataError(self.source, self.line, message, field)

    def has(self, name: str) -> bool:
        return name in self.data

    def field(self, name: str, types: type | tuple[type, ...] = (), default: Any = _MISSING) -> Any:
        """The value of `name`, checked against `types` (bools are not integers here)."""
        if name not in self.data:
            if default is not _MISSING:
                return default
            raise self.error(f"missing (fields present: {', '.join(sorted(self.data)) or 'none'})", name)
        value = self.data[name]
        types = types if isinstance(types, tuple) else (types,)
        if types and (not isinstance(value, types) or (isinstance(value, bool) and bool not in types)):
            raise self.error(f"must be {_type_names(types)}, got {type(value).__name__} {_preview(value)}", name)
        return value

    def str_list(self, name: str, default: Any = _MISSING) -> list[str]:
        value = self.field(name, list, default)
        if value is default:
            return value
        bad = [v for v in value if not isinstance(v, str)]
        if bad:
            raise self.error(f"must be a list of text, got an item {type(bad[0]).__name__} {_preview(bad[0])}", name)
        return value


def _preview(value: Any, n: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= n else text[: n - 3] + "..."


def _not_utf8(exc: UnicodeDecodeError, line: bytes | None = None) -> str:
    column = "" if line is None else f" at byte {exc.start + 1} of the line"
    return f"not UTF-8 text (byte 0x{exc.object[exc.start]:02x}{column}); is this a binary or differently encoded file?"


_BAD_RECORDS: ContextVar[list[DataError] | None] = ContextVar("bad_records", default=None)


@contextmanager
def skipping_bad_records(skip: bool) -> Iterator[list[DataError]]:
    """While active with `skip`, `record_guard` collects bad records into the yielded list instead of raising."""
    errors: list[DataError] = []
    token = _BAD_RECORDS.set(errors if skip else None)
    try:
        yield errors
    finally:
        _BAD_RECORDS.reset(token)


@contextmanager
def record_guard() -> Iterator[None]:
    """Around the work on one record: its `DataError` propagates, or is collected when skipping bad records.

    Only errors that name a line are skippable; a file that cannot be read at all still fails the load.
    """
    try:
        yield
    except DataError as err:
        errors = _BAD_RECORDS.get()
        if errors is None or err.line is None:
            raise
        errors.append(err)


def _decode_line(raw: bytes, source: str, lineno: int) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(source, lineno, _not_utf8(exc, raw)) from None
    return text.removeprefix("\ufeff") if lineno == 1 else text


def decode_text(data: bytes, source: str) -> str:
    """A whole file's bytes as text; bytes that are not UTF-8 raise `DataError` naming the line."""
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise DataError(source, data.count(b"\n", 0, exc.start) + 1, _not_utf8(exc)) from None


def read_records(path: str | os.PathLike) -> Iterator[Row]:
    """Rows of a JSON Lines file (blank lines skipped), or of a `.json` file holding a JSON array.

    Every row must be a JSON object; a malformed line raises `DataError` naming file and line.
    """
    path = Path(path)
    source = str(path)
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise DataError(source, None, f"cannot be read: {exc.strerror or exc}") from exc
    with handle:
        first = b""
        while True:  # peek past leading whitespace and a byte order mark: a JSON array or JSON Lines?
            ch = handle.read(1)
            if not ch or not (ch.isspace() or ch in b"\xef\xbb\xbf"):
                first = ch
                break
        handle.seek(0)
        if first == b"[":
            text = decode_text(handle.read(), source)
            try:
                rows = json.loads(text)
            except json.JSONDecodeError as exc:
                raise DataError(source, exc.lineno, f"malformed JSON: {exc.msg} (column {exc.colno})") from exc
            except (ValueError, RecursionError) as exc:
                raise DataError(source, None,
                                f"unreadable JSON: {str(exc).split(';')[0] or 'nested too deeply'}") from None
            for i, item in enumerate(rows):  # `line` is the item's 1-based position in the array
                with record_guard():
                    if not isinstance(item, dict):
                        raise DataError(source, i + 1, f"item {i + 1} of the JSON array is {type(item).__name__}, "
                                        "not an object")
                    yield Row(item, source, i + 1)
            return
        yield from parse_jsonl(handle, source)


def parse_jsonl(lines: Iterable[bytes], source: str) -> Iterator[Row]:
    """Rows of JSON Lines bytes (blank lines skipped); each line must be UTF-8 text holding a JSON object."""
    for lineno, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        item = None
        with record_guard():
            item = parse_json_object(_decode_line(raw, source, lineno), source, lineno)
        if item is not None:
            yield Row(item, source, lineno)


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def parse_json_object(line: str, source: str, lineno: int) -> dict[str, Any]:
    """One JSON Lines record; anything but a JSON object of encodable text raises `DataError` with the line."""
    try:
        item = json.loads(line)
    except json.JSONDecodeError as exc:
        raise DataError(source, lineno, f"malformed JSON: {exc.msg} (column {exc.colno})") from None
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        raise DataError(source, lineno, f"unreadable JSON: {str(exc).split(';')[0]}") from None
    except RecursionError:
        raise DataError(source, lineno, "unreadable JSON: nested too deeply") from None
    if not isinstance(item, dict):
        raise DataError(source, lineno, f"a record must be a JSON object, got {type(item).__name__}")
    if _SURROGATE_ESCAPE.search(line):  # "\ud800" alone is valid JSON but no text: it cannot be written out
        for key, value in item.items():
            try:
                json.dumps(value, ensure_ascii=False).encode("utf-8")
            except UnicodeEncodeError:
                raise DataError(source, lineno, "holds a lone surrogate escape (\\ud800-\\udfff), which is not text",
                                str(key)) from None
    return item


def hub_records(dataset_id: str, config: str | None = None, split: str = "test",
                revision: str | None = None) -> Iterator[Row]:
    """Rows of a Hugging Face dataset via `datasets.load_dataset`, without remote code.

    Datasets that need their own loading script are refused by `datasets` itself (remote code is
    never trusted here). Any failure (no `datasets`, offline, unknown config) raises `DataError`
    saying how to point the loader at a local copy instead.
    """
    source = f"hub:{dataset_id}" + (f"[{config}]" if config else "") + f"/{split}"
    try:
        from datasets import load_dataset
    except ImportError as exc:
        raise DataError(source, None, "the `datasets` package is not installed: install it, or set "
                        "benchmark.path to a local copy of the data") from exc
    kwargs: dict[str, Any] = {"split": split}
    if revision:
        kwargs["revision"] = revision
    if "trust_remote_code" in inspect.signature(load_dataset).parameters:
        kwargs["trust_remote_code"] = False
    try:
        ds = load_dataset(dataset_id, config, **kwargs)
    except Exception as exc:  # offline, missing config, script-only datasets, ...
        offline = os.environ.get("HF_DATASETS_OFFLINE") == "1" or os.environ.get("HF_HUB_OFFLINE") == "1"
        hint = " (this process is offline: HF_DATASETS_OFFLINE/HF_HUB_OFFLINE=1)" if offline else ""
        raise DataError(source, None, f"could not be loaded from the Hugging Face Hub{hint}: "
                        f"{type(exc).__name__}: {exc}. Set benchmark.path to a local copy instead") from exc
    for i, item in enumerate(ds):
        yield Row(dict(item), source, i)


def inside(base: str | os.PathLike, name: str, row: Row | None = None, field: str | None = None) -> Path:
    """`base / name`, refused (DataError) when `name` is empty, absolute, names a folder, or the resolved
    path leaves `base`."""
    def refuse(message: str) -> DataError:
        return row.error(message, field) if row is not None else DataError(str(base), None, message, field)

    if not isinstance(name, str) or not name.strip() or "\x00" in name:
        raise refuse(f"{name!r} is not a file name")
    base_resolved = Path(base).resolve()
    candidate = (base_resolved / name).resolve()
    if os.path.isabs(name) or not candidate.is_relative_to(base_resolved):
        raise refuse(f"file name {name!r} points outside the folder {str(base)!r}: refused")
    if candidate == base_resolved or candidate.is_dir():
        raise refuse(f"{name!r} names a folder, not a file, in {str(base)!r}")
    return candidate


def first_existing(folder: str | os.PathLike, names: Sequence[str]) -> Path | None:
    for name in names:
        p = Path(folder) / name
        if p.is_file():
            return p
    return None
