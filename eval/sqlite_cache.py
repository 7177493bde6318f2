"""A checked key -> text store in one SQLite file, safe to share between processes.

Shared by the response cache (`llm.cache.ResponseCache`) and the judgment cache
(`eval.metrics.judge.JudgmentCache`); it lives in `eval/` so that `eval/` need not import `llm/`.

* Parallel writers (joblib or SLURM array jobs sharing one file): WAL journal, a busy timeout, and
  bounded retries with jittered exponential backoff when SQLite still answers "database is locked"
  (which the busy timeout does not cover, e.g. while another process switches the journal mode).
  When the retries run out, `sqlite3.OperationalError("... still locked after N retries ...")`.
* Damaged entries: every row carries `sha256(f"{key}\\n{value}")`, checked on every read. A row
  that fails it (a damaged file, a half-written or hand-edited row) is logged, counted in
  `corrupted`, and read as a miss, so the caller recomputes and overwrites it.
* A damaged file: when the file is not an SQLite database at all (garbage bytes, "file is not a
  database") or SQLite reports it malformed while the cache is being opened, it is moved aside to
  `<name>.corrupt-<timestamp>-<pid>` (with any `-wal`/`-shm` beside it), a warning is logged, and
  an empty cache is built in its place. Processes recovering the same file take turns (a lock on
  `<name>.recovery-lock`) and each looks again before moving, so a file another process has just
  rebuilt is never moved away.

The table is `<table> (key TEXT PRIMARY KEY, value TEXT NOT NULL, checksum TEXT NOT NULL)`.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import random
import sqlite3
import threading
import time
from pathlib import Path
from typing import Callable, Iterator, Sequence, TypeVar

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)
T = TypeVar("T")

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
    `logger` is where warnings go (callers pass their own, so their logs read as before).
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
        os.replace(self.path, target)
        for suffix in _SIDECARS:  # a stale WAL must not be replayed into the new file
            try:
                os.replace(f"{self.path}{suffix}", f"{target}{suffix}")
            except FileNotFoundError:
                pass
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

    def __enter__(self) -> "CheckedSQLiteCache":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


__all__ = ["CheckedSQLiteCache", "entry_checksum", "is_lock_error", "is_damage_error"]
