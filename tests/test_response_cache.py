"""The response cache under parallel Hydra jobs (real processes writing one SQLite file at once)
and with damaged entries (detected by checksum, logged, recomputed)."""

from __future__ import annotations

import logging
import multiprocessing as mp
import sqlite3
import threading
import time

import pytest

from llm.cache import CachedGenerator, ResponseCache
from llm.prompt import Generation, Prompt

WORKERS, PER_WORKER, SHARED = 6, 40, 10


def _entry(name: str) -> Generation:
    return Generation(text=f"answer {name}", prompt_tokens=len(name), completion_tokens=3, latency_s=0.5, ttft_s=0.1)


def _writer(path: str, worker: int, start, results) -> None:
    """One 'Hydra job': opens the shared cache, then writes and reads back entries as fast as it can.
    A tiny busy timeout makes lock contention surface as 'database is locked' (retried)."""
    try:
        cache = ResponseCache(path, busy_timeout_s=0.01, lock_retries=60)
        start.wait(60)
        for i in range(PER_WORKER):
            name = f"shared-{i}" if i < SHARED else f"w{worker}-{i}"  # some keys written by every job
            cache.put(name, _entry(name))
            got = cache.get(name)
            assert got is not None and got.text == f"answer {name}"
        results.put((worker, "ok", cache.retries))
    except BaseException as err:  # noqa: BLE001 - reported to the parent
        results.put((worker, f"{type(err).__name__}: {err}", -1))


def test_parallel_processes_share_one_cache_file(tmp_path):
    ctx = mp.get_context("spawn")
    path = str(tmp_path / "responses.sqlite")
    start, results = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(path, w, start, results)) for w in range(WORKERS)]
    for p in procs:
        p.start()
    time.sleep(0.5)
    start.set()  # all at once
    outcomes = [results.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert sorted(o[1] for o in outcomes) == ["ok"] * WORKERS, outcomes
    assert all(p.exitcode == 0 for p in procs)
    cache = ResponseCache(path)
    assert len(cache) == SHARED + WORKERS * (PER_WORKER - SHARED)
    for name in [f"shared-{i}" for i in range(SHARED)] + [f"w{w}-{i}" for w in range(WORKERS)
                                                           for i in range(SHARED, PER_WORKER)]:
        got = cache.get(name)
        assert got is not None and got.cached and got.text == f"answer {name}" and got.ttft_s == 0.1
    assert cache.corrupted == 0


def test_a_locked_database_is_waited_for_then_a_clear_error(tmp_path):
    path = tmp_path / "responses.sqlite"
    cache = ResponseCache(path, busy_timeout_s=0.01, lock_retries=30)
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")  # another job mid-write
    threading.Timer(0.3, lambda: holder.execute("COMMIT")).start()
    cache.put("k", _entry("k"))  # waits the lock out
    assert cache.retries > 0 and cache.get("k").text == "answer k"
    impatient = ResponseCache(path, busy_timeout_s=0.01, lock_retries=2)
    holder2 = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder2.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(sqlite3.OperationalError, match="still locked after 2 retries"):
            impatient.put("k2", _entry("k2"))
    finally:
        holder2.execute("COMMIT")


@pytest.mark.parametrize("damage", [
    "UPDATE generations SET value = replace(value, 'answer', 'tampered')",  # the value changed
    "UPDATE generations SET checksum = 'deadbeef'",                          # the checksum changed
    "UPDATE generations SET value = substr(value, 1, 20)",                   # a truncated row
])
def test_a_corrupted_entry_is_detected_logged_and_recomputed(tmp_path, caplog, damage):
    path = tmp_path / "responses.sqlite"
    ResponseCache(path).put("k", _entry("k"))
    with sqlite3.connect(path) as db:
        db.execute(damage)
    cache = ResponseCache(path)
    with caplog.at_level(logging.WARNING, logger="llm.cache"):
        assert cache.get("k") is None
    assert cache.corrupted == 1 and "is corrupted" in caplog.text and "recomputing" in caplog.text
    cache.put("k", _entry("k"))  # the recomputed answer replaces it
    assert cache.get("k").text == "answer k"


def test_cached_generator_recomputes_a_corrupted_answer(generator, tmp_path, caplog):
    path = tmp_path / "responses.sqlite"
    prompt = Prompt("Name a colour.", max_new_tokens=3)
    first = CachedGenerator(generator, ResponseCache(path))
    original = first.generate([prompt])[0]
    with sqlite3.connect(path) as db:
        db.execute("UPDATE generations SET value = replace(value, ?, ?)",
                   (f'"text": "{original.text}"', '"text": "a poisoned answer"'))
    again = CachedGenerator(generator, ResponseCache(path))
    with caplog.at_level(logging.WARNING, logger="llm.cache"):
        regenerated = again.generate([prompt])[0]
    assert again.calls == 1 and not regenerated.cached and regenerated.text == original.text
    assert "checksum mismatch" in caplog.text
    third = CachedGenerator(generator, ResponseCache(path))
    assert third.generate([prompt])[0].cached and third.calls == 0  # repaired


GARBAGE = b"this is not an SQLite database\x00\xff" * 200


def test_a_file_that_is_not_a_database_is_moved_aside_and_rebuilt(tmp_path, caplog):
    path = tmp_path / "responses.sqlite"
    path.write_bytes(GARBAGE)
    with caplog.at_level(logging.WARNING, logger="llm.cache"):
        cache = ResponseCache(path)
    (moved,) = tmp_path.glob("responses.sqlite.corrupt-*")
    assert moved.read_bytes() == GARBAGE  # kept for inspection, not deleted
    assert "not a usable SQLite database" in caplog.text and moved.name in caplog.text
    assert len(cache) == 0 and cache.get("k") is None
    cache.put("k", _entry("k"))
    cache.close()
    again = ResponseCache(path)  # a sound file is opened as it is
    assert again.get("k").text == "answer k" and len(list(tmp_path.glob("*.corrupt-*"))) == 1
    again.close()


def _open_garbage(path: str, worker: int, start, results) -> None:
    try:
        start.wait(60)
        cache = ResponseCache(path, busy_timeout_s=0.01, lock_retries=60)
        cache.put(f"w{worker}", _entry(f"w{worker}"))
        results.put((worker, "ok"))
    except BaseException as err:  # noqa: BLE001 - reported to the parent
        results.put((worker, f"{type(err).__name__}: {err}"))


def test_jobs_opening_one_garbage_file_at_once_rebuild_it_once(tmp_path):
    """Every job finds the damage; one moves the file aside, none moves away the rebuilt one."""
    ctx = mp.get_context("spawn")
    path = tmp_path / "responses.sqlite"
    path.write_bytes(GARBAGE)
    start, results = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_open_garbage, args=(str(path), w, start, results)) for w in range(4)]
    for p in procs:
        p.start()
    time.sleep(0.5)
    start.set()
    outcomes = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert sorted(o[1] for o in outcomes) == ["ok"] * 4, outcomes
    (moved,) = tmp_path.glob("responses.sqlite.corrupt-*")
    assert moved.read_bytes() == GARBAGE
    cache = ResponseCache(path)
    assert len(cache) == 4 and all(cache.get(f"w{w}").text == f"answer w{w}" for w in range(4))
