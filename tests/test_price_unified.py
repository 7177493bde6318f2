"""One price schema, one cost model: the runner's cost_usd and the report's what-if agree.

The runner prices each record with llm.cost (experiments/run.py: `llm.cost.build_cost_model` of the `price`
group); the report prices the same records from conf/report.yaml's `price:` (a conf/price preset
or mapping) through the same model. No model runs: records with known usage, real files."""

from __future__ import annotations

from statistics import mean

import pytest

from experiments.report.page.build import build_report
from experiments.report.settings import load_settings
from experiments.simulate.sweeps import write_run
from llm.cost import build_cost_model, load_price
from tests.test_report import _csv

USAGE = [(1200, 40, 3.5), (800, 12, 1.25), (20000, 300, 61.0), (5, 1, 0.01)]


def _runs(root, price_cfg):
    model = build_cost_model(price_cfg)  # exactly what the runner writes into records
    recs = [{"id": f"s{i}", "group": f"d{i}", "benchmark": "b", "task": "t", "language": "en", "length_level": "1k",
             "arm": "longctx", "status": "ok", "score": 1.0, "prompt_tokens": pt, "completion_tokens": ct,
             "latency_s": lat, "cost_usd": model.cost(pt, ct, lat)} for i, (pt, ct, lat) in enumerate(USAGE)]
    write_run(root / "priced", {"arm": "longctx", "benchmark": "b", "generator": "g"}, recs,
              extra_metrics={"price": price_cfg})
    # the same records without cost_usd: the report must price them itself
    write_run(root / "unpriced", {"arm": "longctx", "benchmark": "b", "generator": "g2"},
              [{k: v for k, v in r.items() if k != "cost_usd"} for r in recs])
    return recs


@pytest.mark.parametrize("preset", ["gpt-4o-mini", "gpt-4o", "cpu", "h100"])
def test_report_what_if_and_runner_cost_usd_agree(preset, tmp_path):
    price_cfg = load_price(preset)
    recs = _runs(tmp_path / "runs", price_cfg)
    settings_file = tmp_path / "report.yaml"
    settings_file.write_text(f"price: {preset}\n")
    files = build_report([str(tmp_path / "runs" / "unpriced")], tmp_path / "out", load_settings(settings_file))
    row = next(r for r in _csv(files["whatif.csv"]) if r["arm"] == "longctx")
    runner_mean = mean(r["cost_usd"] for r in recs)
    assert float(row["cost_per_1000"]) == pytest.approx(1000 * runner_mean, rel=1e-6)
    # and the report reading the runner's own cost_usd gives the same number
    files2 = build_report([str(tmp_path / "runs" / "priced")], tmp_path / "out2", load_settings(settings_file))
    row2 = next(r for r in _csv(files2["whatif.csv"]) if r["arm"] == "longctx")
    assert float(row2["cost_per_1000"]) == pytest.approx(float(row["cost_per_1000"]), rel=1e-6)


def test_report_price_mapping_and_flags_use_the_conf_price_vocabulary(tmp_path):
    f = tmp_path / "report.yaml"
    f.write_text("price: {kind: hourly, usd_per_hour: 3.6, devices: 2}\n")
    s = load_settings(f)
    assert s.price.model().describe()["usd_per_hour"] == 3.6 and s.price.model().hourly_rate == 7.2
    flags = load_settings(f, price_in=2.0)
    assert flags.price.spec["kind"] == "per_token" and flags.price.spec["input_usd_per_million"] == 2.0
    assert flags.price.model().cost(1_000_000, 0, 0.0) == pytest.approx(2.0)
    assert load_settings(f, gpu_hour_price=1.5).price.model().hourly_rate == 1.5
    f.write_text("price: {input_per_m: 1.0}\n")
    with pytest.raises(ValueError, match="input_usd_per_million"):
        load_settings(f)
    f.write_text("price: no-such-preset\n")
    with pytest.raises(ValueError, match="no-such-preset"):
        load_settings(f)
    f.write_text("price: {kind: per_token, input_usd_per_million: -1, output_usd_per_million: 0}\n")
    with pytest.raises(ValueError, match="input_usd_per_million"):
        load_settings(f)
