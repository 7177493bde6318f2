"""One way from a config group to an object (eval.registry.Registry) for generators, retrievers,
embedders, rerankers, benchmark loaders and metrics: unknown names list the allowed ones, unknown
keys are named `<section>.<key>`, and a missing optional package is one line with the install command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from eval.registry import MissingExtra, Registry

ROOT = Path(__file__).resolve().parents[1]


def test_every_factory_is_a_registry_and_lists_what_the_config_groups_name():
    from eval.benchmarks import BENCHMARKS
    from eval.metrics import METRICS
    from llm.factory import GENERATORS
    from rag.embedders import EMBEDDERS
    from rag.rerank import RERANKERS
    from rag.retrievers import RETRIEVERS

    for reg in (BENCHMARKS, METRICS, GENERATORS, EMBEDDERS, RERANKERS, RETRIEVERS):
        assert isinstance(reg, Registry)
    # every config file of a group names a registered entry
    import yaml

    for group, reg, key in (("generator", GENERATORS, "backend"), ("retriever", RETRIEVERS, "kind"),
                            ("reranker", RERANKERS, "kind"), ("benchmark", BENCHMARKS, "name")):
        for path in sorted((ROOT / "conf" / group).glob("*.yaml")):
            assert yaml.safe_load(path.read_text())[key] in reg, f"{path}: {key} is not registered"


@pytest.mark.parametrize("build,cfg,message", [
    ("retriever", {"kind": "bm25", "k1": 1.2, "bb": 0.7},
     r"retriever\.bb is not a setting of retriever\.kind=bm25; its settings: b, k1, name"),
    ("retriever", {"kind": "hybrid", "rrf": 60, "retrievers": []},
     r"retriever\.rrf is not a setting of retriever\.kind=hybrid"),
    ("retriever", {"kind": "dense", "model": "bundled:all-MiniLM-L6-v2", "batchsize": 8},
     r"retriever\.batchsize is not a setting of retriever\.backend=sentence_transformers; its settings: batch_size"),
    ("retriever", {"kind": "sparse"}, r"retriever\.kind='sparse'; allowed: bm25, dense, hybrid"),
    ("retriever", {"kind": "dense", "backend": "magic", "model": "x"},
     r"retriever\.backend='magic'; allowed: sentence_transformers, flag_m3, openai"),
    ("reranker", {"kind": "cross_encoder", "model": "x", "top": 3},
     r"reranker\.top is not a setting of reranker\.kind=cross_encoder"),
    ("reranker", {"kind": "colbert", "model": "x"},
     r"reranker\.kind='colbert'; allowed: none, cross_encoder, bge_reranker"),
    ("generator", {"backend": "transformers", "model": "bundled:smollm2", "dtyp": "float32"},
     r"generator\.dtyp is not a setting of the transformers backend; "
     r"its settings: context_window, decode_batch, device, dtype"),
    ("generator", {"backend": "vllm", "model": "x", "max_model_lenn": 4096},
     r"generator\.max_model_lenn is not a setting of the vllm backend"),
    ("generator", {"backend": "none", "tokeniser": "x"}, r"generator\.tokeniser is not a setting of the none backend"),
    ("generator", {"backend": "llamacpp"},
     r"generator\.backend='llamacpp'; allowed: transformers, openai, openai_compat, vllm, none"),
])
def test_unknown_names_and_keys_fail_naming_them_before_anything_loads(build, cfg, message):
    from llm.factory import build_generator
    from rag.rerank import build_reranker
    from rag.retrievers import build_retriever

    factory = {"retriever": build_retriever, "reranker": build_reranker, "generator": build_generator}[build]
    with pytest.raises(ValueError, match=message):
        factory(cfg)


def test_a_missing_optional_package_is_a_value_error_and_an_import_error(monkeypatch):
    err = MissingExtra("x needs y")
    assert isinstance(err, ValueError) and isinstance(err, ImportError)
    from rag.rerank import build_reranker

    monkeypatch.setitem(sys.modules, "FlagEmbedding", None)  # as if not installed (`make install` installs it)
    with pytest.raises(MissingExtra, match=r"reranker\.kind=bge_reranker needs the package 'FlagEmbedding'"
                                           r".*pip install '\.\[bge\]'"):
        build_reranker({"kind": "bge_reranker", "model": "BAAI/bge-reranker-v2-m3"})


# `python -m experiments.run` in a process where FlagEmbedding cannot be imported, installed or not
WITHOUT_FLAG = ("import runpy, sys; sys.modules['FlagEmbedding'] = None; sys.argv[0] = 'experiments.run'; "
                "runpy.run_module('experiments.run', run_name='__main__', alter_sys=True)")


def test_runner_with_bge_m3_and_no_flagembedding_ends_in_one_error_line(tmp_path, tiny_llm):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    res = subprocess.run([sys.executable, "-c", WITHOUT_FLAG, "arm=rag", "retriever=bge_m3", "generator=none",
                          f"generator.tokenizer={tiny_llm}",  # SmolLM2's, from a folder: no GGUF to read first
                          "benchmark.languages=[en]", "benchmark.levels=[1k]", "benchmark.questions_per_haystack=1",
                          f"hydra.run.dir={tmp_path / 'run'}", f"run.cache_dir={tmp_path / 'cache'}",
                          "run.progress=false"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 2, res.stderr[-2000:]
    assert "Traceback" not in res.stderr
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("error: retriever.backend=flag_m3 needs the package 'FlagEmbedding'"), last
    assert "pip install '.[bge]'" in last, last


def test_loaders_and_metrics_go_through_the_registry():
    from eval.benchmarks import BENCHMARKS, Benchmark, load_benchmark
    from eval.metrics import METRICS, get_metric, register

    synthetic = BENCHMARKS.get("synthetic")
    assert issubclass(synthetic, Benchmark) and synthetic.__module__ == "eval.benchmarks.synthetic"
    with pytest.raises(ValueError, match=r"benchmark\.name='nope'; available: "
                                         r"clongeval, corpus, lara, loogle, loong, lveval, synthetic"):
        load_benchmark({"name": "nope"})
    assert get_metric("qa_f1") is METRICS.get("qa_f1")
    with pytest.raises(KeyError, match="unknown metric 'nope'; known: "):
        get_metric("nope")
    with pytest.raises(ValueError, match="registered twice"):
        register("qa_f1")(lambda prediction, reference: {"score": 0.0})
