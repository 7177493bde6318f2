"""Parallel Hydra jobs (joblib launcher) sharing one response cache.

- `test_parallel_jobs_match_a_serial_run`: a 4-job sweep run 2 at a time by the joblib launcher,
  one cache folder for all; jobs come in pairs whose prompts are identical (a knob that does not
  change the prompt), so two processes generate and write the same cache keys at the same moment.
  Every job's records equal a serial run's (prediction, score) per sample, the SQLite cache passes
  its integrity check and holds exactly one readable entry per distinct prompt, and a second
  parallel sweep over the same cache generates nothing.
- `test_sweep_killed_mid_flight_resumes_to_the_serial_result`: the same sweep, its launcher and
  workers killed with SIGKILL while jobs are writing; the sweep started again over the same folder
  and cache finishes every job with exactly the serial records (no torn or duplicated line).
- `test_corrupted_cache_entry_is_recomputed`: a cache entry altered on disk (valid JSON, wrong
  text: bit rot or a bad copy) is detected by its checksum and generated again, not trusted.

The generator is generator=smollm2's config over the tiny random-weight Llama (conftest's `tiny_llm`: SmolLM2's
tokenizer, so the same prompts and cache keys): greedy decoding of fixed weights is deterministic, so a
parallel job's records equal the serial run's exactly when the plumbing is right, as they did with SmolLM2.
Its answers run to the token limit (a random model seldom ends one), 96 tokens: about a second per answer on
a CPU, as SmolLM2's took, so the kill lands while jobs are generating.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, compose

BASE = ["benchmark.languages=[en]", "benchmark.levels=[100]", "benchmark.haystacks_per_level=2",
        "benchmark.questions_per_haystack=1", "run.progress=false", "rag.chunk_size=32", "rag.top_k=2",
        "+benchmark.max_new_tokens=96"]
N_SAMPLES = 2


@pytest.fixture(scope="module")
def base(tiny_llm) -> list[str]:
    """BASE over the tiny Llama."""
    return [*BASE, f"generator.model={tiny_llm}"]


def _env() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def _launcher() -> list[str]:
    # the project's preset (joblib/loky, conf/hydra/launcher/local_parallel.yaml) when it exists, else
    # hydra-joblib-launcher's own config; 2 workers either way
    preset = "local_parallel" if (ROOT / "conf/hydra/launcher/local_parallel.yaml").exists() else "joblib"
    return [f"hydra/launcher={preset}", "hydra.launcher.n_jobs=2"]


def cache_table(db: Path) -> str:
    """The cache's table of entries (one table with `key` and `value` columns)."""
    with sqlite3.connect(db) as con:
        tables = [t for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
                  if {"key", "value"} <= {c[1] for c in con.execute(f"PRAGMA table_info({t})")}]
    assert len(tables) == 1, tables
    return tables[0]


def _sweep_command(base: list[str], sweep_dir: Path, cache: Path) -> list[str]:
    return [sys.executable, "-m", "experiments.run", "-m", *_launcher(), "arm=longctx,rag",
            "longctx.margin_tokens=16,17",
            *base, f"hydra.sweep.dir={sweep_dir}", f"run.cache_dir={cache}"]


def sweep(base: list[str], sweep_dir: Path, cache: Path, timeout: int = 1500) -> list[Path]:
    """The 4-job sweep, joblib launcher, 2 jobs at a time; returns the job folders in job order."""
    res = subprocess.run(_sweep_command(base, sweep_dir, cache), cwd=ROOT, env=_env(), capture_output=True,
                         text=True, timeout=timeout)
    assert res.returncode == 0, res.stderr[-4000:]
    assert "JoblibLauncher" in (sweep_dir / "multirun.yaml").read_text()
    jobs = sorted((p.parent for p in sweep_dir.rglob("metrics.json")), key=lambda p: int(p.name.split("_")[0]))
    assert len(jobs) == 4, res.stderr[-2000:]
    return jobs


def records(run_dir: Path) -> dict[str, dict]:
    lines = (run_dir / "records.jsonl").read_bytes().split(b"\n")
    assert lines[-1] == b"", "no torn line"
    recs = [json.loads(line) for line in lines[:-1]]
    assert len(recs) == len({r["id"] for r in recs}), "no duplicated record"
    return {r["id"]: r for r in recs}


def outcome(r: dict) -> tuple:
    return r["status"], r["prediction"], r["score"]


@pytest.fixture(scope="module")
def serial(tmp_path_factory, base) -> dict[str, dict[str, dict]]:
    """Serial reference: each distinct config point once, in this process, with its own cache."""
    from experiments.run import run

    tmp = tmp_path_factory.mktemp("serial")
    refs = {}
    for arm in ("longctx", "rag"):
        out = tmp / arm
        out.mkdir()
        m = run(compose(base + [f"arm={arm}", f"run.cache_dir={tmp / 'cache'}"]), out)
        assert m["n_ok"] == N_SAMPLES
        refs[arm] = records(out)
    return refs


def assert_jobs_match(jobs: list[Path], serial: dict[str, dict[str, dict]]) -> int:
    """Every job's records equal the serial run of its arm; returns the generation calls made."""
    calls = 0
    for job in jobs:
        cfg = json.loads((job / "metrics.json").read_text())
        arm = cfg["knobs"]["arm"]
        got = records(job)
        assert set(got) == set(serial[arm])
        for sid, ref in serial[arm].items():
            assert outcome(got[sid]) == outcome(ref), (job.name, sid)
        calls += cfg["generation_calls"]
    assert [json.loads((j / "metrics.json").read_text())["knobs"]["arm"] for j in jobs] == ["longctx"] * 2 + ["rag"] * 2
    return calls


@pytest.mark.integration  # the joblib launcher's worker processes
def test_parallel_jobs_match_a_serial_run(tmp_path, serial, base):
    cache = tmp_path / "shared-cache"
    calls = assert_jobs_match(sweep(base, tmp_path / "sweep", cache), serial)
    # each distinct prompt generated at least once, at most once per job that needed it
    assert 2 * N_SAMPLES <= calls <= 4 * N_SAMPLES

    db = cache / "responses.sqlite"
    table = cache_table(db)
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        n_rows = con.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
        keys = [k for (k,) in con.execute(f"SELECT key FROM {table}")]
    assert n_rows == 2 * N_SAMPLES, "one entry per distinct prompt (same key written twice stays one row)"
    from llm.cache import ResponseCache

    cache_obj = ResponseCache(db)
    texts = {cache_obj.get(k).text for k in keys}
    cache_obj.close()
    assert texts == {r["prediction"] for arm in serial for r in serial[arm].values()}

    # The same sweep again, in parallel over the same cache: nothing is generated.
    for job in sweep(base, tmp_path / "sweep-again", cache):
        m = json.loads((job / "metrics.json").read_text())
        assert m["generation_calls"] == 0 and m["cached"] == N_SAMPLES, job.name


@pytest.mark.integration  # the joblib launcher's worker processes, SIGKILLed
def test_sweep_killed_mid_flight_resumes_to_the_serial_result(tmp_path, serial, base):
    sweep_dir, cache = tmp_path / "sweep", tmp_path / "cache"
    log = open(tmp_path / "killed.log", "wb")
    proc = subprocess.Popen(_sweep_command(base, sweep_dir, cache), cwd=ROOT, env=_env(), stdout=log,
                            stderr=subprocess.STDOUT,
                            start_new_session=True)  # its own process group: the kill reaches the workers too
    deadline = time.monotonic() + 900
    while not any(p.stat().st_size for p in sweep_dir.rglob("records.jsonl")):
        assert proc.poll() is None, (tmp_path / "killed.log").read_text()[-3000:]
        assert time.monotonic() < deadline, "no job wrote a record in 15 minutes"
        time.sleep(0.05)
    time.sleep(random.Random(8).uniform(0.0, 1.5))  # somewhere in the next generations
    assert proc.poll() is None, "the sweep finished before the kill: nothing was tested"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    log.close()
    done_before = {}  # each job's complete lines at the kill
    for path in sweep_dir.rglob("records.jsonl"):
        data = path.read_bytes()
        done_before[path.parent.name] = data[: data.rfind(b"\n") + 1]
    assert any(done_before.values()) and len(list(sweep_dir.rglob("metrics.json"))) < 4

    jobs = sweep(base, sweep_dir, cache)  # the same command again: every job resumes from its records
    assert_jobs_match(jobs, serial)
    for job in jobs:  # what was written before the kill is kept as it was (a torn last line is cut)
        assert (job / "records.jsonl").read_bytes().startswith(done_before.get(job.name, b"")), job.name
    with sqlite3.connect(cache / "responses.sqlite") as con:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_corrupted_cache_entry_is_recomputed(tmp_path, base):
    from experiments.run import run

    cache = tmp_path / "cache"
    cfg = compose(base + [f"run.cache_dir={cache}", "benchmark.haystacks_per_level=1"])
    first_dir, again_dir = tmp_path / "first", tmp_path / "again"
    first_dir.mkdir(), again_dir.mkdir()
    first = run(cfg, first_dir)
    assert first["generation_calls"] == 1
    truth = next(iter(records(first_dir).values()))["prediction"]

    db = cache / "responses.sqlite"
    table = cache_table(db)
    with sqlite3.connect(db) as con:
        ((key, value),) = con.execute(f"SELECT key, value FROM {table}").fetchall()
        data = json.loads(value)
        assert data["text"] == truth
        data["text"] = "TAMPERED " + truth
        # keep every other stored field (a checksum included) as it was: only the text rots
        tampered = value.replace(json.dumps(truth, ensure_ascii=False)[1:-1], data["text"], 1)
        assert tampered != value
        con.execute(f"UPDATE {table} SET value = ? WHERE key = ?", (tampered, key))

    again = run(cfg, again_dir)
    rec = next(iter(records(again_dir).values()))
    assert "TAMPERED" not in rec["prediction"], "a corrupted cache entry was trusted"
    assert rec["prediction"] == truth and again["generation_calls"] == 1
