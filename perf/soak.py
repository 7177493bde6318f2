"""Soak: a long fault-injection run, on demand; prints what it survived.

    python perf/soak.py                       # every phase, default sizes (tens of minutes on 2 cores)
    python perf/soak.py --samples 12 --kills 10 --writer-records 400 --phases kill,writer,endpoint,bad
    python perf/soak.py --samples 3 --kills 2 --faults 3 --model DIR --max-new-tokens 160   # a smoke run

`--model`: the generator of the `kill` and `endpoint` phases (bundled:smollm2, or a model folder such as the
tiny random-weight Llama of `python -m testsupport.tiny_llama DIR`); `--max-new-tokens` raises the synthetic
benchmark's answer limit (a tiny model's answers are quick: a longer one keeps each kill inside a generation);
`--fault-kinds` the faults the endpoint phase draws from (default: all of them).

Phases (the CI variant of each is in tests/test_crash_resume.py, test_bad_input.py):

- `kill`: a real `python -m experiments.run` (SmolLM2 on CPU) over `--samples` samples, SIGKILLed
  `--kills` times at random points (start-up included), resumed each time in the same folder; then
  a failed record and a torn line are planted and one more resume repairs them. The result must
  equal an uninterrupted run (prediction, score) with exactly one final record per sample.
- `writer`: a process appending multi-megabyte records through `RecordStore`, SIGKILLed at random
  moments until it finishes: no record lost, torn or doubled.
- `endpoint`: `python -m testsupport.fake_servers` (llm.server's test double) with a queue of injected
  faults (429, 500, 503, malformed JSON, dropped connections, hangs past the client timeout, slow streams,
  answers that drip forever) under a run with `generator=smollm2_server`; failed samples are recorded with
  their reason and retried on resume until none is left; the predictions must equal a fault-free run
  against the same server. Skipped when testsupport/fake_servers.py or conf/generator/smollm2_server.yaml is missing.
- `bad`: every bad-input case of tests/test_bad_input.py through the loaders, eval.score and
  records.jsonl; counts the inputs tried and those not refused clearly (file and line named).

Last line: one JSON object with `kills`, `faults_injected`, `bad_inputs`, `records_lost` (must be 0)
and the details per phase.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import common

from tests import test_crash_resume as crash
from tests.conftest import compose

ROOT = common.ROOT


def model_overrides(model: str, max_new_tokens: int | None) -> list[str]:
    return [f"generator.model={model}", *([f"+benchmark.max_new_tokens={max_new_tokens}"] if max_new_tokens else [])]


def kill_phase(tmp: Path, n: int, n_kills: int, rng: random.Random, model: list[str] = ()) -> dict:
    from experiments.run import run

    config = ["benchmark.languages=[en]", "benchmark.levels=[100]", f"benchmark.haystacks_per_level={n}",
              "benchmark.questions_per_haystack=1", "run.progress=false", *model]
    crash.CONFIG[:] = config  # start_run reads the module's CONFIG
    ref_dir = tmp / "kill-reference"
    ref_dir.mkdir()
    run(compose(config + [f"run.cache_dir={tmp / 'kill-ref-cache'}"]), ref_dir)
    reference = crash.by_id(crash.read_lines(ref_dir / "records.jsonl")[0])
    points, k = [0], 0
    for _ in range(n_kills - 1):
        k = min(n - 2, k + rng.randint(0, 2))
        points.append(k)
    run_dir, cache = tmp / "kill-run", tmp / "kill-cache"
    result = crash.kill_and_resume(run_dir, cache, rng, tmp / "kill.log", n, points)
    final = crash.by_id(result["records"])
    mismatched = [sid for sid, r in reference.items()
                  if sid not in final or crash.outcome(final[sid]) != crash.outcome(r)]
    # plant a failed record and a torn line; one more resume must repair both
    victim = sorted(final)[rng.randrange(n)]
    path = run_dir / "records.jsonl"
    kept = [line for line in path.read_bytes().split(b"\n")[:-1] if json.loads(line)["id"] != victim]
    failed = {k: v for k, v in final[victim].items() if k not in ("prediction", "score", "scores")}
    path.write_bytes(b"".join(line + b"\n" for line in kept)
                     + (json.dumps({**failed, "status": "failed", "reason": "soak: planted"}) + "\n").encode()
                     + b'{"id": "torn", "sta')
    proc = crash.start_run(run_dir, cache, tmp / "kill.log")
    assert proc.wait(timeout=3600) == 0
    records, torn = crash.read_lines(path)
    again = crash.by_id(records)
    lost = sum(1 for sid in reference if again.get(sid, {}).get("status") != "ok")
    assert not torn and not mismatched and crash.outcome(again[victim]) == crash.outcome(reference[victim])
    return {"kills": result["kills"], "kill_points": points, "records_at_kills": result["records_at_kills"],
            "torn_tails_seen": result["torn_tails"], "planted_faults": 2, "mismatched": len(mismatched),
            "records_lost": lost, "samples": n}


def writer_phase(tmp: Path, n: int, rng: random.Random) -> dict:
    folder = tmp / "writer"
    folder.mkdir()
    return crash.kill_writer(folder, rng, n=n, rounds=10_000)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _http(url: str, payload: dict | None = None) -> dict:
    data = json.dumps(payload).encode() if payload is not None else None
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read() or b"{}")


FAULT_KINDS = ("429", "500", "503", "malformed", "drop", "slow_stream:0.05", "slow:0.2", "no_usage", "hang:25",
               "drip:0.5")


def endpoint_phase(tmp: Path, n: int, n_faults: int, rng: random.Random, model: str = "bundled:smollm2",
                   max_new_tokens: int | None = None, kinds: tuple[str, ...] = FAULT_KINDS) -> dict:
    if not all((ROOT / p).exists() for p in ("testsupport/fake_servers.py", "conf/generator/smollm2_server.yaml")):
        return {"skipped": "testsupport/fake_servers.py or conf/generator/smollm2_server.yaml not there"}
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    log = open(tmp / "server.log", "ab")
    server = subprocess.Popen([sys.executable, "-m", "testsupport.fake_servers", "--model", model,
                               "--port", str(port)], cwd=ROOT, env=crash._env(), stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(600):
            try:
                _http(f"{base}/v1/models")
                break
            except OSError:
                time.sleep(0.5)
        else:
            raise RuntimeError("the server did not come up")
        args = ["-m", "experiments.run", "generator=smollm2_server", f"generator.base_url={base}/v1",
                "generator.max_retries=2", "generator.backoff_base_s=0.05", "generator.backoff_max_s=0.2",
                "generator.timeout_s=20", "benchmark.languages=[en]", "benchmark.levels=[100]",
                f"benchmark.haystacks_per_level={n}", "benchmark.questions_per_haystack=1", "run.progress=false",
                f"generator.model={model}", f"generator.tokenizer={model}",
                *([f"+benchmark.max_new_tokens={max_new_tokens}"] if max_new_tokens else [])]

        def run(run_dir: Path, cache: Path) -> dict:
            res = subprocess.run([sys.executable, *args, f"hydra.run.dir={run_dir}", f"run.cache_dir={cache}"],
                                 cwd=ROOT, env=crash._env(), capture_output=True, text=True, timeout=7200)
            assert res.returncode == 0, res.stderr[-3000:]
            return json.loads((run_dir / "metrics.json").read_text())

        run(tmp / "endpoint-clean", tmp / "endpoint-clean-cache")
        reference = crash.by_id(crash.read_lines(tmp / "endpoint-clean" / "records.jsonl")[0])
        faults = [rng.choice(kinds) for _ in range(n_faults)]
        _http(f"{base}/_faults", {"faults": faults})
        run_dir, cache = tmp / "endpoint-faulty", tmp / "endpoint-faulty-cache"
        failed_per_pass, passes = [], 0
        while True:
            m = run(run_dir, cache)
            passes += 1
            failed_per_pass.append(m["n_failed"])
            if m["n_failed"] == 0 or passes >= 20:
                break
        left = len(_http(f"{base}/_stats").get("faults_queued", []))
        records = crash.by_id(crash.read_lines(run_dir / "records.jsonl")[0])
        reasons = sorted({r.get("reason", "")[:60] for r in crash.read_lines(run_dir / "records.jsonl")[0]
                          if r["status"] == "failed"})
        lost = sum(1 for sid in reference if records.get(sid, {}).get("status") != "ok")
        mismatched = sum(1 for sid, r in reference.items()
                         if sid in records and records[sid].get("prediction") != r["prediction"])
        return {"faults_injected": n_faults - left, "faults_queued_left": left, "passes": passes,
                "failed_per_pass": failed_per_pass, "failure_reasons": reasons, "records_lost": lost,
                "mismatched": mismatched, "samples": n}
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def bad_input_phase(tmp: Path) -> dict:
    import re

    from tests import test_bad_input as bad

    tried = unclear = 0
    problems: list[str] = []
    for name in bad.LOADERS:
        fname = bad.LOADERS[name][0]
        cases = [(c[0], c[1]) for c in bad._bad_cases(name)]
        cases += [("binary garbage", [bad.LOADERS[name][1], bad.GARBAGE]),
                  ("huge broken line", [bad.LOADERS[name][1], '{"context": "' + "x" * bad.HUGE])]
        for i, (label, rows) in enumerate(cases):
            path = bad._lines(tmp / "bad" / name / str(i) / fname, rows)
            tried += 1
            try:
                bad._load(name, path)
                ok = False
            except ValueError as err:
                ok = path.name in str(err) and ":2" in str(err) and len(str(err)) < bad.MAX_MESSAGE
            except Exception as err:  # noqa: BLE001 - counted as unclear
                ok, label = False, f"{label} ({type(err).__name__})"
            if not ok:
                unclear += 1
                problems.append(f"{name}: {label}")
    from eval.score import main as score_main

    for i, (label, row, _) in enumerate(bad.SCORE_CASES + [("binary garbage", bad.GARBAGE, "")]):
        path = bad._lines(tmp / "bad" / "score" / f"{i}.jsonl", [bad.GOOD_PRED, row])
        tried += 1
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                code = score_main(["--benchmark", "synthetic", "--task", "single_hop", "--skip-bad", str(path)])
            ok = code == 0
        except Exception as err:  # noqa: BLE001
            ok, label = False, f"{label} ({type(err).__name__})"
        if not ok:
            unclear += 1
            problems.append(f"eval.score --skip-bad: {label}")
    from experiments.records import RecordStore

    for i, row in enumerate(["not json", "[1]", '{"status": "ok"}', bad.GARBAGE.replace(b"\n", b" ")]):
        path = bad._lines(tmp / "bad" / "records" / str(i) / "records.jsonl",
                          [{"id": "a", "status": "ok"}, row, {"id": "b"}])
        tried += 1
        try:
            RecordStore(path).load()
            ok = False
        except ValueError as err:
            ok = bool(re.search(r"records\.jsonl:2", str(err)))
        if not ok:
            unclear += 1
            problems.append(f"records.jsonl: {row!r:.30}")
    return {"bad_inputs": tried, "not_clear": unclear, "problems": problems}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--samples", type=int, default=10)
    p.add_argument("--kills", type=int, default=8)
    p.add_argument("--writer-records", type=int, default=300)
    p.add_argument("--faults", type=int, default=24)
    p.add_argument("--seed", type=int, default=8)
    p.add_argument("--phases", default="kill,writer,endpoint,bad")
    p.add_argument("--tmp", type=Path, default=None, help="work folder (default: a temporary one, removed)")
    p.add_argument("--model", default="bundled:smollm2", help="the generator of the kill and endpoint phases")
    p.add_argument("--max-new-tokens", type=int, default=None, help="the synthetic benchmark's answer limit")
    p.add_argument("--fault-kinds", default=",".join(FAULT_KINDS),
                   help="the faults the endpoint phase draws from (hang and drip each cost a 20 s client timeout)")
    args = p.parse_args()
    rng = random.Random(args.seed)
    phases = args.phases.split(",")
    out: dict = {}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        tmp = args.tmp or Path(scratch)
        tmp.mkdir(parents=True, exist_ok=True)
        if "writer" in phases:
            out["writer"] = writer_phase(tmp, args.writer_records, rng)
            print(f"writer: {out['writer']}", flush=True)
        if "bad" in phases:
            out["bad"] = bad_input_phase(tmp)
            print(f"bad inputs: {out['bad']}", flush=True)
        if "kill" in phases:
            out["kill"] = kill_phase(tmp, args.samples, args.kills, rng,
                                     model_overrides(args.model, args.max_new_tokens))
            print(f"kill/resume: {out['kill']}", flush=True)
        if "endpoint" in phases:
            out["endpoint"] = endpoint_phase(tmp, args.samples, args.faults, rng, args.model, args.max_new_tokens,
                                             tuple(k for k in args.fault_kinds.split(",") if k))
            print(f"endpoint: {out['endpoint']}", flush=True)
    figures = {
        "kills": out.get("kill", {}).get("kills", 0) + out.get("writer", {}).get("kills", 0),
        "faults_injected": (out.get("endpoint", {}).get("faults_injected", 0)
                            + out.get("kill", {}).get("planted_faults", 0)),
        "bad_inputs": out.get("bad", {}).get("bad_inputs", 0),
        "bad_inputs_not_clear": out.get("bad", {}).get("not_clear", 0),
        "records_lost": sum(out.get(k, {}).get("records_lost", out.get(k, {}).get("lost", 0))
                            for k in ("kill", "writer", "endpoint")),
        "mismatched_predictions": (out.get("kill", {}).get("mismatched", 0)
                                   + out.get("endpoint", {}).get("mismatched", 0)),
        "wall_s": round(time.perf_counter() - t0, 1),
        "phases": out,
    }
    common.emit(figures)


if __name__ == "__main__":
    main()
