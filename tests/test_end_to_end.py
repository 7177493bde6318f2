"""Tiny real runs: Hydra config, both arms, records and metrics on disk, the command line and the report.

The generator is generator=smollm2's config over the tiny random-weight Llama (conftest's `tiny_llm`: SmolLM2's
tokenizer, so the same prompts, token counts and evidence figures; the real transformers backend). What is checked
here is what a run writes, not what the answers say (test_generation.py and test_answers_cut.py run SmolLM2)."""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT, compose

TINY = ["benchmark.languages=[en]", "benchmark.levels=[400]", "benchmark.questions_per_haystack=2"]
RECORD_KEYS = {"id", "task", "length_level", "arm", "prediction", "score", "prompt_tokens",
               "completion_tokens", "latency_s"}


def test_both_arms_write_records_and_resume_from_cache(tmp_path, tiny_llm):
    from experiments.run import run

    cache = tmp_path / "cache"
    for arm, evidence_key in (("longctx", "evidence_retained"), ("rag", "evidence_recall")):
        cfg = compose(TINY + [f"arm={arm}", f"run.cache_dir={cache}", "run.progress=false", "rag.chunk_size=64",
                              f"generator.model={tiny_llm}"])
        out = tmp_path / arm
        out.mkdir()
        metrics = run(cfg, out)
        records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
        assert len(records) == 2 and metrics["n"] == 2 and metrics["n_ok"] == 2
        for r in records:
            assert RECORD_KEYS <= set(r) and r["arm"] == arm and 0.0 <= r["score"] <= 1.0
            assert r["prompt_tokens"] > 50 and r["completion_tokens"] >= 1 and r["latency_s"] > 0
            assert r[evidence_key] is not None
        if arm == "rag":
            assert set(records[0]["evidence_recall"]) == {"1", "3", "5", "10"}
            assert set(metrics["evidence_recall"]) == {"1", "3", "5", "10"}
        else:
            assert metrics["evidence_retained"] == 1.0
        assert metrics["generation_calls"] == 2
        assert set(metrics["score_by_length_level"]) == {"400"}

        # Same config in a fresh directory: every generation comes from the cache.
        again = tmp_path / f"{arm}-again"
        again.mkdir()
        m2 = run(cfg, again)
        assert m2["generation_calls"] == 0 and m2["cached"] == 2 and m2["score"] == metrics["score"]
        # Same directory: nothing to do at all, records unchanged.
        before = (out / "records.jsonl").read_text()
        m3 = run(cfg, out)
        assert m3["generation_calls"] == 0 and (out / "records.jsonl").read_text() == before


def test_sample_that_cannot_fit_is_skipped_and_run_goes_on(tmp_path, tiny_llm):
    from experiments.run import run

    # A 60-token window cannot hold the template and question: every sample is skipped with a reason.
    cfg = compose(TINY + ["generator.context_window=60", f"run.cache_dir={tmp_path}", "run.progress=false",
                          f"generator.model={tiny_llm}"])
    m = run(cfg, tmp_path)
    assert m["n_skipped"] == 2 and m["n_failed"] == 0 and m["score"] == 0.0
    records = [json.loads(line) for line in (tmp_path / "records.jsonl").read_text().splitlines()]
    assert all(r["status"] == "skipped" and "does not fit" in r["reason"] for r in records)


def _run_cli(args, cwd, timeout=600):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.mark.integration  # end to end, 20-40 s: the fast tier stays under 10 minutes on 2 cores
def test_hydra_multirun_sweep_and_report(tmp_path, tiny_llm):
    """`python -m experiments.run -m ...` then `python -m experiments.report`, as a user runs them."""
    sweep = tmp_path / "sweep"
    res = _run_cli(["-m", "experiments.run", "-m", "arm=longctx,rag", "rag.top_k=1,2", *TINY, "rag.chunk_size=64",
                    f"generator.model={tiny_llm}",
                    f"hydra.sweep.dir={sweep}", f"run.cache_dir={tmp_path / 'cache'}", "run.progress=false"], ROOT)
    assert res.returncode == 0, res.stderr[-3000:]
    runs = sorted(p.parent for p in sweep.rglob("metrics.json"))
    assert len(runs) == 4
    for r in runs:
        assert (r / "records.jsonl").exists() and (r / ".hydra" / "config.yaml").exists()
    rep = _run_cli(["-m", "experiments.report", str(sweep)], ROOT)
    assert rep.returncode == 0, rep.stderr
    assert (sweep / "report.md").exists() and (sweep / "configs.csv").exists()
    rows = (sweep / "configs.csv").read_text().splitlines()
    assert len(rows) == 1 + 3, "two longctx runs are one config point (rag.top_k does not apply to it)"
    assert "recall@1" in rows[0] and "score_400" in rows[0]
    for png in ("score_vs_prompt_tokens.png", "score_by_length_level.png"):
        assert (sweep / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "rag bm25 c64 k2" in (sweep / "report.md").read_text()


@pytest.mark.integration  # end to end, 20-40 s: the fast tier stays under 10 minutes on 2 cores
def test_unknown_config_values_name_the_allowed_ones(tmp_path, tiny_llm):
    res = _run_cli(["-m", "experiments.run", "arm=bogus", f"hydra.run.dir={tmp_path}"], ROOT, timeout=120)
    assert res.returncode != 0 and "Available options" in res.stderr and "longctx" in res.stderr and "rag" in res.stderr
    tiny = f"generator.model={tiny_llm}"  # SmolLM2's tokenizer from a folder: no GGUF file to read first
    res = _run_cli(["-m", "experiments.run", "arm=rag", "rag.order=sideways", "benchmark.limit=1", tiny,
                    f"hydra.run.dir={tmp_path}"], ROOT, timeout=120)
    assert res.returncode != 0 and "allowed: document, score" in res.stderr
    res = _run_cli(["-m", "experiments.run", "benchmark.languages=[fr]", tiny,
                    f"hydra.run.dir={tmp_path}"], ROOT, timeout=120)
    assert res.returncode != 0 and "allowed" in res.stderr and "'fr'" in res.stderr
