"""Shared fixtures: real models, loaded once per test session."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# One torch (OpenMP) thread per process, here and in every run a test starts (they inherit it; set
# OMP_NUM_THREADS to choose otherwise). On a machine whose cores are busy (a CI host, or pytest -n 2) a process
# with a thread per core has its threads wait on each other: SmolLM2 then decodes up to 10x slower (measured on
# a loaded 2-core machine: test_stop_loops_ends_an_answer_that_repeats_itself took 128 s with 2 threads, 12 s
# with 1), while on an idle machine 1 thread costs little (the few tests that decode with SmolLM2).
os.environ.setdefault("OMP_NUM_THREADS", "1")
# Every price=cpu run probes its generator's per-token rates once per timing setup (llm/work_probe.py); the runs the
# tests start share one folder of them, so a session probes each setup once, not once per test's cache folder
if "RAGLC_WORK_RATES_DIR" not in os.environ:
    import tempfile

    os.environ["RAGLC_WORK_RATES_DIR"] = tempfile.mkdtemp(prefix="raglc-work-rates-")

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"
SHARED_DATA = ROOT.parent / "shared" / "data"

SCRIPTED = "scripted"  # the model name the scripted model's servers announce (clients send it)
# Models the tests build (the tiny Llama): content-keyed, so a second session reuses them (`make clean` removes them)
TEST_MODELS = ROOT / ".cache" / "test-models"


def _generator_config(name: str) -> dict:
    """conf/generator/<name>.yaml as the runner hands it to llm.factory.build_generator."""
    import yaml

    return yaml.safe_load((CONF / "generator" / f"{name}.yaml").read_text(encoding="utf-8"))


# The runner's own generator=smollm2 config, key for key: the session's generator and an in-process run with
# generator=smollm2 are one backend (llm/factory.py), and any other config over the same weights shares them.
SMOLLM2 = _generator_config("smollm2")


@pytest.fixture(scope="session")
def generator():
    """The embedded default generator (SmolLM2-135M on CPU); weights load on first generation."""
    from llm.factory import build_generator

    return build_generator(SMOLLM2)


@pytest.fixture(scope="session")
def tiny_llm() -> Path:
    """A tiny random-weight Llama with SmolLM2's tokenizer (testsupport/tiny_llama.py), for plumbing tests:
    `generator.model=<this folder>` runs the real transformers backend in milliseconds per answer. Greedy
    decoding of its fixed weights is deterministic, so records compared with a serial run's mean what they did
    with SmolLM2; its answers are noise."""
    from testsupport.tiny_llama import cached_tiny_llama

    return cached_tiny_llama(TEST_MODELS)


@pytest.fixture(scope="session")
def tiny_conf(tiny_llm, tmp_path_factory) -> str:
    """A Hydra override (`hydra.searchpath=[file://...]`) that adds two generator configs over the tiny Llama:
    `generator=tiny_llm` (the runner's smollm2 config, the tiny weights) and `generator=tiny_none` (retrieval
    only, as generator=none, with the tiny folder's copy of SmolLM2's tokenizer: no GGUF to read). For sweeps
    that mix generators, where a `generator.model=` override would apply to every one of them."""
    import yaml

    root = tmp_path_factory.mktemp("tiny-conf")
    (root / "generator").mkdir()
    (root / "generator" / "tiny_llm.yaml").write_text(yaml.safe_dump({**SMOLLM2, "model": str(tiny_llm)}))
    (root / "generator" / "tiny_none.yaml").write_text(
        yaml.safe_dump({**_generator_config("none"), "tokenizer": str(tiny_llm)}))
    return f"hydra.searchpath=[file://{root}]"


@pytest.fixture(scope="session")
def tiny_generator(tiny_llm):
    """The runner's generator=smollm2 config over the tiny Llama's weights."""
    from llm.factory import build_generator

    return build_generator({**SMOLLM2, "model": str(tiny_llm)})


# What the scripted model says where SmolLM2 said it: an answer that ends before 16 tokens (7 and an end of
# sequence) and is cut at 5 ("The capital of France is"), as the server tests' prompts need
FRANCE = {"capital of France": "The capital of France is Paris."}


@pytest.fixture(scope="session")
def scripted_model():
    """The scripted model (testsupport/scripted.py): answers a fixed function of the prompt (FRANCE, else a
    sentence drawn from the prompt's hash), counted with SmolLM2's tokenizer; 2 ms a token, as a small model
    decodes."""
    from testsupport.scripted import ScriptedModel

    return ScriptedModel(FRANCE, model_id=SCRIPTED, token_s=0.002)


@pytest.fixture(scope="session")
def fake_server(scripted_model, tmp_path_factory):
    """One fake OpenAI-compatible server (testsupport/fake_servers.py: the product's server with faults) over the
    scripted model, shared by the modules that talk to it in its plain configuration (no key, the openai
    dialect), with a request log. Modules that clear its fault queue around each test keep it clean."""
    from testsupport.fake_servers import FakeOpenAIServer

    log = tmp_path_factory.mktemp("fake_server") / "requests.jsonl"
    with FakeOpenAIServer(scripted_model, request_log=log) as srv:
        yield srv


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


def estimate_of(lo: float, hi: float, df: float = 1e6, confidence: float = 0.95):
    """An eval.metrics.confidence.Estimate whose `confidence` interval is [lo, hi] (a t with `df` degrees of
    freedom)."""
    from scipy.stats import t

    from eval.metrics.confidence import Estimate

    return Estimate((lo + hi) / 2, (hi - lo) / 2 / t.ppf(1 - (1 - confidence) / 2, df), df, 10)


@pytest.fixture(scope="session")
def tiny_llama(tiny_llm):
    """The tests' one tiny random-weight Llama (`tiny_llm`), under the name the timing and caching tests use."""
    return tiny_llm
