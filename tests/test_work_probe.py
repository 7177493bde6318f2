"""The work-rate probe (llm/work_probe.py) on the real transformers backend over the tiny random-weight Llama, and
the runner pricing a price=cpu run at its rates (issue 38, item 5; issue 50: the runs' batches, a budget, no
retries, intervals)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from llm.work_model import FEATURES, WorkModel, WorkPriced
from llm.work_probe import calibrated, design, long_tokens, probe_key

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def own_folder(monkeypatch):
    monkeypatch.delenv("RAGLC_WORK_RATES_DIR", raising=False)  # conftest's shared folder: these tests keep their own
    import llm.work_probe as probe

    monkeypatch.setattr(probe, "_FAILED", set())


def _counting(generator, calls: list):
    real = generator.generate

    def generate(prompts):
        calls.append(len(prompts))
        return real(prompts)

    return real, generate


def test_the_probe_measures_once_per_setup_at_the_runs_batch_and_keeps_the_rates(tiny_generator, tmp_path,
                                                                               monkeypatch, caplog):
    calls: list[int] = []
    real, counting = _counting(tiny_generator, calls)
    monkeypatch.setattr(tiny_generator, "generate", counting)
    with caplog.at_level("INFO", logger="llm.work_probe"):
        work = calibrated(tiny_generator, tmp_path)
    units = design(tiny_generator)
    assert work is not None and len(work.rates) == len(FEATURES) and min(work.rates) >= 0 and not work.note
    assert calls == [1] + [u.prompts for u in units]  # a warm-up, then every batch of the design, once: no retry
    batch = tiny_generator.decode_batch
    assert max(calls) == batch and calls.count(batch) >= 6  # decoded as many together as the runs decode
    longest = max(u.doc_words for u in units)
    assert longest * 1.05 > long_tokens(tiny_generator.context_window)[-1] * 0.9  # up to the window
    assert len(work.draws) == 200 and all(len(d) == len(FEATURES) for d in work.draws)
    path = tmp_path / "work_rates" / f"{probe_key(tiny_generator)}.json"
    said = [r.getMessage() for r in caplog.records]
    assert said[0].startswith("work probe") and "at most 90 s" in said[0] and str(path) in said[0]
    assert [p.stem for p in (tmp_path / "work_rates").glob("*.json")] == [probe_key(tiny_generator)]
    n_calls = len(calls)
    assert calibrated(tiny_generator, tmp_path) == work and len(calls) == n_calls  # read back, nothing generated
    before = probe_key(tiny_generator)
    monkeypatch.setattr(tiny_generator, "decode_batch", batch + 1)  # another batch policy: another setup
    assert probe_key(tiny_generator) != before
    monkeypatch.setattr(tiny_generator, "decode_batch", batch)
    monkeypatch.setattr(tiny_generator, "context_window", tiny_generator.context_window // 2)  # another design
    assert probe_key(tiny_generator) != before


def test_a_shared_folder_of_rates_is_read_from_the_environment(tiny_generator, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGLC_WORK_RATES_DIR", str(tmp_path / "shared"))
    work = calibrated(tiny_generator, tmp_path / "cache")
    assert work is not None and not (tmp_path / "cache").exists()
    assert [p.stem for p in (tmp_path / "shared").glob("*.json")] == [probe_key(tiny_generator)]


def test_unreadable_kept_rates_are_named_and_measured_again(tiny_generator, tmp_path, caplog):
    path = tmp_path / "work_rates" / f"{probe_key(tiny_generator)}.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"rates": [1, 2], "features": ["an old set"]}', encoding="utf-8")
    with caplog.at_level("WARNING", logger="llm.work_probe"):
        work = calibrated(tiny_generator, tmp_path)
    assert work is not None and WorkModel.from_dict(json.loads(path.read_text(encoding="utf-8"))) == work
    assert f"{path}: unreadable work rates" in caplog.text


def test_the_probe_keeps_to_its_budget_and_says_what_it_left_out(tiny_generator, tmp_path, monkeypatch, caplog):
    """A slow machine (the probe's clock advanced 0.05 s per 100 words of a batch's longest prompt and 50 words an
    answer): the probe measures what fits
    in 4 s, leaves out the longest batches instead of overrunning, fits the rest and says so, naming the file; a
    budget too small for the fit gives no rates (the run prices its measured seconds), and the same process does not
    measure again."""
    import llm.work_probe as probe

    real, now = tiny_generator.generate, [0.0]

    def slow(prompts):
        now[0] += 0.05 * (max(len(p.user.split()) for p in prompts) + 50 * len(prompts)) / 100
        return real(prompts)

    monkeypatch.setattr(tiny_generator, "generate", slow)
    monkeypatch.setattr(probe, "clock", lambda: now[0])
    with caplog.at_level("INFO", logger="llm.work_probe"):
        work = calibrated(tiny_generator, tmp_path, budget_s=4.0)
    assert work is not None and "budget left out 3 of 12 batches (document-4048, document-8096, rows-2024)" in work.note
    assert now[0] < 4.0
    path = tmp_path / "work_rates" / f"{probe_key(tiny_generator)}.json"
    assert f"{path}: the 4 s budget left out" in caplog.text
    caplog.clear()
    other = tmp_path / "other"
    with caplog.at_level("WARNING", logger="llm.work_probe"):
        assert calibrated(tiny_generator, other, budget_s=0.5) is None
    assert "fewer than the 8 a fit needs" in caplog.text and str(other / "work_rates") in caplog.text
    monkeypatch.setattr(probe, "measure", lambda *a, **k: pytest.fail("measured again in the same process"))
    assert calibrated(tiny_generator, other, budget_s=0.5) is None


def test_a_noisy_probe_gives_wider_intervals_not_a_retry(tiny_generator, monkeypatch, caplog):
    """CPU seconds that follow the tokens, then the same with a neighbour's bursts planted on every batch: the probe
    runs each batch once either way; the noisy one's rates spread wider over their draws, and a warning says the fit
    is noisy."""
    import random

    import numpy as np

    import llm.work_probe as probe

    real, calls = tiny_generator.generate, []

    def planted(noise: float, rng: random.Random):
        def generate(prompts):
            calls.append(len(prompts))
            gens = real(prompts)
            burst = rng.uniform(1.0, 1.0 + noise)
            for g in gens:
                g.cpu_s = (1e-3 * g.prompt_tokens + 0.05 * max(0, (g.decode_steps or 0)) / (g.decode_batch or 1)
                           + 0.01) * burst
                g.prefill_cpu_s = None  # each batch one unit, its seconds linear in its tokens
            return gens
        return generate

    spreads = []
    for noise in (0.0, 1.5):
        calls.clear()
        monkeypatch.setattr(tiny_generator, "generate", planted(noise, random.Random(1)))
        with caplog.at_level("WARNING", logger="llm.work_probe"):
            work = probe.measure(tiny_generator)
        assert work is not None and len(calls) == 1 + len(design(tiny_generator))  # each batch once
        draws = np.asarray(work.draws)
        spreads.append(float(np.quantile(draws[:, 2], 0.975) / max(np.quantile(draws[:, 2], 0.025), 1e-12)))
    assert spreads[0] < 1.01 < 1.2 < spreads[1]
    assert "the probe's fit is noisy (typical error" in caplog.text


def test_a_window_too_small_for_the_probe_leaves_the_measured_seconds(tiny_generator, monkeypatch, caplog):
    import llm.work_probe as probe

    assert long_tokens(8192) == [2024, 4048, 8096] and long_tokens(4096) == [1000, 2000, 4000]
    assert long_tokens(600) == []  # nothing longer than the mid prompts
    monkeypatch.setattr(probe, "MID_WORDS", 128)
    monkeypatch.setattr(tiny_generator, "context_window", 60)  # 128 words cannot fit 60 tokens
    monkeypatch.setattr(probe, "design", lambda g: [probe.Unit("mid", 2, 128, 16)])
    with caplog.at_level("WARNING", logger="llm.work_probe"):
        assert probe.measure(tiny_generator) is None
    assert "the probe could not run" in caplog.text and "exceeds the window of 60" in caplog.text


@pytest.mark.integration
def test_a_cpu_priced_run_records_its_probe_and_prices_its_answers_at_those_rates(tiny_conf, tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    res = subprocess.run([sys.executable, "-m", "experiments.run", tiny_conf, "arm=rag", "retriever=bm25",
                          "generator=tiny_llm", "price=cpu", "benchmark=synthetic", "benchmark.languages=[en]",
                          "benchmark.levels=[400]", "benchmark.questions_per_haystack=2", "rag.chunk_size=64",
                          "rag.top_k=2", f"hydra.run.dir={tmp_path / 'run'}", f"run.cache_dir={tmp_path / 'cache'}",
                          "run.progress=false"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "work probe (price basis cpu" in res.stdout + res.stderr  # announced before it starts
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    work = WorkModel.from_dict(metrics["work_rates"])
    assert list((tmp_path / "cache" / "work_rates").glob("*.json")) and len(work.draws) == 200
    from llm.cost import build_cost_model

    priced = WorkPriced(build_cost_model(metrics["price"]), work)
    records = [json.loads(x) for x in (tmp_path / "run" / "records.jsonl").read_text().splitlines() if x]
    answered = [r for r in records if r.get("status") == "ok"]
    assert answered and all(r["decode_steps"] is not None and r["decode_batch"] for r in answered)
    for rec in answered:
        expected = priced.charged_seconds(rec) * metrics["price"]["usd_per_hour"] / 3600
        assert rec["cost_usd"] == pytest.approx(expected, rel=1e-6)
        measured_twice = {**rec, "cpu_s": 2 * rec["cpu_s"]}  # priced by its tokens: its measured seconds don't count
        assert priced.charged_seconds(measured_twice) == pytest.approx(priced.charged_seconds(rec), rel=1e-9)
