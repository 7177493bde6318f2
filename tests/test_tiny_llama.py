"""The tiny random-weight Llama the plumbing tests run on (testsupport/tiny_llama.py): SmolLM2's tokenizer, token
for token and round trip, SmolLM2's chat template, the same weights from the same seed, and greedy answers that
do not depend on how they are decoded: what lets a test compare a resumed, parallel or SLURM-local run's records
with a serial run's."""

from __future__ import annotations

import json

import pytest

from llm.prompt import Prompt

TEXTS = [
    "Hello world, this is  a test.\n\nA new paragraph   with three spaces and a tab\there.",
    "青石桥位于清河镇，建于1756年。它由工匠李明设计。",
    " leading and trailing spaces  ",
    "naïve café — “quotes”, emoji 😀, code: x = f(y) + 1; URL https://example.org/a?b=c",
    "<|im_start|>user\nliteral special tokens<|im_end|>",
]


@pytest.fixture(scope="module")
def tokenizers(tiny_llm):
    from llm.hf_tokenizer import load_hf_tokenizer

    return load_hf_tokenizer("bundled:smollm2"), load_hf_tokenizer(str(tiny_llm))


def test_the_folder_is_a_plain_fast_tokenizer_and_a_small_model(tiny_llm):
    names = {p.name for p in tiny_llm.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} <= names
    assert "tokenizer.model" not in names, "no copy of the GGUF file"
    assert sum(p.stat().st_size for p in tiny_llm.iterdir()) < 30_000_000
    assert json.loads((tiny_llm / "tokenizer_config.json").read_text())["tokenizer_class"] == "PreTrainedTokenizerFast"


@pytest.mark.parametrize("text", TEXTS)
def test_decode_of_encode_round_trips_and_the_tokens_are_smollm2s(tokenizers, text):
    smollm2, tiny = tokenizers
    ids = tiny(text, add_special_tokens=False)["input_ids"]
    assert ids == smollm2(text, add_special_tokens=False)["input_ids"]
    assert tiny(text)["input_ids"] == smollm2(text)["input_ids"]  # neither adds a BOS to raw text
    assert tiny.decode(ids) == text and tiny.decode(ids) == smollm2.decode(ids)


def test_the_chat_template_and_special_tokens_are_smollm2s(tokenizers):
    from llm.hf_tokenizer import count_prompt_tokens, render_prompt

    smollm2, tiny = tokenizers
    for prompt in (Prompt("What is the capital of France?", system="Answer briefly."), Prompt("Just the user."),
                   Prompt("Raw text, no template.", chat=False)):
        assert render_prompt(tiny, prompt) == render_prompt(smollm2, prompt)
        assert count_prompt_tokens(tiny, prompt) == count_prompt_tokens(smollm2, prompt)
    assert (tiny.bos_token, tiny.eos_token, len(tiny)) == (smollm2.bos_token, smollm2.eos_token, len(smollm2))


def test_greedy_answers_are_the_same_on_every_decoding_path(tiny_llm):
    from llm.transformers_backend import TransformersGenerator

    ctx = "The lighthouse keeper logged the storm at dawn. " * 12
    prompts = [Prompt(ctx + "When was the storm logged?", max_new_tokens=12, prefix_chars=len(ctx)),
               Prompt(ctx + "Who logged the storm?", max_new_tokens=12, prefix_chars=len(ctx))]
    gen = TransformersGenerator(str(tiny_llm), context_window=8192)
    shared = [g.text for g in gen.generate(prompts)]
    alone = [gen.generate([p])[0].text for p in prompts]
    assert shared == alone and all(len(t.split()) >= 2 for t in shared) and shared[0] != shared[1]
    other = TransformersGenerator(str(tiny_llm), context_window=8192, reuse_prefix=False)
    assert [g.text for g in other.generate(prompts)] == shared


def test_a_second_build_from_the_same_seed_writes_the_same_weights(tiny_llm, tmp_path):
    from safetensors.torch import load_file

    from testsupport.tiny_llama import tiny_llama

    again = tiny_llama(tmp_path / "again", seed=0)
    a, b = load_file(tiny_llm / "model.safetensors"), load_file(again / "model.safetensors")
    assert a.keys() == b.keys() and all(bool((a[k] == b[k]).all()) for k in a)
    other = load_file(tiny_llama(tmp_path / "other", seed=1) / "model.safetensors")
    assert any(not bool((a[k] == other[k]).all()) for k in a)
