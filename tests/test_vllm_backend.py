"""The vLLM offline backend without vLLM: request building, prefix ordering, the install message.

vLLM needs a CUDA GPU, which the test machine lacks; nothing here pretends to run it."""

import sys
from dataclasses import dataclass, field

import pytest

from llm.vllm_backend import (
    INSTALL_HINT,
    engine_kwargs,
    generation_from_output,
    prefix_order,
    require_vllm,
    restore_order,
    sampling_kwargs,
)
from tests.conftest import compose


def _vllm_cfg(**overrides):
    from omegaconf import OmegaConf

    cfg = OmegaConf.to_container(compose(["generator=vllm"]).generator, resolve=True)
    return {**cfg, **overrides}


def test_engine_kwargs_from_the_config():
    kwargs = engine_kwargs(_vllm_cfg(tensor_parallel_size=4, gpu_memory_utilization=0.85, max_num_seqs=64,
                                     engine_extra={"swap_space": 8}))
    assert kwargs == {
        "model": "Qwen/Qwen2.5-7B-Instruct", "max_model_len": 32768, "tensor_parallel_size": 4,
        "gpu_memory_utilization": 0.85, "enable_prefix_caching": True, "enable_chunked_prefill": True,
        "dtype": "auto", "max_num_seqs": 64, "seed": 0, "trust_remote_code": False, "swap_space": 8,
    }


def test_engine_kwargs_resolve_a_bundled_gguf_to_its_file():
    kwargs = engine_kwargs({"model": "bundled:smollm2", "max_model_len": 8192, "tokenizer": "bundled:smollm2"})
    assert kwargs["model"].endswith("SmolLM2-135M-Instruct.Q4_1.gguf") and kwargs["tokenizer"] == kwargs["model"]


@pytest.mark.parametrize("overrides, message", [
    ({"max_model_len": None}, "max_model_len"),
    ({"tensor_parallel_size": 0}, "tensor_parallel_size"),
    ({"gpu_memory_utilization": 1.5}, "gpu_memory_utilization"),
    ({"engine_extra": {"max_model_len": 4096}}, "engine_extra"),
])
def test_engine_kwargs_reject_bad_settings(overrides, message):
    with pytest.raises(ValueError, match=message):
        engine_kwargs(_vllm_cfg(**overrides))


def test_sampling_params_from_the_config():
    assert sampling_kwargs(_vllm_cfg(), max_tokens=32) == {"n": 1, "max_tokens": 32, "temperature": 0.0, "seed": 0}
    sampled = sampling_kwargs(_vllm_cfg(temperature=0.7, top_p=0.9, top_k=50, stop=("\n\n",)), max_tokens=8)
    assert sampled == {"n": 1, "max_tokens": 8, "temperature": 0.7, "top_p": 0.9, "top_k": 50, "seed": 0,
                       "stop": ["\n\n"]}


def test_prefix_order_puts_shared_prefixes_together_and_restore_undoes_it():
    doc_a, doc_b = "Document A. " * 50, "Document B. " * 50
    texts = [doc_a + "Q1?", doc_b + "Q1?", "closed-book question", doc_a + "Q2?", doc_b + "Q2?", doc_a + "Q3?"]
    order = prefix_order(texts)
    assert sorted(order) == list(range(len(texts)))
    ordered = [texts[i] for i in order]
    for doc in (doc_a, doc_b):  # every document's prompts form one contiguous run
        hits = [k for k, t in enumerate(ordered) if t.startswith(doc)]
        assert hits == list(range(hits[0], hits[0] + len(hits)))
    answers_in_sent_order = [f"answer to {t[-3:]} of {t[:10]}" for t in ordered]
    restored = restore_order(answers_in_sent_order, order)
    assert restored == [f"answer to {t[-3:]} of {t[:10]}" for t in texts]
    with pytest.raises(ValueError, match="outputs"):
        restore_order(answers_in_sent_order[:-1], order)


@dataclass
class _Completion:  # the fields of vllm.CompletionOutput the backend reads
    text: str
    token_ids: list = field(default_factory=list)


@dataclass
class _Metrics:
    arrival_time: float
    first_token_time: float


@dataclass
class _RequestOutput:  # the fields of vllm.RequestOutput the backend reads
    prompt_token_ids: list
    outputs: list
    metrics: object = None


def test_usage_comes_from_the_request_output_token_ids():
    out = _RequestOutput(list(range(1200)), [_Completion(" Paris. ", [11, 12, 13])], _Metrics(100.0, 100.25))
    gen = generation_from_output(out, latency_s=0.5)
    assert (gen.text, gen.prompt_tokens, gen.completion_tokens, gen.latency_s) == ("Paris.", 1200, 3, 0.5)
    assert gen.ttft_s == pytest.approx(0.25)
    assert generation_from_output(_RequestOutput([1], [_Completion("x", [5])]), 0.1).ttft_s is None


def test_missing_vllm_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)  # as if not installed, whatever this machine has
    with pytest.raises(ImportError, match=r"pip install '\.\[gpu\]'"):
        require_vllm()
    from llm.factory import build_generator

    with pytest.raises(ImportError) as err:
        build_generator(_vllm_cfg(model="bundled:smollm2", max_model_len=8192))
    assert str(err.value).startswith("generator.backend=vllm needs the package 'vllm', which is not installed")
    assert str(err.value).endswith(INSTALL_HINT)
