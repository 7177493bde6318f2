"""Files and caches on disk: the one module that writes them atomically, checks them on every read,
and shares them between processes (eval/ imports nothing above it, so every layer may use it).

- `atomic_write_bytes` / `atomic_write_text`: a temporary file in the same folder moved into place
  with `os.replace`, so parallel processes (Hydra joblib or SLURM jobs over one cache) and a crash
  see the old file or the new one, never half of it; two writers of identical content both succeed.
- `DiskCache`: checksummed blobs in a folder tree, `<root>/<kind>/<key[:2]>/<key>.<ext>`, each
  entry starting with a line holding the SHA-256 of its payload; a corrupted or truncated entry
  fails that check, counts as a miss and is rewritten. The RAG arm's chunks, embeddings and
  indexes use it (their keys and serialisers live in `rag.cache_keys`).
- `CheckedSQLiteCache`: a checked key -> text store in one SQLite file shared by processes:
  * parallel writers: WAL journal, a busy timeout, and bounded retries with jittered exponential
    backoff when SQLite still answers "database is locked" (which the busy timeout does not
    cover, e.g. while another process switches the journal mode); when the retries run out,
    `sqlite3.OperationalError("... still locked after N retries ...")`;
  * damaged entries: every row carries `sha256(f"{key}\\n{value}")`, checked on every read; a row
    that fails it is logged, counted in `corrupted`, and read as a miss, so the caller recomputes
    and overwrites it;
  * a damaged file: when the file is not an SQLite database at all, or SQLite reports it
    malformed while the cache is being opened, it is moved aside to
    `<name>.corrupt-<timestamp>-<pid>` (with any `-wal`/`-shm` beside it), a warning is logged,
    and an empty cache is built in its place. Processes recovering the same file take turns (a
    lock on `<name>.recovery-lock`) and each looks again before moving.
  The table is `<table> (key TEXT PRIMARY KEY, value TEXT NOT NULL, checksum TEXT NOT NULL)`.
- `JSONCache`: JSON objects over a `CheckedSQLiteCache`, an entry that does not parse or fails
  its owner's check read as a miss: the one class behind the response cache (`llm.cache`) and
  the judgment cache (`eval.metrics.judge`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import random
import sqlite3
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]  # no fcntl on Windows: None says so to the lock below

__all__ = ["CheckedSQLiteCache", "DiskCache", "JSONCache", "atomic_write_bytes", "atomic_write_text",
           "entry_checksum", "is_damage_error", "is_lock_error"]

log = logging.getLogger(__name__)
T = TypeVar("T")

def atomic_write_bytes(path: str | Path, data: bytes, fsync: bool = False, mode: int | None = None) -> None:
    """Write `data` to `path` through a temporary file in the same folder moved into place (`fsync`:
    synced to disk first; `mode`: the file's permission bits, else the temporary file's)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:16]}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if fsync:
                f.flush()
                os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: str | Path, text: str, fsync: bool = False, mode: int | None = None) -> None:
    """`atomic_write_bytes` of UTF-8 text."""
    atomic_write_bytes(path, text.encode("utf-8"), fsync=fsync, mode=mode)


def append_synced(path: str | Path, data: bytes) -> None:
    """Append `data` to `path` in one write and sync it to disk before returning: a crash afterwards
    keeps it, a crash during it leaves at most a torn last line for the reader to repair."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


class DiskCache:
    """Checksummed, atomically written blobs; hit/miss counts per kind. `root=None`: caches nothing."""

    def __init__(self, root: str | Path | None):
        self.root = Path(root) if root is not None else None
        self.stats: dict[str, dict[str, int]] = defaultdict(lambda: {"hits": 0, "misses": 0, "corrupt": 0})

    @property
    def enabled(self) -> bool:
        return self.root is not None

    def _path(self, kind: str, key: str, ext: str) -> Path:
        assert self.root is not None
        return self.root / kind / key[:2] / f"{key}.{ext}"

    def read(self, kind: str, key: str, ext: str) -> bytes | None:
        if self.root is None:
            return None
        path = self._path(kind, key, ext)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        head, sep, payload = raw.partition(b"\n")
        if not sep or head.decode("ascii", "replace") != hashlib.sha256(payload).hexdigest():
            self.stats[kind]["corrupt"] += 1
            log.warning("cache entry %s is corrupted; recomputing it", path)
            return None
        return payload

    def write(self, kind: str, key: str, ext: str, payload: bytes) -> None:
        if self.root is None:
            return
        atomic_write_bytes(self._path(kind, key, ext), hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload)

    def get_or_compute(self, kind: str, key: str, ext: str, compute: Callable[[], Any],
                       dump: Callable[[Any], bytes], load: Callable[[bytes], Any]) -> Any:
        payload = self.read(kind, key, ext)
        if payload is not None:
            try:
                value = load(payload)
            except Exception as err:  # noqa: BLE001 - a bad entry is recomputed, never trusted
                self.stats[kind]["corrupt"] += 1
                log.warning("cache entry %s/%s unreadable (%s); recomputing it", kind, key, err)
            else:
                self.stats[kind]["hits"] += 1
                return value
        self.stats[kind]["misses"] += 1
        value = compute()
        self.write(kind, key, ext, dump(value))
        return value

    def summary(self) -> dict[str, dict[str, int]]:
        return {k: dict(self.stats[k]) for k in sorted(self.stats)}


# -- the checked SQLite text cache ------------------------------------------------------------

_SIDECARS = ("-wal", "-shm", "-journal")


def entry_checksum(key: str, value: str) -> str:
    """The checksum stored with every entry (the response cache's since its first version)."""
    return hashlib.sha256(f"{key}\n{value}".encode()).hexdigest()


def is_lock_error(err: BaseException) -> bool:
    text = str(err).lower()
    return isinstance(err, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


def is_damage_error(err: BaseException) -> bool:
    """SQLite's answers for a file that is not a (sound) database."""
    text = str(err).lower()
    return isinstance(err, sqlite3.DatabaseError) and not is_lock_error(err) and (
        "not a database" in text or "malformed" in text or "file is encrypted" in text)


@contextlib.contextmanager
def _recovery_lock(path: Path) -> Iterator[None]:
    """An exclusive lock between processes recovering the same file (`<name>.recovery-lock`)."""
    if fcntl is None:  # not POSIX: the inode check in `_move_aside` still applies
        yield
        return
    with open(path.with_name(path.name + ".recovery-lock"), "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _valid_name(name: str) -> str:
    if not name.replace("_", "").isalnum() or name[0].isdigit():
        raise ValueError(f"invalid SQLite table name {name!r}")
    return name


class CheckedSQLiteCache:
    """Key -> text entries in table `table` of the SQLite file `path`.

    `busy_timeout_s`: how long SQLite itself waits for a lock; `lock_retries`: how many more times
    an operation is retried when it still finds one. `label` names the cache in messages and
    `logger` is where warnings go (each caller passes its own, so a warning names the cache's owner).
    Counters: `retries` (operations retried after "database is locked"), `corrupted` (entries that
    failed their checksum, or that the caller reported with `mark_corrupted`), `recovered` (the
    path a damaged file was moved to, or None).
    """

    def __init__(self, path: str | os.PathLike, table: str, *, busy_timeout_s: float = 60.0, lock_retries: int = 30,
                 label: str = "cache", logger: logging.Logger | None = None):
        self.path = Path(path)
        self.table = _valid_name(table)
        self.busy_timeout_s = busy_timeout_s
        self.lock_retries = lock_retries
        self.label = label
        self.log = logger or log
        self.retries = 0
        self.corrupted = 0
        self.recovered: Path | None = None
        self._lock = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = self._open()

    # -- opening, and recovering from a damaged file -------------------------------------------

    def _connect_and_setup(self) -> sqlite3.Connection:
        db = self.retry(lambda: sqlite3.connect(self.path, timeout=self.busy_timeout_s, isolation_level=None,
                                                check_same_thread=False))
        try:
            self.retry(lambda: db.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_s * 1000)}"))
            self.retry(lambda: db.execute("PRAGMA journal_mode=WAL"))
            self.retry(lambda: db.execute(
                f"CREATE TABLE IF NOT EXISTS {self.table} "
                "(key TEXT PRIMARY KEY, value TEXT NOT NULL, checksum TEXT NOT NULL)"))
            self.retry(lambda: db.execute(f"SELECT key FROM {self.table} LIMIT 1").fetchone())
        except BaseException:
            db.close()
            raise
        return db

    def _open(self) -> sqlite3.Connection:
        try:
            return self._connect_and_setup()
        except sqlite3.DatabaseError as err:
            if not is_damage_error(err) or not self.path.exists():
                raise
        # Recovery, one process at a time: look again under the lock (another process may have
        # moved the file and rebuilt it meanwhile); move it aside only if it is still damaged.
        with _recovery_lock(self.path):
            try:
                before = os.stat(self.path)
                return self._connect_and_setup()
            except FileNotFoundError:
                pass
            except sqlite3.DatabaseError as err:
                if not is_damage_error(err):
                    raise
                self._move_aside(before, err)
        return self._connect_and_setup()

    def _move_aside(self, failed: os.stat_result, err: BaseException) -> None:
        try:
            now = os.stat(self.path)
        except FileNotFoundError:
            return  # moved already; open again
        if (now.st_ino, now.st_dev) != (failed.st_ino, failed.st_dev):
            return  # replaced meanwhile (by a process without the lock); open again
        stamp = time.strftime("%Y%m%d-%H%M%S") + f"-{os.getpid()}"
        target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        # The damaged file's sidecars first (a stale WAL must not be replayed into the new file), then the file:
        # the other way round, a process opening the path between the two moves creates a new database and its
        # fresh WAL, and that WAL would be moved away from under it (its writes then lost to the others).
        for suffix in _SIDECARS:
            try:
                os.replace(f"{self.path}{suffix}", f"{target}{suffix}")
            except FileNotFoundError:
                pass
        os.replace(self.path, target)
        self.recovered = target
        self.log.warning("%s %s: not a usable SQLite database (%s); moved it to %s and started an empty cache",
                         self.label, self.path, err, target.name)

    # -- locking --------------------------------------------------------------------------------

    def retry(self, op: Callable[[], T]) -> T:
        """Run `op`, retrying with jittered exponential backoff while SQLite answers "locked"/"busy"."""
        for attempt in range(self.lock_retries + 1):
            try:
                return op()
            except sqlite3.OperationalError as err:
                if not is_lock_error(err):
                    raise
                if attempt == self.lock_retries:
                    raise sqlite3.OperationalError(
                        f"{self.label} {self.path}: still locked after {self.lock_retries} retries ({err})") from err
                self.retries += 1
                time.sleep(min(2.0, 0.02 * 2 ** attempt) * random.uniform(0.5, 1.0))
        raise AssertionError("unreachable")

    # -- entries --------------------------------------------------------------------------------

    def get(self, key: str) -> str | None:
        """The value stored under `key`; None when absent or when the entry fails its checksum."""
        with self._lock:
            row = self.retry(lambda: self._db.execute(
                f"SELECT value, checksum FROM {self.table} WHERE key = ?", (key,)).fetchone())
        if row is None:
            return None
        value, checksum = row
        if not isinstance(value, str) or checksum != entry_checksum(key, value):
            self.mark_corrupted(key, "checksum mismatch")
            return None
        return value

    def mark_corrupted(self, key: str, problem: str) -> None:
        """Count and log an entry that cannot be trusted (the caller recomputes it)."""
        self.corrupted += 1
        self.log.warning("%s %s: entry %s is corrupted (%s); recomputing it", self.label, self.path, key[:16], problem)

    def put(self, key: str, value: str) -> None:
        with self._lock:
            self.retry(lambda: self._db.execute(
                f"INSERT OR REPLACE INTO {self.table} (key, value, checksum) VALUES (?, ?, ?)",
                (key, value, entry_checksum(key, value))))

    def keys(self) -> list[str]:
        with self._lock:
            return [k for (k,) in self.retry(lambda: self._db.execute(f"SELECT key FROM {self.table}").fetchall())]

    def __len__(self) -> int:
        with self._lock:
            return self.retry(lambda: self._db.execute(f"SELECT COUNT(*) FROM {self.table}").fetchone()[0])

    def adopt_legacy_table(self, table: str, columns: Sequence[str],
                           convert: Callable[[tuple], tuple[str, str] | None]) -> int:
        """Copy the rows of an older, unchecked table `table` (exactly `columns`) into this one and
        drop it, in one transaction (concurrent openers: the first does it, the others find no
        table). `convert(row)` gives (key, value), or None to leave the row out. Entries already
        present are kept. A table with other columns is left alone. Returns the rows copied."""
        table = _valid_name(table)

        def columns_of() -> set[str]:
            return {r[1] for r in self._db.execute(f"PRAGMA table_info({table})")}

        def op() -> int:
            if columns_of() != set(columns):
                return 0
            self._db.execute("BEGIN IMMEDIATE")
            try:
                if columns_of() != set(columns):  # another process adopted it first
                    self._db.execute("ROLLBACK")
                    return 0
                rows = self._db.execute(f"SELECT {', '.join(columns)} FROM {table}").fetchall()
                entries = [e for e in (convert(r) for r in rows) if e is not None]
                self._db.executemany(
                    f"INSERT OR IGNORE INTO {self.table} (key, value, checksum) VALUES (?, ?, ?)",
                    [(k, v, entry_checksum(k, v)) for k, v in entries])
                self._db.execute(f"DROP TABLE {table}")
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise
            return len(entries)

        with self._lock:
            n = self.retry(op)
        if n:
            self.log.info("%s %s: adopted %d entries from the older table %s", self.label, self.path, n, table)
        return n

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> CheckedSQLiteCache:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class JSONCache:
    """JSON objects by key in table `table` of a `CheckedSQLiteCache` (see there for `busy_timeout_s`,
    `lock_retries`, `label` and `logger`). `get_json(key, check)` reads one: an entry that fails
    its checksum, does not parse to an object, or makes `check` raise ValueError/TypeError is
    logged, counted in `corrupted`, and read as a miss. Values are written as sorted-key JSON."""

    def __init__(self, path: str | os.PathLike, table: str, *, label: str, logger: logging.Logger | None = None,
                 busy_timeout_s: float = 60.0, lock_retries: int = 30):
        self.store = CheckedSQLiteCache(path, table, busy_timeout_s=busy_timeout_s, lock_retries=lock_retries,
                                        label=label, logger=logger)
        self.path = self.store.path
        self.lock_retries = lock_retries

    @property
    def retries(self) -> int:
        """Operations retried after "database is locked"."""
        return self.store.retries

    @property
    def corrupted(self) -> int:
        """Entries that failed their checksum or did not parse."""
        return self.store.corrupted

    def get_json(self, key: str, check: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any] | None:
        value = self.store.get(key)
        if value is None:
            return None
        try:
            data = json.loads(value)
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
            if check is not None:
                check(data)
        except (TypeError, ValueError) as err:
            self.store.mark_corrupted(key, f"unreadable ({err})")
            return None
        return data

    def put_json(self, key: str, data: dict[str, Any]) -> None:
        self.store.put(key, json.dumps(data, ensure_ascii=False, sort_keys=True))

    def __len__(self) -> int:
        return len(self.store)

    def close(self) -> None:
        self.store.close()
