"""Cost per record from the price table: per-million token prices and GPU/CPU-hour prices."""

import pytest

from llm.cost import build_cost_model
from tests.conftest import compose


def test_per_million_token_prices():
    model = build_cost_model({"kind": "per_token", "name": "gpt-4o-mini", "input_usd_per_million": 0.15,
                              "output_usd_per_million": 0.60})
    # 100k prompt tokens and 500 completion tokens: 0.015 + 0.0003
    assert model.cost(100_000, 500, latency_s=12.0) == pytest.approx(0.0153)
    assert model.cost(0, 0, 0.0) == 0.0
    assert model.describe() == {"kind": "per_token", "name": "gpt-4o-mini", "input_usd_per_million": 0.15,
                                "output_usd_per_million": 0.60}


def test_gpu_hour_price_charges_latency():
    model = build_cost_model({"kind": "hourly", "name": "h100", "usd_per_hour": 2.99, "devices": 4})
    # 90 s on 4 GPUs at 2.99/h: 90/3600 * 2.99 * 4
    assert model.cost(128_000, 64, latency_s=90.0) == pytest.approx(0.299)
    assert model.cost(10, 10, latency_s=0.0) == 0.0
    assert model.describe()["basis"] == "latency"


def test_gpu_hour_price_charges_measured_throughput():
    model = build_cost_model({"kind": "hourly", "usd_per_hour": 3.6, "basis": "throughput",
                              "prefill_tokens_per_s": 10_000, "decode_tokens_per_s": 100})
    # 20k prompt tokens at 10k/s (2 s) + 100 new tokens at 100/s (1 s) = 3 s at 0.001 $/s; latency ignored
    assert model.cost(20_000, 100, latency_s=999.0) == pytest.approx(0.003)
    assert model.describe()["prefill_tokens_per_s"] == 10_000


def test_no_price_gives_no_cost():
    assert build_cost_model(None).cost(1000, 10, 1.0) is None
    assert build_cost_model({"kind": "none"}).cost(1000, 10, 1.0) is None


@pytest.mark.parametrize("cfg, message", [
    ({"kind": "per_token", "input_usd_per_million": "cheap", "output_usd_per_million": 1}, "input_usd_per_million"),
    ({"kind": "hourly", "usd_per_hour": -1}, "usd_per_hour"),
    ({"kind": "hourly", "usd_per_hour": 2, "basis": "throughput", "prefill_tokens_per_s": 100}, "decode_tokens_per_s"),
    ({"kind": "hourly", "usd_per_hour": 2, "basis": "vibes"}, "basis"),
    ({"kind": "hourly", "usd_per_hour": 2, "devices": 0}, "devices"),
    ({"kind": "per_call"}, "kind"),
])
def test_bad_price_configs_fail_clearly(cfg, message):
    with pytest.raises(ValueError, match=message):
        build_cost_model(cfg)


@pytest.mark.parametrize("name", ["cpu", "h100", "gpt-4o-mini", "gpt-4o", "none"])
def test_price_table_configs_compose_and_build(name):
    cfg = compose([f"price={name}"])
    from omegaconf import OmegaConf

    model = build_cost_model(OmegaConf.to_container(cfg.price, resolve=True))
    cost = model.cost(1_000_000, 1_000_000, 3600.0)
    assert cost is None if name == "none" else cost > 0


def test_default_price_is_the_cpu_hour():
    cfg = compose()
    assert cfg.price.kind == "hourly" and cfg.price.basis == "cpu" and cfg.price.vcpus == 2  # the work, not the wall
