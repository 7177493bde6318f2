"""Price tiers that change a long-context bill (a long-prompt tier, a batch-API discount), and no provider caching
priced where this client cannot obtain it (Claude's `cache_control`) (issue 38, items 2 and 8)."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments.report import pricing_words
from experiments.report.pricing import Pricing
from experiments.report.runs import Run
from experiments.report.settings import Price, ReportSettings
from llm.cost import build_cost_model, load_price


def test_claude_above_200k_prompt_tokens_is_billed_whole_at_the_long_tier():
    m = build_cost_model(load_price("claude-sonnet-4"))
    assert m.cost(200_000, 1000, 0.0) == pytest.approx((200_000 * 3.0 + 1000 * 15.0) / 1e6)
    assert m.cost(200_001, 1000, 0.0) == pytest.approx((200_001 * 6.0 + 1000 * 22.5) / 1e6)
    # cache reads and writes of a long prompt at the long tier's cache rates
    assert m.cost(250_000, 0, 0.0, cached_tokens=240_000) == pytest.approx((10_000 * 6.0 + 240_000 * 0.6) / 1e6)
    assert m.cost(250_000, 0, 0.0, cache_write_tokens=240_000) == pytest.approx((10_000 * 6.0 + 240_000 * 7.5) / 1e6)


def test_gemini_25_pro_long_tier_and_implicit_cache_rates():
    m = build_cost_model(load_price("gemini-2.5-pro"))
    assert m.cost(100_000, 1000, 0.0) == pytest.approx((100_000 * 1.25 + 1000 * 10.0) / 1e6)
    assert m.cost(300_000, 1000, 0.0, cached_tokens=290_000) == pytest.approx(
        (10_000 * 2.5 + 290_000 * 0.25 + 1000 * 15.0) / 1e6)
    fixed, per_answer = m.cache_terms(300_000, 1000, 290_000)  # no write premium at Google's implicit cache
    assert fixed == pytest.approx(290_000 * (2.5 - 0.25) / 1e6)


@pytest.mark.parametrize("preset", ["gpt-4o", "gpt-4o-mini", "claude-sonnet-4", "gemini-2.5-pro"])
def test_the_batch_api_halves_every_rate_only_when_asked(preset):
    spec = load_price(preset)
    plain = build_cost_model(spec)
    batched = build_cost_model({**spec, "batch": True})
    assert plain.batch_discount == 0.5 and not plain.batch
    args = (5000, 100, 0.0, 2048)
    assert batched.cost(*args) == pytest.approx(plain.cost(*args) * 0.5)


def test_bad_tier_and_batch_keys_are_named():
    base = {"kind": "per_token", "input_usd_per_million": 1.0, "output_usd_per_million": 2.0}
    with pytest.raises(ValueError, match="long_input_usd_per_million"):
        build_cost_model({**base, "long_prompt_threshold_tokens": 1000})
    with pytest.raises(ValueError, match="long_prompt_threshold_tokens"):
        build_cost_model({**base, "long_input_usd_per_million": 2.0})
    with pytest.raises(ValueError, match="batch_discount"):
        build_cost_model({**base, "batch_discount": 1.5})
    with pytest.raises(ValueError, match="batch_discount"):
        build_cost_model({**base, "batch": True})
    with pytest.raises(ValueError, match="true or false"):
        build_cost_model({**base, "batch": "yes"})


def _lc_run(price: dict) -> Run:
    recs = [{"id": f"s{i}", "benchmark": "b", "task": "t", "language": "en", "length_level": "8k",
             "group": f"d{i // 2}", "status": "ok", "score": 1.0, "arm": "longctx", "prompt_tokens": 8000,
             "context_tokens": 7900, "completion_tokens": 100, "latency_s": 2.0, "generation_s": 2.0}
            for i in range(4)]
    return Run(Path("lc"), {"knobs": {"arm": "longctx", "benchmark": "b", "generator": "g"}}, recs)


def test_claude_gets_no_provider_caching_this_client_cannot_obtain_and_the_report_says_why():
    run = _lc_run({})
    claude = Pricing(ReportSettings(price=Price(load_price("claude-sonnet-4"), from_command_line=True)), [run])
    assert claude.cache_model is None
    assert "caches only prompt blocks marked `cache_control`" in pricing_words.describe(claude)
    full = (8000 * 3.0 + 100 * 15.0) / 1e6
    assert claude.mean_answer_cost_at(run, 10) == pytest.approx(full)  # before issue 38: a cache read for 9 of 10
    gpt = Pricing(ReportSettings(price=Price(load_price("gpt-4o"), from_command_line=True)), [run])
    assert gpt.cache_model is not None and gpt.mean_answer_cost_at(run, 10) < (8000 * 2.5 + 100 * 10.0) / 1e6
