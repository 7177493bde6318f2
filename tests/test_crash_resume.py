"""Crash safety: kill -9 a real `python -m experiments.run` (the transformers backend on CPU) at random points,
more than once, then resume in the same run folder; the result must equal an uninterrupted run.

- `test_killed_run_resumes_to_the_uninterrupted_result`: the real thing. Kill points are drawn
  with a fixed seed: once during start-up (before any record), then twice after k records plus a
  random fraction of a sample's generation time. After each kill: every line of records.jsonl is a
  whole JSON record (a torn tail is counted, the next open cuts it), no id twice. At the end:
  exactly one record per sample, (prediction, score, scores) identical to an uninterrupted run in
  another folder with its own cache, metrics.json agrees, and the resumed process regenerated
  nothing already recorded. Then a `failed` record and a torn line are planted: the next resume
  retries the failed sample (from the cache) and repairs the tail.
- `test_record_writer_survives_kill_at_any_moment`: many kills of a process appending large
  records through `RecordStore` in a tight loop (no model): no record is lost, torn or doubled.

The model is generator=smollm2's config over the tiny random-weight Llama (conftest's `tiny_llm`: SmolLM2's
tokenizer, the real transformers backend): greedy decoding of fixed weights is deterministic, so the resumed
records equal the uninterrupted run's exactly when resuming is right, as with SmolLM2. Its answers run to the
token limit (a random model seldom ends one); 160 tokens take about a second on a CPU, as a SmolLM2 answer
did, so the kills land inside a sample's generation.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, compose

N_SAMPLES = 5
CONFIG = ["benchmark.languages=[en]", "benchmark.levels=[100]", f"benchmark.haystacks_per_level={N_SAMPLES}",
          "benchmark.questions_per_haystack=1", "run.progress=false"]
SEED = 8
TINY_ANSWERS = ["+benchmark.max_new_tokens=160"]  # with `generator.model=<tiny Llama>`: ~1 s per answer


def _env() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
            "PYTHONUNBUFFERED": "1"}


def start_run(run_dir: Path, cache: Path, log: Path, extra: list[str] = (), preexec_fn=None) -> subprocess.Popen:
    """A real run as a user starts it; stdout and stderr to `log` (`preexec_fn`: run in the child before it starts)."""
    fh = open(log, "ab")
    proc = subprocess.Popen([sys.executable, "-m", "experiments.run", *CONFIG, *extra, f"hydra.run.dir={run_dir}",
                             f"run.cache_dir={cache}"], cwd=ROOT, env=_env(), stdout=fh, stderr=subprocess.STDOUT,
                            preexec_fn=preexec_fn)
    fh.close()
    return proc


def read_lines(path: Path) -> tuple[list[dict], bool]:
    """Whole records of a records.jsonl, and whether a torn (unterminated) last line follows them.

    Anything but a torn tail (a bad line in the middle, an id twice) fails the test.
    """
    if not path.exists():
        return [], False
    data = path.read_bytes()
    raws = data.split(b"\n")
    torn = raws[-1] != b""
    records = [json.loads(r) for r in raws[:-1]]  # every terminated line must parse
    last: dict[str, str] = {}
    for r in records:  # an id comes again only to retry a failed sample
        assert last.get(r["id"], "failed") == "failed", f"duplicated record {r['id']} in {path}"
        last[r["id"]] = r["status"]
    return records, torn


def wait_for_records(proc: subprocess.Popen, path: Path, k: int, timeout: float = 900) -> list[float]:
    """Wait until `path` holds `k` records; returns when each of them appeared."""
    seen: list[float] = []
    deadline = time.monotonic() + timeout
    while len(seen) < k:
        n = len(read_lines(path)[0])
        while len(seen) < n:
            seen.append(time.monotonic())
        if proc.poll() is not None and len(seen) < k:
            raise AssertionError(f"the run ended (exit {proc.returncode}) with {len(seen)} records, waiting for {k}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {k} records ({len(seen)} so far)")
        time.sleep(0.02)
    return seen


def kill(proc: subprocess.Popen) -> bool:
    """SIGKILL; False when the process had exited on its own just before (its exit code is 0)."""
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    if proc.returncode == 0:
        return False
    assert proc.returncode == -signal.SIGKILL
    return True


def by_id(records: list[dict]) -> dict[str, dict]:
    return {r["id"]: r for r in records}


def outcome(r: dict) -> tuple:
    return r["status"], r["prediction"], r["score"], r["scores"]


def kill_and_resume(run_dir: Path, cache: Path, rng: random.Random, log: Path, n_samples: int,
                    kill_after: list[int], extra: list[str] = ()) -> dict:
    """Start, kill after each entry of `kill_after` records (0: during start-up), then finish.

    Returns counts and the final records; asserts the invariants after each kill.
    """
    path = run_dir / "records.jsonl"
    kills, torn_tails, per_kill = 0, 0, []
    for k in kill_after:
        before = len(read_lines(path)[0])
        hydra_config = run_dir / ".hydra" / "config.yaml"
        fresh_folder = not hydra_config.exists()
        proc = start_run(run_dir, cache, log, extra)
        if k == 0:
            # somewhere in imports, config, model loading: at a drawn moment, or as the run proper begins (Hydra
            # writes the run's config) if that comes first, so a fast machine is still in start-up at the kill
            until = time.monotonic() + rng.uniform(0.5, 4.0)
            while time.monotonic() < until and not (fresh_folder and hydra_config.exists()):
                time.sleep(0.01)
        else:
            fresh = wait_for_records(proc, path, k)[before:]  # records this process wrote, when
            # the time one sample takes (not counting start-up, which the first fresh record includes)
            gap = fresh[-1] - fresh[-2] if len(fresh) >= 2 else 1.0
            time.sleep(rng.uniform(0.0, 0.9) * gap)  # a random point of the next sample's generation
        assert proc.poll() is None and kill(proc), "the run finished before the kill: nothing was tested"
        kills += 1
        records, torn = read_lines(path)
        torn_tails += torn
        assert len(records) >= before, "a kill lost records already written"
        assert len(records) < n_samples and not (run_dir / "metrics.json").exists()
        per_kill.append(len(records))
    recorded_before_last = len(read_lines(path)[0])
    proc = start_run(run_dir, cache, log, extra)
    assert proc.wait(timeout=1800) == 0, log.read_text()[-3000:]
    records, torn = read_lines(path)
    assert not torn
    metrics = json.loads((run_dir / "metrics.json").read_text())
    return {"kills": kills, "torn_tails": torn_tails, "records_at_kills": per_kill, "records": records,
            "metrics": metrics, "recorded_before_last": recorded_before_last}


@pytest.mark.integration  # a real `python -m experiments.run`, SIGKILLed three times
def test_killed_run_resumes_to_the_uninterrupted_result(tmp_path, tiny_llm):
    from experiments.run import run

    extra = [f"generator.model={tiny_llm}", *TINY_ANSWERS]
    rng = random.Random(SEED)
    # The uninterrupted run, in this process, with its own cache.
    ref_dir = tmp_path / "reference"
    ref_dir.mkdir()
    ref_metrics = run(compose(CONFIG + extra + [f"run.cache_dir={tmp_path / 'ref-cache'}"]), ref_dir)
    reference = by_id(read_lines(ref_dir / "records.jsonl")[0])
    assert len(reference) == N_SAMPLES and ref_metrics["n_ok"] == N_SAMPLES

    k1 = rng.randint(1, N_SAMPLES - 3)
    k2 = rng.randint(k1 + 1, N_SAMPLES - 2)
    run_dir, cache, log = tmp_path / "killed", tmp_path / "cache", tmp_path / "killed.log"
    result = kill_and_resume(run_dir, cache, rng, log, N_SAMPLES, [0, k1, k2], extra)
    assert result["kills"] == 3
    assert (result["records_at_kills"][0] == 0 and result["records_at_kills"][1] >= k1
            and result["records_at_kills"][2] >= k2)

    final = by_id(result["records"])
    assert len(result["records"]) == N_SAMPLES and set(final) == set(reference), "exactly one record per sample"
    for sid, ref in reference.items():
        assert outcome(final[sid]) == outcome(ref), sid
    m = result["metrics"]
    assert (m["n"], m["n_ok"], m["n_failed"]) == (N_SAMPLES, N_SAMPLES, 0) and m["score"] == ref_metrics["score"]
    # The last process generated at most the samples that had no record yet (the others came from
    # records; a sample generated but killed before its record was written comes from the cache).
    assert m["generation_calls"] <= N_SAMPLES - result["recorded_before_last"]

    # The run as if one sample had failed (a flaky endpoint: its record says failed) and the last
    # write had been torn (a power cut): the next resume retries the failed sample, from the cache,
    # and cuts the torn line.
    path = run_dir / "records.jsonl"
    victim = sorted(final)[rng.randrange(N_SAMPLES)]
    failed = {k: v for k, v in final[victim].items() if k not in ("prediction", "score", "scores")}
    kept = [line for line in path.read_bytes().split(b"\n")[:-1] if json.loads(line)["id"] != victim]
    path.write_bytes(b"".join(line + b"\n" for line in kept)
                     + (json.dumps({**failed, "status": "failed",
                                    "reason": "GenerationError: HTTP 503"}) + "\n").encode()
                     + b'{"id": "torn", "status": "o')
    proc = start_run(run_dir, cache, log, extra)
    assert proc.wait(timeout=900) == 0, log.read_text()[-3000:]
    records, torn = read_lines(path)
    assert not torn and len(records) == N_SAMPLES + 1, "the torn line is gone; the failed sample's retry added"
    assert [r["status"] for r in records[-2:]] == ["failed", "ok"] and records[-1]["id"] == victim
    again = by_id(records)  # the last record of an id wins
    assert len(again) == N_SAMPLES
    assert outcome(again[victim]) == outcome(reference[victim]) and again[victim]["cached"] is True
    m = json.loads((run_dir / "metrics.json").read_text())
    assert m["generation_calls"] == 0 and (m["n_ok"], m["n_failed"]) == (N_SAMPLES, 0)
    print(f"\nkills survived: {result['kills']}, records at kills: {result['records_at_kills']}, "
          f"torn tails: {result['torn_tails']}, records lost: 0")


WRITER = textwrap.dedent("""
    import hashlib, json, sys
    from experiments.records import RecordStore

    store = RecordStore(sys.argv[1])
    n = int(sys.argv[2])
    done = store.load()  # repairs a torn tail
    print("ready", flush=True)
    for i in range(n):
        sid = f"s{i:04d}"
        if done.get(sid, {}).get("status") == "ok":
            continue
        size = (i * 7919) % 1_000_000 + 10          # up to 1 MB: large writes can be cut by a kill
        payload = hashlib.sha256(sid.encode()).hexdigest() * (size // 64 + 1)
        store.append({"id": sid, "status": "ok", "payload": payload[:size],
                      "sha": hashlib.sha256(payload[:size].encode()).hexdigest()})
""")


def kill_writer(tmp_path: Path, rng: random.Random, n: int = 150, rounds: int = 200, min_kills: int = 0) -> dict:
    """Kill a process appending `n` large records through RecordStore at random moments, restart it
    each time, until it finishes (after at least `min_kills` kills: a writer that finishes first is
    asked for more records in the same file). Asserts nothing is lost, torn or doubled; returns the counts."""
    step = n
    import hashlib

    from experiments.records import RecordStore

    path = tmp_path / "records.jsonl"
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    kills = torn = 0
    for _ in range(rounds):
        proc = subprocess.Popen([sys.executable, str(script), str(path), str(n)], cwd=ROOT, env=_env(),
                                stdout=subprocess.PIPE)
        if rng.random() < 0.2:
            time.sleep(rng.uniform(0.0, 0.6))  # during start-up or while the last run's tail is repaired
        else:
            assert proc.stdout.readline() in (b"ready\n", b"")
            time.sleep(rng.uniform(0.0, 0.15))  # while appending
        killed = proc.poll() is None and kill(proc)
        proc.stdout.close()
        if not killed:
            assert proc.wait() == 0
            if kills >= min_kills:
                break
            n += step  # a fast machine finished first: ask the same file for more records
            continue
        kills += 1
        data = path.read_bytes() if path.exists() else b""
        torn += bool(data) and not data.endswith(b"\n")
    else:
        raise AssertionError("the writer never finished")
    records = RecordStore(path).load()
    assert sorted(records) == [f"s{i:04d}" for i in range(n)], "no record lost"
    for rec in records.values():
        assert hashlib.sha256(rec["payload"].encode()).hexdigest() == rec["sha"]
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b"" and len(lines) - 1 == n, "one whole line per record"
    return {"kills": kills, "torn_tails": torn, "records": n, "lost": 0}


def test_record_writer_survives_kill_at_any_moment(tmp_path):
    """SIGKILL at random moments of a process appending multi-megabyte records; every restart
    resumes. No record lost, none torn or doubled once the file is reopened."""
    result = kill_writer(tmp_path, random.Random(SEED), min_kills=5)
    assert result["kills"] >= 5, f"only {result['kills']} kills: the writer is too fast for this test to mean anything"
    print(f"\nwriter kills survived: {result['kills']}, torn tails repaired: {result['torn_tails']}, records lost: 0")
