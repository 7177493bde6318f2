"""Every usage shape a server sends, each built from its provider's documented response, read into one shape; a
shape that cannot be read costs the answer its cached share with a warning, never the answer (issue 38, item 3)."""

from __future__ import annotations

import logging

import pytest

from llm.cost import build_cost_model
from llm.usage import read_usage


def test_openai_counts_cached_tokens_inside_the_prompt():
    # platform.openai.com/docs/guides/prompt-caching: prompt_tokens 2006 of which 1920 cached
    u = read_usage({"prompt_tokens": 2006, "completion_tokens": 300, "total_tokens": 2306,
                    "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0},
                    "completion_tokens_details": {"reasoning_tokens": 0}})
    assert (u.prompt_tokens, u.completion_tokens, u.cached_tokens, u.cache_write_tokens) == (2006, 300, 1920, None)
    assert u.shape == "openai" and u.warning is None


def test_vllm_serve_with_and_without_prompt_token_details():
    with_flag = read_usage({"prompt_tokens": 30512, "completion_tokens": 24, "total_tokens": 30536,
                            "prompt_tokens_details": {"cached_tokens": 30496}})
    assert with_flag.cached_tokens == 30496
    # without --enable-prompt-tokens-details vLLM sends the details as null: nothing is known as cached
    without = read_usage({"prompt_tokens": 30512, "completion_tokens": 24, "total_tokens": 30536,
                          "prompt_tokens_details": None})
    assert (without.prompt_tokens, without.cached_tokens, without.warning) == (30512, None, None)


def test_anthropic_messages_api_prompt_is_input_plus_cache_reads_and_writes():
    # docs.anthropic.com prompt caching: input_tokens are the tokens after the last breakpoint only
    first = read_usage({"input_tokens": 21, "cache_creation_input_tokens": 188086, "cache_read_input_tokens": 0,
                        "output_tokens": 393})
    assert (first.prompt_tokens, first.cached_tokens, first.cache_write_tokens) == (188107, 0, 188086)
    later = read_usage({"input_tokens": 21, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 188086,
                        "output_tokens": 393})
    assert (later.prompt_tokens, later.cached_tokens, later.completion_tokens) == (188107, 188086, 393)
    assert later.shape == "anthropic"


def test_anthropic_counting_under_openai_names_adds_the_cached_tokens_to_the_prompt():
    # the prompt excludes the cached tokens: 50 fresh + 8000 read; before issue 38 this raised ValueError
    u = read_usage({"prompt_tokens": 50, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": 8000}})
    assert (u.prompt_tokens, u.cached_tokens) == (8050, 8000) and "excludes" in u.shape
    # where the caller knows the endpoint counts so (api.anthropic.com), also when the reads are fewer
    u = read_usage({"prompt_tokens": 9000, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": 8000}},
                   prompt_includes_cache=False)
    assert (u.prompt_tokens, u.cached_tokens) == (17000, 8000)
    cost = build_cost_model({"kind": "per_token", "input_usd_per_million": 3.0, "output_usd_per_million": 15.0,
                             "cached_input_usd_per_million": 0.3, "cache_write_usd_per_million": 3.75})
    assert cost.cost(u.prompt_tokens, u.completion_tokens, 0.0, u.cached_tokens) == pytest.approx(
        (9000 * 3.0 + 8000 * 0.3 + 20 * 15.0) / 1e6)


def test_openrouter_cache_write_tokens_are_billed_at_the_write_rate():
    # openrouter.ai/docs/use-cases/usage-accounting
    u = read_usage({"completion_tokens": 2, "completion_tokens_details": {"reasoning_tokens": 0}, "cost": 0.95,
                    "cost_details": {"upstream_inference_cost": 19}, "prompt_tokens": 194,
                    "prompt_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 100, "audio_tokens": 0},
                    "total_tokens": 196})
    assert (u.prompt_tokens, u.cached_tokens, u.cache_write_tokens, u.shape) == (194, 0, 100, "openrouter")


def test_litellm_for_openai_and_for_anthropic_models():
    # docs.litellm.ai/docs/completion/prompt_caching: prompt_tokens include cache hits; Anthropic's writes beside
    u = read_usage({"prompt_tokens": 2006, "completion_tokens": 300, "total_tokens": 2306,
                    "prompt_tokens_details": {"cached_tokens": 1920}, "completion_tokens_details":
                    {"reasoning_tokens": 0}, "cache_creation_input_tokens": 0})
    assert (u.prompt_tokens, u.cached_tokens, u.cache_write_tokens) == (2006, 1920, 0)
    # BerriAI/litellm#15056: an Anthropic write whose tokens the prompt does not count
    u = read_usage({"completion_tokens": 467, "prompt_tokens": 31, "total_tokens": 498,
                    "prompt_tokens_details": {"cached_tokens": 0}, "cache_creation_input_tokens": 1253,
                    "cache_read_input_tokens": 0})
    assert (u.prompt_tokens, u.cached_tokens, u.cache_write_tokens) == (1284, 0, 1253)


def test_llama_cpp_new_and_old_report_their_kv_cache_hits():
    new = read_usage({"prompt_tokens": 1800, "completion_tokens": 12, "total_tokens": 1812},
                     {"timings": {"cache_n": 1760, "prompt_n": 40, "prompt_ms": 80.1, "predicted_n": 12}})
    assert (new.prompt_tokens, new.cached_tokens, new.shape) == (1800, 1760, "llamacpp")
    old = read_usage({"prompt_tokens": 1800, "completion_tokens": 12}, {"tokens_cached": 1700})
    assert (old.cached_tokens, old.shape) == (1700, "llamacpp (old)")
    # a KV cache count larger than the prompt (the whole cache, not this prompt's share): dropped, said
    odd = read_usage({"prompt_tokens": 1800, "completion_tokens": 12}, {"tokens_cached": 1812})
    assert odd.cached_tokens is None and odd.prompt_tokens == 1800 and "cannot be read" in odd.warning


def test_no_usage_at_all_leaves_the_counting_to_the_backend():
    assert read_usage(None) == read_usage({}) and read_usage(None).prompt_tokens is None


def test_an_unreadable_cache_count_costs_the_cached_share_not_the_answer():
    u = read_usage({"prompt_tokens": 500, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": "lots"}})
    assert (u.prompt_tokens, u.completion_tokens, u.cached_tokens) == (500, 5, None) and "unreadable" in u.warning
    u = read_usage({"prompt_tokens": 500, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": -3}})
    assert u.cached_tokens is None and u.warning


def test_the_backend_reads_the_openai_client_objects_and_never_fails_an_answer(caplog):
    from openai.types import CompletionUsage
    from openai.types.chat import ChatCompletionChunk

    from llm.openai_backend import OpenAICompatGenerator, _cache_extras
    from llm.prompt import Prompt

    gen = OpenAICompatGenerator("m", base_url="http://127.0.0.1:9/v1", api_key_env=None, context_window=8192)
    usage = CompletionUsage.model_validate({"prompt_tokens": 50, "completion_tokens": 3, "total_tokens": 53,
                                            "prompt_tokens_details": {"cached_tokens": 8000}})
    g = gen._generation(Prompt(user="q"), "an answer", usage, 0.1, None, "stop")
    assert (g.prompt_tokens, g.cached_prompt_tokens, g.text) == (8050, 8000, "an answer")
    chunk = ChatCompletionChunk.model_validate({
        "id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m",
        "choices": [{"index": 0, "delta": {"content": "."}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1800, "completion_tokens": 12, "total_tokens": 1812},
        "timings": {"cache_n": 1760, "prompt_n": 40}})
    g = gen._generation(Prompt(user="q"), "x", chunk.usage, 0.1, None, "stop", _cache_extras(chunk))
    assert g.cached_prompt_tokens == 1760
    bad = CompletionUsage.model_validate({"prompt_tokens": 40, "completion_tokens": 3, "total_tokens": 43})
    with caplog.at_level(logging.WARNING):
        g = gen._generation(Prompt(user="q"), "x", bad, 0.1, None, "stop", {"tokens_cached": 99})
        gen._generation(Prompt(user="q"), "x", bad, 0.1, None, "stop", {"tokens_cached": 99})
    assert g.prompt_tokens == 40 and g.cached_prompt_tokens is None
    assert sum("cannot be read" in r.getMessage() for r in caplog.records) == 1  # logged once
