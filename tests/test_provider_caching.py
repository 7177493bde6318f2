"""Provider prompt caching priced end to end: the project's OpenAI-compatible server double bills cached prompt
tokens as OpenAI does (testsupport/fake_servers.py, `prompt_caching`), the HTTP client keeps what the usage says,
and the runner prices each record at the price file's cached rate (llm/cost.py) or, with no cached rate, at the
full rate and says so. The model behind the server is a tiny random-weight Llama (its answers are noise)."""

from __future__ import annotations

import json
import logging

import pytest
from omegaconf import OmegaConf

from llm.cost import build_cost_model, load_price
from tests.conftest import compose
from testsupport.fake_servers import FakeOpenAIServer, PromptCache


@pytest.fixture(scope="module")
def caching_server(tiny_llama):
    from llm.transformers_backend import TransformersGenerator

    backend = TransformersGenerator(str(tiny_llama), context_window=8192, dtype="float32", threads=1)
    with FakeOpenAIServer(backend, model_name="tiny", prompt_caching=True) as srv:
        yield srv


def run_through(server, tiny_llama, tmp_path, price: list[str], stream: bool = True):
    from experiments.run import run

    cfg = compose(["generator=smollm2_server", f"generator.base_url={server.url}", "generator.model=tiny",
                   f"generator.tokenizer={tiny_llama}", f"generator.stream={str(stream).lower()}",
                   "benchmark.languages=[en]", "benchmark.levels=[1k]", "benchmark.questions_per_haystack=3",
                   "+benchmark.max_new_tokens=3", f"run.cache_dir={tmp_path / 'cache'}", "run.progress=false", *price])
    metrics = run(cfg, tmp_path)
    records = [json.loads(line) for line in (tmp_path / "records.jsonl").read_text().splitlines()]
    return cfg, metrics, records


def test_the_prompt_cache_bills_whole_blocks_of_a_prefix_seen_before():
    cache = PromptCache(min_tokens=4, block=2)
    assert cache.read_and_remember([1, 2, 3, 4, 5, 6, 7]) == 0
    assert cache.read_and_remember([1, 2, 3, 4, 5, 6, 9, 9]) == 6
    assert cache.read_and_remember([1, 2, 3, 4, 8]) == 4
    assert cache.read_and_remember([1, 2, 3, 9, 9, 9]) == 0  # the shared prefix is below the minimum


def test_cached_tokens_are_priced_at_the_cached_rate(caching_server, tiny_llama, tmp_path):
    cfg, metrics, records = run_through(caching_server, tiny_llama, tmp_path, ["price=gpt-4o"])
    price = build_cost_model(OmegaConf.to_container(cfg.price, resolve=True))
    assert price.cached_input_usd_per_million == 1.25 and price.min_cached_prefix_tokens == 1024
    # the questions of one document may reach the server in any order (concurrent requests): the one that
    # arrived first wrote the cache, the others read it
    first, *rest = sorted(records, key=lambda r: r["cached_prompt_tokens"])
    assert first["prompt_tokens"] > 1024 and first["cached_prompt_tokens"] == 0
    for r in rest:  # the same document, another question: its prefix in whole 128-token blocks
        assert r["cached_prompt_tokens"] >= 1024 and r["cached_prompt_tokens"] % 128 == 0
        assert r["cached_prompt_tokens"] <= r["prompt_tokens"] - 5
        fresh = r["prompt_tokens"] - r["cached_prompt_tokens"]
        expected = (fresh * 2.5 + r["cached_prompt_tokens"] * 1.25 + r["completion_tokens"] * 10.0) / 1e6
        assert r["cost_usd"] == pytest.approx(expected, rel=1e-12)
        assert r["cost_usd"] < (r["prompt_tokens"] * 2.5 + r["completion_tokens"] * 10.0) / 1e6
    assert metrics["cached_prompt_tokens_full_rate_note"] is None


def test_the_run_writes_what_it_priced_with_as_data_and_the_report_prices_by_the_same_road(caching_server, tiny_llama,
                                                                                           tmp_path):
    """metrics.json holds the price as a mapping (no JSON string inside JSON); read back, it builds the model that
    gives each record its cost_usd, and the report's own setting (the same preset) prices the records alike."""
    from experiments.report.loading import load_runs
    from experiments.report.pricing import Pricing
    from experiments.report.settings import Price, ReportSettings
    from llm.cost import record_cost
    from llm.priced_with import PricedWith

    cfg, _, records = run_through(caching_server, tiny_llama, tmp_path, ["price=gpt-4o"])
    saved = json.loads((tmp_path / "metrics.json").read_text())
    assert isinstance(saved["price"], dict) and saved["price"] == OmegaConf.to_container(cfg.price, resolve=True)
    assert saved["work_rates"] is None  # a per-token price: no probe
    read_back = PricedWith.from_metrics(saved)
    assert read_back == PricedWith(load_price("gpt-4o")) and read_back.to_metrics() == {
        "price": saved["price"], "work_rates": None}
    answered = [r for r in records if r["status"] == "ok"]
    assert answered and any(r["cached_prompt_tokens"] for r in answered)
    model = read_back.cost_model()
    assert [record_cost(model, r) for r in answered] == pytest.approx([r["cost_usd"] for r in answered], rel=1e-12)
    runs = load_runs([tmp_path]).runs
    own = Pricing(ReportSettings(price=Price(load_price("gpt-4o"), from_command_line=True)), runs)
    recorded = Pricing(ReportSettings(price=Price(load_price("h100"))), runs)  # the records' own cost_usd
    assert own.source == "tokens" and recorded.source == "records" and recorded.cache_model is not None
    for r in answered:
        assert own.answer_cost(r) == pytest.approx(r["cost_usd"], rel=1e-12) == recorded.answer_cost(r)


def test_a_price_without_a_cached_rate_prices_them_in_full_and_says_so(caching_server, tiny_llama, tmp_path, caplog):
    # a per-token price made from the default hourly one (conf/price/cpu.yaml) without its hourly keys, which a
    # per-token price refuses by name
    price = ["price.name=no-cache-rate", "price.kind=per_token", "+price.input_usd_per_million=2.5",
             "+price.output_usd_per_million=10", "~price.usd_per_hour", "~price.devices", "~price.basis",
             "~price.vcpus"]
    with caplog.at_level(logging.WARNING, logger="experiments.run"):
        _, metrics, records = run_through(caching_server, tiny_llama, tmp_path, price, stream=False)
    cached = sum(r["cached_prompt_tokens"] for r in records)
    assert cached >= 2 * 1024, "the server reported cached tokens (non-streamed answers too)"
    for r in records:
        assert r["cost_usd"] == pytest.approx((r["prompt_tokens"] * 2.5 + r["completion_tokens"] * 10.0) / 1e6)
    note = metrics["cached_prompt_tokens_full_rate_note"]
    assert note and f"{cached} prompt tokens" in note and "no-cache-rate" in note
    assert "cached_input_usd_per_million" in note
    assert any(note in r.getMessage() for r in caplog.records)


def test_price_files_carry_the_cache_fields_and_bad_ones_fail_naming_the_field():
    sonnet = build_cost_model(load_price("claude-sonnet-4"))
    # 10k prompt tokens of which 8k written, then read: write 125%, read 10% of the input price
    assert sonnet.cost(10_000, 100, 0.0, cache_write_tokens=8_000) == pytest.approx(
        (2_000 * 3 + 8_000 * 3.75 + 100 * 15) / 1e6)
    assert sonnet.cost(10_000, 100, 0.0, cached_tokens=8_000) == pytest.approx(
        (2_000 * 3 + 8_000 * 0.3 + 100 * 15) / 1e6)
    fixed, per_answer = sonnet.cache_terms(10_000, 100, 8_000)
    assert fixed == pytest.approx(8_000 * (3.75 - 0.3) / 1e6)
    assert per_answer == pytest.approx((2_000 * 3 + 8_000 * 0.3 + 100 * 15) / 1e6)
    assert sonnet.cache_terms(1_000, 100, 900) == (0.0, pytest.approx((1_000 * 3 + 100 * 15) / 1e6))  # below 1,024
    for bad, field in (({"cached_input_usd_per_million": "half"}, "cached_input_usd_per_million"),
                       ({"cache_write_usd_per_million": 3.75}, "cache_write_usd_per_million"),
                       ({"min_cached_prefix_tokens": 1.5, "cached_input_usd_per_million": 1},
                        "min_cached_prefix_tokens"),
                       ({"cached_input_price": 1}, "cached_input_price")):
        with pytest.raises(ValueError, match=field):
            build_cost_model({"kind": "per_token", "input_usd_per_million": 3, "output_usd_per_million": 15, **bad})
    with pytest.raises(ValueError, match="exceed"):
        sonnet.cost(100, 1, 0.0, cached_tokens=90, cache_write_tokens=20)
