"""The work-rate probe (llm/work_probe.py) on the real transformers backend over the tiny random-weight Llama, and
the runner pricing a price=cpu run at its rates (issue 38, item 5)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from llm.work_model import FEATURES, WorkModel, WorkPriced
from llm.work_probe import calibrated, long_length, probe_key, probe_lengths

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def own_folder(monkeypatch):
    monkeypatch.delenv("RAGLC_WORK_RATES_DIR", raising=False)  # conftest's shared folder: these tests keep their own


def test_the_probe_measures_once_per_setup_and_keeps_the_rates(tiny_generator, tmp_path):
    calls = []
    real = tiny_generator.generate
    tiny_generator.generate = lambda prompts: calls.append(len(prompts)) or real(prompts)  # count, then generate
    try:
        work = calibrated(tiny_generator, tmp_path)
        assert work is not None and len(work.rates) == len(FEATURES) and min(work.rates) >= 0
        short = 2 * len(probe_lengths(tiny_generator.context_window))
        assert long_length(tiny_generator.context_window) is not None
        assert sum(work.rates) > 0 and work.n == 2 * short + 2
        assert calls[1:] == [2] * short + [1, 1]  # a warm-up, batches of two, then the long prompt alone, twice
        kept = list((tmp_path / "work_rates").glob("*.json"))
        assert [p.stem for p in kept] == [probe_key(tiny_generator)]
        n_calls = len(calls)
        assert calibrated(tiny_generator, tmp_path) == work and len(calls) == n_calls  # read back, nothing generated
    finally:
        tiny_generator.generate = real
    before = probe_key(tiny_generator)
    tiny_generator.decode_batch += 1  # another batching policy is another timing setup: measured anew
    try:
        assert probe_key(tiny_generator) != before
    finally:
        tiny_generator.decode_batch -= 1


def test_a_shared_folder_of_rates_is_read_from_the_environment(tiny_generator, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGLC_WORK_RATES_DIR", str(tmp_path / "shared"))
    work = calibrated(tiny_generator, tmp_path / "cache")
    assert work is not None and not (tmp_path / "cache").exists()
    assert [p.stem for p in (tmp_path / "shared").glob("*.json")] == [probe_key(tiny_generator)]


def test_unreadable_kept_rates_are_measured_again(tiny_generator, tmp_path):
    path = tmp_path / "work_rates" / f"{probe_key(tiny_generator)}.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"rates": [1, 2], "features": ["an old set"]}', encoding="utf-8")
    work = calibrated(tiny_generator, tmp_path)
    assert work is not None and WorkModel.from_dict(json.loads(path.read_text(encoding="utf-8"))) == work


@pytest.mark.integration
def test_a_cpu_priced_run_records_its_probe_and_prices_its_answers_at_those_rates(tiny_conf, tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    res = subprocess.run([sys.executable, "-m", "experiments.run", tiny_conf, "arm=rag", "retriever=bm25",
                          "generator=tiny_llm", "price=cpu", "benchmark=synthetic", "benchmark.languages=[en]",
                          "benchmark.levels=[400]", "benchmark.questions_per_haystack=2", "rag.chunk_size=64",
                          "rag.top_k=2", f"hydra.run.dir={tmp_path / 'run'}", f"run.cache_dir={tmp_path / 'cache'}",
                          "run.progress=false"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    work = WorkModel.from_dict(metrics["work_rates"])
    assert list((tmp_path / "cache" / "work_rates").glob("*.json"))
    from llm.cost import build_cost_model

    priced = WorkPriced(build_cost_model(metrics["price"]), work)
    records = [json.loads(x) for x in (tmp_path / "run" / "records.jsonl").read_text().splitlines() if x]
    answered = [r for r in records if r.get("status") == "ok"]
    assert answered
    for rec in answered:
        expected = priced.charged_seconds(rec) * metrics["price"]["usd_per_hour"] / 3600
        assert rec["cost_usd"] == pytest.approx(expected, rel=1e-6)
        measured_twice = {**rec, "cpu_s": 2 * rec["cpu_s"]}  # priced by its tokens: its measured seconds don't count
        assert priced.charged_seconds(measured_twice) == pytest.approx(priced.charged_seconds(rec), rel=1e-9)


def test_a_window_too_small_for_the_probe_leaves_the_measured_seconds(tiny_generator, monkeypatch, caplog):
    import llm.work_probe as probe

    assert probe.probe_lengths(60) == [1, 7] and probe.probe_lengths(8192) == [16, 128, 512]
    assert probe.long_length(8192) == 1536 and probe.long_length(60) == 15 and probe.long_length(4) is None
    monkeypatch.setattr(probe, "probe_lengths", lambda window: [16, 128])  # 128 words cannot fit 60 tokens
    monkeypatch.setattr(tiny_generator, "context_window", 60)
    with caplog.at_level("WARNING", logger="llm.work_probe"):
        assert probe.measure(tiny_generator) is None
    assert "the probe could not run" in caplog.text and "exceeds the window of 60" in caplog.text


def test_a_probe_disturbed_by_a_busy_machine_is_measured_again(tiny_generator, monkeypatch, caplog):
    """The first two probes' CPU seconds are noise (a neighbour's bursts), the third's follow the tokens: the third
    is kept; when every probe is noise the best is kept, with a warning that names the poor fit."""
    import random

    import llm.work_probe as probe

    real, probes, rng = tiny_generator.generate, [], random.Random(0)

    def generate(prompts):
        gens = real(prompts)
        if len(prompts) == 1 and prompts[0].max_new_tokens == 2:  # the probe's warm-up starts a probe
            probes.append(len(probes))
        for g in gens:
            g.cpu_s = (1e-3 * g.prompt_tokens + 0.05 * g.completion_tokens if len(probes) >= noisy_until
                       else rng.uniform(0.0, 5.0))
        return gens

    monkeypatch.setattr(tiny_generator, "generate", generate)
    noisy_until = 3  # the third probe (index 2) is clean
    with caplog.at_level("INFO", logger="llm.work_probe"):
        work = probe.measure(tiny_generator)
    assert len(probes) == 3 and work.r2 > 0.99
    assert work.rates[0] == pytest.approx(1e-3, rel=1e-3) and work.rates[2] == pytest.approx(0.05, rel=1e-3)
    assert caplog.text.count("measuring again") == 2 and "too busy" not in caplog.text
    probes.clear()
    caplog.clear()
    noisy_until = 99  # every probe disturbed
    with caplog.at_level("INFO", logger="llm.work_probe"):
        work = probe.measure(tiny_generator)
    assert len(probes) == probe.PROBE_TRIES and work.r2 < probe.MIN_R2
    assert "too busy to measure per-token rates well" in caplog.text
