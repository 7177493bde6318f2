"""Long context from a backend that measured no prefill (HTTP servers, vLLM offline) follows the report's queries per
document through a token model of its document's prefill, and "no prefix cache" never discounts a cost twice
(issue 38, build item 2)."""

from __future__ import annotations

import pytest

from experiments.report import pricing_words
from llm.cost import build_cost_model, fit_token_rates, token_time_model
from perf import pricing_checks


def test_fitted_rates_recover_the_rates_that_made_the_seconds():
    rows = [(p, c, p / 20000 + c / 2000) for p, c in [(400, 20), (3000, 50), (8100, 35), (900, 80), (8100, 50)]]
    model = fit_token_rates(rows)
    assert model.prefill_tokens_per_s == pytest.approx(20000) and model.decode_tokens_per_s == pytest.approx(2000)
    assert "fitted on 5 records" in model.source


def test_rates_are_not_fitted_where_the_records_cannot_separate_prefill_from_decode():
    assert fit_token_rates([(100, 5, 3.0)] * 8) is None  # every record the same shape
    assert fit_token_rates([(100, 5, 1.0), (200, 10, 2.0)]) is None  # too few
    assert fit_token_rates([(100, 10, 1.0), (1000, 12, 0.1), (2000, 9, 0.05), (50, 10, 2.0)]) is None  # a rate <= 0


def test_a_throughput_price_names_its_own_rates():
    price = build_cost_model({"kind": "hourly", "usd_per_hour": 2.0, "basis": "throughput",
                              "prefill_tokens_per_s": 1000, "decode_tokens_per_s": 50})
    assert token_time_model(price).prefill_s(2000) == pytest.approx(2.0)
    assert token_time_model(build_cost_model({"kind": "hourly", "usd_per_hour": 2.0})) is None


def test_server_records_follow_q_and_no_cost_is_discounted_twice():
    assert pricing_checks.server_q_rescale_error() < 1e-9
    assert pricing_checks.discounted_twice_error() < 1e-9


def test_the_report_says_the_prefill_share_was_modelled_and_by_which_rates():
    price = {"name": "h", "kind": "hourly", "usd_per_hour": 3.6, "basis": "latency"}
    runs = pricing_checks._runs(price, lambda pt, ct, secs, cached: secs / 1000)
    pricing = pricing_checks._pricing(price, runs)
    text = pricing_words.describe(pricing)
    assert "8 long-context answers came from a backend that measured no prefill" in text
    assert "20,000 prefill tokens/s" in text and "fitted on 16 records" in text
    # the hand case of the issue: a document's prefill 0.4 s, the rest 0.03 s; q = 1, 4, 20
    rate = 0.001
    got = [pricing.mean_answer_cost_at(runs[0], q) / rate for q in (1, 4, 20)]
    assert got == pytest.approx([0.43, 0.13, 0.05])
