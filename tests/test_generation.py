"""The transformers backend: prefix reuse on the real SmolLM2 (integration tier: a real model's close logits are
where a batched decoder that differs from the solo one would show) and on the tiny random-weight Llama (the
batching plumbing, in the fast tier), the response cache, the tokenizer-only generator and the weights cache."""

import warnings
from pathlib import Path

import pytest

from eval.benchmarks.synthetic import make_haystack
from llm.cache import CachedGenerator, ResponseCache
from llm.prompt import Prompt
from longctx.arm import LongContextArm, LongContextConfig


@pytest.mark.integration  # SmolLM2 reads a ~700-token prompt four times: a minute on a loaded 2-core machine
def test_prefix_reuse_gives_identical_greedy_answers(generator):
    samples = make_haystack(seed=5, language="en", tokens=300, n_questions=3)
    prompts = [LongContextArm(generator, LongContextConfig()).build(s) for s in samples]
    assert len({p.user[: p.prefix_chars] for p in prompts}) == 1 and prompts[0].prefix_chars > 500
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        shared = generator.generate(prompts)
        solo = generator.generate([Prompt(p.user, p.system, p.max_new_tokens) for p in prompts])
    deprecated = [str(w.message) for w in caught if "past_key_values" in str(w.message)]
    assert not deprecated, f"the KV cache is passed by a name this transformers deprecates: {deprecated}"
    assert [g.text for g in shared] == [g.text for g in solo]
    assert [g.prompt_tokens for g in shared] == [g.prompt_tokens for g in solo]
    assert all(g.completion_tokens >= 1 for g in shared)


@pytest.mark.integration  # end to end, 20-40 s: the fast tier stays under 10 minutes on 2 cores
def test_response_cache_serves_reruns(generator, tmp_path):
    cached = CachedGenerator(generator, ResponseCache(tmp_path / "r.sqlite"))
    p = Prompt("Say the word 'blue' and nothing else.", max_new_tokens=4)
    first = cached.generate([p])[0]
    again = CachedGenerator(generator, ResponseCache(tmp_path / "r.sqlite")).generate([p])[0]
    assert cached.calls == 1 and again.cached and again.text == first.text
    other = cached.generate([Prompt(p.user, max_new_tokens=5)])[0]
    assert not other.cached and cached.calls == 2, "max_new_tokens is part of the cache key"


def test_prefix_reuse_in_several_batches_matches_solo_answers(tiny_generator):
    """Questions over one context split into decode batches of 2 (3 batches for 5 questions). On the tiny
    random-weight Llama: batching, masks and positions are plumbing, and any slip in them changes its greedy
    answers as it would SmolLM2's (test_prefix_reuse_gives_identical_greedy_answers runs SmolLM2)."""
    generator = tiny_generator
    samples = make_haystack(seed=11, language="en", tokens=250, n_questions=5)
    prompts = [LongContextArm(generator, LongContextConfig()).build(s) for s in samples]
    prompts[1].max_new_tokens = 2  # different limits within one batch
    solo = generator.generate([Prompt(p.user, p.system, p.max_new_tokens) for p in prompts])
    before = generator.prefix_batch_size
    generator.prefix_batch_size = 2
    try:
        shared = generator.generate(prompts)
    finally:
        generator.prefix_batch_size = before
    assert [g.text for g in shared] == [g.text for g in solo]
    assert [g.completion_tokens for g in shared] == [g.completion_tokens for g in solo]
    assert shared[1].completion_tokens <= 2


def test_tokenizer_only_generator_budgets_but_does_not_generate(generator, tmp_path):
    from omegaconf import OmegaConf

    from llm.factory import build_generator
    from tests.conftest import compose

    cfg = OmegaConf.to_container(compose(["generator=none"]).generator, resolve=True)
    none = build_generator(cfg, cache_dir=tmp_path)
    assert none.generates is False and generator.generates is True
    assert none.context_window == 8192 and none.model_id == "none"
    p = Prompt("How many tokens is this question?", system="Answer briefly.")
    assert none.prompt_tokens(p) == generator.prompt_tokens(p)
    assert none.tokenizer.count("hello world") == generator.tokenizer.count("hello world")
    with pytest.raises(RuntimeError, match="retrieval-only"):
        none.generate([p])
    assert not (tmp_path / "responses.sqlite").exists(), "nothing to cache"


def test_gguf_conversion_draws_no_progress_bar():
    """transformers' GGUF tensor conversion uses its own tqdm; the backend silences it while loading."""
    from transformers import modeling_gguf_pytorch_utils as gguf_utils

    from llm.transformers_backend import _quiet_tqdm

    original = gguf_utils.tqdm
    with _quiet_tqdm():
        assert gguf_utils.tqdm(range(3)).disable is True
    assert gguf_utils.tqdm is original and gguf_utils.tqdm(range(3), disable=False).disable is False


def test_the_gguf_tokenizer_adds_a_bos_token_only_where_the_file_says_so():
    # SmolLM2's GGUF says add_bos_token=false; transformers 4.x's conversion would add one to raw text anyway,
    # so a /v1/completions prompt would count one token more than the same text through the chat route
    from llm.bundled import resolve_model
    from llm.hf_tokenizer import gguf_metadata, load_hf_tokenizer

    path, gguf_file = resolve_model("bundled:smollm2")
    meta = gguf_metadata(Path(path) / gguf_file)
    assert meta["tokenizer.ggml.add_bos_token"] is False and meta["llama.context_length"] == 8192
    assert "tokenizer.ggml.tokens" not in meta  # arrays are skipped
    tok = load_hf_tokenizer("bundled:smollm2")
    assert tok("hello world")["input_ids"] == tok("hello world", add_special_tokens=False)["input_ids"]


def test_generators_over_the_same_weights_share_one_loaded_model(tiny_llm):
    """llm.transformers_backend.load_weights: one model per process and (path, dtype, device); configurations
    that differ in how they decode (the factory builds a generator for each) share it, another dtype does not."""
    from llm.factory import build_generator
    from llm.hf_tokenizer import load_hf_tokenizer
    from tests.conftest import SMOLLM2

    base = {**SMOLLM2, "model": str(tiny_llm)}
    a = build_generator(base)
    b = build_generator({**base, "reuse_prefix": False, "stop": ["\n"]})
    c = build_generator({**base, "context_window": 4096})
    assert a is not b and a.model is b.model is c.model
    half = build_generator({**base, "dtype": "bfloat16"})
    assert half.model is not a.model and str(half.model.dtype) == "torch.bfloat16"
    assert load_hf_tokenizer(str(tiny_llm)) is load_hf_tokenizer(str(tiny_llm), False) is a._hf_tok
