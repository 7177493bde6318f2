"""The SLURM path on this machine: `hydra/launcher=slurm_local` (conf/hydra/launcher/slurm_local.yaml).

hydra-submitit-launcher's `submitit_local` launcher goes through the same steps as `slurm_cpu` /
`slurm_gpu` (each config point pickled to `${hydra.sweep.dir}/.submitit/<job id>/`, run by
`python -m submitit.core._submit` in its own process, its result pickled back and collected by
the launcher); only the process is started by submitit instead of by sbatch. So:

- `test_slurm_local_preset_shares_the_slurm_resources`: the preset is submitit's LocalLauncher with
  slurm_cpu's resource values and the same job folder;
- `test_retrieval_sweep_through_submitit_matches_a_serial_run`: `arm=rag retriever=bm25
  rag.top_k=2,4 generator=none` swept through submitit, every job's records equal to the same
  config point run serially in this process (timing fields aside), submitit's job folders and
  result pickles present;
- `test_generation_sweep_killed_mid_flight_resumes_to_the_serial_records`: a tiny generation sweep
  (generator=smollm2's config over the tiny random-weight Llama of conftest's `tiny_llm`: SmolLM2's tokenizer,
  deterministic greedy answers that run to the token limit, ~1 s each at 160 tokens) through submitit,
  SIGKILLed (launcher, submitit controllers and workers: one process group) while its jobs are writing
  records; the same command again resumes every job to exactly the serial records, keeps what was written
  before the kill, and the shared SQLite caches under run.cache_dir pass `PRAGMA integrity_check` with one
  response per distinct prompt.
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
from omegaconf import OmegaConf

from tests.conftest import CONF, ROOT, compose
from tests.test_parallel_jobs import cache_table, records

LAUNCHER = "hydra_plugins.hydra_submitit_launcher.submitit_launcher.LocalLauncher"
# fields that measure the run rather than say what it produced: every duration (a key ending in "_s": wall and
# CPU seconds, their repeats) and the cost priced from them; `cached` / `calls` / `timings_replayed` say where an
# answer came from (a resumed job may find in the cache an answer the killed run stored but never recorded)
NOT_COMPARED = {"cost_usd", "cached", "calls", "timings_replayed"}


def _measures_the_run(key: str) -> bool:
    return key.endswith("_s") or key in NOT_COMPARED

RETRIEVAL = ["arm=rag", "retriever=bm25", "generator=none", "benchmark=synthetic", "benchmark.levels=[1k,2k]",
             "benchmark.languages=[en]", "benchmark.questions_per_haystack=2", "benchmark.haystacks_per_level=2",
             "run.progress=false"]
# two small haystacks of one question each per job: a group's records are written together once it is
# answered, so the first record comes from the first haystack while the second is still generating at the
# kill (two questions over one haystack were written at once, and the kill could come after both jobs).
# A job's time is mostly its process start and model load. submitit starts every job at once and,
# unlike joblib's loky, does not cap each worker's threads: one torch thread per job (two jobs with all
# cores each ran ~100x slower per generation on a 2-core machine)
GENERATION = ["arm=rag", "retriever=bm25", "benchmark=synthetic", "benchmark.levels=[100]", "benchmark.languages=[en]",
              "benchmark.questions_per_haystack=1", "benchmark.haystacks_per_level=2", "rag.chunk_size=32",
              "generator.threads=1", "run.progress=false", "+benchmark.max_new_tokens=160"]
TOP_K = (2, 4)


def _env() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def _compose_launcher(overrides: list[str]):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return hydra_compose(config_name="config", overrides=overrides, return_hydra_config=True).hydra.launcher


def _command(base: list[str], sweep_dir: Path, cache: Path) -> list[str]:
    return [sys.executable, "-m", "experiments.run", "-m", "hydra/launcher=slurm_local",
            f"rag.top_k={','.join(map(str, TOP_K))}", *base, f"hydra.sweep.dir={sweep_dir}", f"run.cache_dir={cache}"]


def _jobs(sweep_dir: Path) -> dict[int, Path]:
    """{top_k: job folder} of the finished jobs."""
    out = {}
    for metrics in sweep_dir.glob("*/metrics.json"):
        out[json.loads(metrics.read_text())["knobs"]["top_k"]] = metrics.parent
    return out


def _sweep(base: list[str], sweep_dir: Path, cache: Path, timeout: int = 600) -> dict[int, Path]:
    res = subprocess.run(_command(base, sweep_dir, cache), cwd=ROOT, env=_env(), capture_output=True, text=True,
                         timeout=timeout)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-4000:]
    assert LAUNCHER.rsplit(".", 1)[1] in (sweep_dir / "multirun.yaml").read_text()
    jobs = _jobs(sweep_dir)
    assert sorted(jobs) == list(TOP_K), res.stderr[-3000:]
    return jobs


def _serial(base: list[str], out: Path, cache: Path) -> dict[int, dict[str, dict]]:
    """Each config point of the sweep run in this process, one after the other (their own cache)."""
    from experiments.run import run

    refs = {}
    for k in TOP_K:
        run_dir = out / f"top_k={k}"
        run_dir.mkdir(parents=True)
        run(compose([*base, f"rag.top_k={k}", f"run.cache_dir={cache}"]), run_dir)
        refs[k] = records(run_dir)
    return refs


def _comparable(rec: dict) -> dict:
    return {k: v for k, v in rec.items() if not _measures_the_run(k)}


def _assert_match(jobs: dict[int, Path], serial: dict[int, dict[str, dict]]) -> None:
    for k, job in jobs.items():
        got = records(job)
        assert list(got) == list(serial[k]), job.name  # same samples, same order
        for sid, ref in serial[k].items():
            assert _comparable(got[sid]) == _comparable(ref), (job.name, sid)


def _submitit_ran(sweep_dir: Path, n: int) -> None:
    """Each job went through submitit: a pickled submission and a pickled result in its job folder."""
    results = list((sweep_dir / ".submitit").glob("*/*_result.pkl"))
    assert len(results) >= n and len(list((sweep_dir / ".submitit").glob("*/*_submitted.pkl"))) >= n


def _caches_are_consistent(cache: Path) -> list[Path]:
    dbs = sorted(cache.rglob("*.sqlite"))
    assert dbs, f"no SQLite cache under {cache}"
    for db in dbs:
        with sqlite3.connect(db) as con:
            assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok", db
    return dbs


def test_slurm_local_preset_shares_the_slurm_resources():
    from hydra_plugins.hydra_submitit_launcher.config import LocalQueueConf

    local = _compose_launcher(["hydra/launcher=slurm_local"])
    cpu = _compose_launcher(["hydra/launcher=slurm_cpu"])
    assert local._target_ == LAUNCHER
    shared = set(OmegaConf.structured(LocalQueueConf).keys()) - {"_target_"}
    assert {k: local[k] for k in shared} == {k: cpu[k] for k in shared}, "slurm_local drifted from slurm_cpu"
    assert local.submitit_folder.endswith(".submitit/%j")
    assert _compose_launcher(["hydra/launcher=slurm_local", "hydra.launcher.timeout_min=5"]).timeout_min == 5
    from hydra.errors import ConfigCompositionException

    with pytest.raises(ConfigCompositionException):  # a SLURM-only key is refused, not silently ignored
        _compose_launcher(["hydra/launcher=slurm_local", "hydra.launcher.partition=gpu"])


@pytest.mark.integration  # submitit's job processes
def test_retrieval_sweep_through_submitit_matches_a_serial_run(tmp_path, tiny_llm):
    # SmolLM2's tokenizer from the tiny Llama's folder (the same tokenizer, without reading the GGUF in each job)
    base = [*RETRIEVAL, f"generator.tokenizer={tiny_llm}"]
    serial = _serial(base, tmp_path / "serial", tmp_path / "serial-cache")
    assert all(len(recs) == 8 and all(r["status"] == "retrieved" for r in recs.values()) for recs in serial.values())
    jobs = _sweep(base, tmp_path / "sweep", tmp_path / "cache")
    _assert_match(jobs, serial)
    _submitit_ran(tmp_path / "sweep", len(TOP_K))
    # retrieval only (BM25, no generator): the shared cache holds the RAG arm's files, one set for both jobs
    chunk_files = sorted((tmp_path / "cache" / "rag" / "chunks").rglob("*"))
    assert [f for f in chunk_files if f.is_file()], "the jobs shared no chunk cache"
    for db in (tmp_path / "cache").rglob("*.sqlite"):  # none today; any that appears must be sound
        with sqlite3.connect(db) as con:
            assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok", db


@pytest.mark.integration  # submitit's job processes, SIGKILLed
def test_generation_sweep_killed_mid_flight_resumes_to_the_serial_records(tmp_path, tiny_llm):
    base = [*GENERATION, f"generator.model={tiny_llm}"]
    serial = _serial(base, tmp_path / "serial", tmp_path / "serial-cache")
    assert all(len(recs) == 2 and all(r["status"] == "ok" for r in recs.values()) for recs in serial.values())

    sweep_dir, cache = tmp_path / "sweep", tmp_path / "cache"
    log = open(tmp_path / "killed.log", "wb")
    proc = subprocess.Popen(_command(base, sweep_dir, cache), cwd=ROOT, env=_env(), stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)  # one group: launcher and workers
    deadline = time.monotonic() + 300
    while not any(p.stat().st_size for p in sweep_dir.glob("*/records.jsonl")):
        assert proc.poll() is None, (tmp_path / "killed.log").read_text()[-3000:]
        assert time.monotonic() < deadline, "no job wrote a record in 5 minutes"
        time.sleep(0.05)
    time.sleep(random.Random(16).uniform(0.0, 0.2))  # within the job's next generation (~1 s on a CPU)
    assert proc.poll() is None, "the sweep finished before the kill: nothing was tested"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    log.close()
    done_before = {}
    for path in sweep_dir.glob("*/records.jsonl"):
        data = path.read_bytes()
        done_before[path.parent.name] = data[: data.rfind(b"\n") + 1]
    assert any(done_before.values()) and len(_jobs(sweep_dir)) < len(TOP_K), "the kill came after the sweep"

    jobs = _sweep(base, sweep_dir, cache)  # the same command again: every job resumes from its records
    _assert_match(jobs, serial)
    for job in jobs.values():  # what was written before the kill is kept as it was
        assert (job / "records.jsonl").read_bytes().startswith(done_before.get(job.name, b"")), job.name
    _submitit_ran(sweep_dir, len(TOP_K))
    assert cache / "responses.sqlite" in _caches_are_consistent(cache)
    db = cache / "responses.sqlite"
    with sqlite3.connect(db) as con:
        n_rows = con.execute(f"SELECT COUNT(*) FROM {cache_table(db)}").fetchone()[0]
    prompts = {(k, sid) for k in TOP_K for sid in serial[k]}
    assert n_rows == len(prompts), "one cache entry per distinct prompt"
