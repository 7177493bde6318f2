"""Shared fixtures: real models, loaded once per test session."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"
SHARED_DATA = ROOT.parent / "shared" / "data"

SMOLLM2 = {"backend": "transformers", "model": "bundled:smollm2", "context_window": 8192, "dtype": "float32",
           "device": "cpu", "threads": None, "temperature": 0.0}


@pytest.fixture(scope="session")
def generator():
    """The embedded default generator (SmolLM2-135M on CPU); weights load on first generation."""
    from llm.factory import build_generator

    return build_generator(SMOLLM2)


@pytest.fixture(scope="session")
def tokenizer(generator):
    return generator.tokenizer


@pytest.fixture(scope="session")
def minilm():
    from rag.embedders import shared_embedder

    return shared_embedder("bundled:all-MiniLM-L6-v2", 64, True, "cpu", "", "")


def compose(overrides: list[str] | None = None):
    """The project's Hydra config, composed as `python -m experiments.run` would."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return hydra_compose(config_name="config", overrides=overrides or [], return_hydra_config=False)


def groups_are_consecutive(samples) -> bool:
    """The samples of each group come one after another (the runner shares a context per group)."""
    seen, last = set(), None
    for s in samples:
        if s.group != last:
            if s.group in seen:
                return False
            seen.add(s.group)
            last = s.group
    return True


@pytest.fixture(scope="session")
def tiny_bge_m3(tmp_path_factory):
    """A tiny random-weight BGE-M3 folder (encoder + sparse and ColBERT heads; tests/tiny_models.py)."""
    from tests.tiny_models import tiny_bge_m3 as build

    return build(tmp_path_factory.mktemp("tiny-bge-m3") / "model", seed=0)


@pytest.fixture(scope="session")
def tiny_bge_m3_other(tmp_path_factory):
    """Another tiny BGE-M3 (other weights): a different model to the caches."""
    from tests.tiny_models import tiny_bge_m3 as build

    return build(tmp_path_factory.mktemp("tiny-bge-m3-other") / "model", seed=1)


@pytest.fixture(scope="session")
def tiny_reranker(tmp_path_factory):
    """A tiny random-weight one-label cross-encoder folder (FlagReranker and CrossEncoder load it)."""
    from tests.tiny_models import tiny_cross_encoder

    return tiny_cross_encoder(tmp_path_factory.mktemp("tiny-reranker") / "model", seed=0)


def estimate_of(lo: float, hi: float, df: float = 1e6):
    """An eval.metrics.confidence.Estimate whose 95% interval is [lo, hi] (a t with `df` degrees of freedom)."""
    from scipy.stats import t

    from eval.metrics.confidence import Estimate

    return Estimate((lo + hi) / 2, (hi - lo) / 2 / t.ppf(0.975, df), df, 10)


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory):
    """A tiny random-weight Llama folder (2 layers, hidden 64) with SmolLM2's tokenizer (testsupport/random_models.py):
    the transformers backend's decoding paths in a fraction of a second (its answers are noise)."""
    from testsupport.random_models import random_llama

    return random_llama(tmp_path_factory.mktemp("tiny-llama") / "model", "tiny", dtype="float32")
