"""Run folders get short, flat names: a path or URL in an override never becomes nested folders."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import ROOT, SHARED_DATA

from experiments.folder_names import safe_dirname


def test_values_with_slashes_become_one_readable_component():
    assert safe_dirname("arm=rag,retriever=minilm") == "arm=rag,retriever=minilm"  # unchanged: old names stay
    assert safe_dirname("benchmark.levels=[8k,16k],arm=rag") == "benchmark.levels=[8k,16k],arm=rag"
    name = safe_dirname("benchmark.path=../shared/data/loong,arm=rag")
    assert name.startswith("benchmark.path=data-loong~") and name.endswith(",arm=rag") and "/" not in name
    url = safe_dirname("generator.base_url=http://127.0.0.1:8089/v1")
    assert url.startswith("generator.base_url=127.0.0.1:8089-v1~") and "/" not in url
    assert safe_dirname("generator.base_url=http://a/v1") != safe_dirname("generator.base_url=http://b/v1")
    assert len(safe_dirname("x=" + "y" * 500)) <= 60


@pytest.mark.skipif(not (SHARED_DATA / "loogle" / "shortdep_qa.jsonl").is_file(), reason="../shared/data is absent")
def test_a_sweep_with_a_relative_data_path_makes_flat_run_folders(tmp_path, tiny_conf):
    rel = os.path.relpath(SHARED_DATA / "loogle" / "shortdep_qa.jsonl", ROOT)
    assert rel.startswith("..")
    sweep = tmp_path / "sweep"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    proc = subprocess.run(
        # generator=none with SmolLM2's tokenizer from the tiny Llama's folder (conftest's tiny_none: no GGUF to read)
        [sys.executable, "-m", "experiments.run", "-m", tiny_conf, "arm=longctx", "generator=tiny_none",
         "benchmark=loogle", f"benchmark.path={rel}", "benchmark.limit=2", "run.progress=false",
         f"run.cache_dir={tmp_path / 'cache'}", f"hydra.sweep.dir={sweep}"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs = [p.parent for p in sweep.rglob("metrics.json")]
    assert len(runs) == 1 and runs[0].parent == sweep, runs  # one level below the sweep folder, nowhere else
    assert runs[0].name.startswith("0_arm=longctx,benchmark.limit=2,benchmark.path=loogle-shortdep_qa.jsonl~")
    assert not (ROOT.parent / "shared" / "data" / "loogle" / "shortdep_qa.jsonl").is_dir()
    overrides = (runs[0] / ".hydra" / "overrides.yaml").read_text()
    assert rel in overrides  # the full value is recorded inside


def test_the_llamacpp_preset_composes_one_request_at_a_time(tmp_path):
    from conftest import compose
    from omegaconf import OmegaConf

    from eval.registry import check_kwargs
    from llm.openai_backend import OpenAICompatGenerator

    cfg = OmegaConf.to_container(compose(["generator=llamacpp_server"]).generator, resolve=True)
    assert cfg["backend"] == "openai" and cfg["max_concurrency"] == 1 and cfg["base_url"].endswith("/v1")
    check_kwargs(OpenAICompatGenerator, {k: v for k, v in cfg.items() if k != "backend"}, "generator")
