"""The cpu basis's work model (llm/work_model.py, llm/work_probe.py): CPU seconds from tokens at rates one probe
measured, so the machine's load during one config's run cannot make that config dearer (issue 38, item 5).

Simulated records with a known truth: each document's answers cost what true per-token rates give them, times the
load the config ran under (a sweep runs configs one after another), split evenly among the batch's answers as the
backends split a batch's time. Two data models: a compute-bound one (prefill and decode rates dominate) and an
overhead-bound one (a large fixed cost per answer, lognormal noise on every document), like the tiny model. Rates
fitted on such records cannot tell a config run under load from a dearer one; rates from a probe can."""

from __future__ import annotations

import csv
import random
import re

import pytest

from experiments.report.page.build import build_report
from experiments.report.settings import load_settings
from experiments.simulate.sweeps import write_run
from llm.work_model import FEATURES, WorkModel, answer_features, fit_work_model

PRICE = {"name": "cpu-2vcpu", "kind": "hourly", "usd_per_hour": 0.08925, "devices": 1, "basis": "cpu", "vcpus": 2}
COMPUTE = (2e-4, 4e-5, 2e-2, 1e-3, 0.02)  # seconds per unit of each of FEATURES
OVERHEAD = (2e-5, 0.0, 4e-3, 0.0, 1.5)
RAG_PROMPTS = {"k1": 220, "k2": 380, "k4": 700}


def _records(arm: str, config: str, prompt: int, rates, load: float, rng: random.Random, noise: float,
             docs: int = 8, q: int = 3, reuse_doc: int | None = None) -> list[dict]:
    out = []
    for d in range(docs):
        batch = []
        for j in range(q):
            rec = {"id": f"s{d}-{j}", "benchmark": "b", "task": "t", "language": "en", "length_level": "1k",
                   "group": f"d{d}", "arm": arm, "config_hash": config, "status": "ok", "answers": ["x"],
                   "score": float((d + j) % 3 != 0), "prompt_tokens": prompt + 7 * j,
                   "completion_tokens": 10 + 5 * ((d + j) % 4), "context_tokens": reuse_doc or prompt - 40,
                   "retrieval_cpu_s": 0.0 if arm == "longctx" else 0.01}
            if reuse_doc:
                rec.update(prefix_group_size=q, prefill_cpu_s=0.0, prefill_s=0.0)
            batch.append(rec)
        truth = sum(float(answer_features(r) @ rates) for r in batch)  # type: ignore[operator]
        measured = truth * load * (rng.lognormvariate(0.0, noise) if noise else 1.0)
        for r in batch:
            r["cpu_s"] = measured / q + r["retrieval_cpu_s"]
            r["generation_s"] = r["latency_s"] = r["cpu_s"]
            r["cost_usd"] = r["cpu_s"] / PRICE["vcpus"] * PRICE["usd_per_hour"] / 3600
        if reuse_doc:
            shared = float(answer_features({**batch[0], "prefix_group_size": 1, "prompt_tokens": reuse_doc,
                                            "completion_tokens": 0}) @ rates) - rates[4]  # type: ignore[operator]
            for r in batch:
                r["prefill_cpu_s"] = r["prefill_s"] = shared * load
        out += batch
    return out


def _sweep(rates, loads: dict[str, float], seed: int, noise: float) -> dict[str, list[dict]]:
    import numpy as np

    rates = np.asarray(rates)
    rng = random.Random(seed)
    runs = {"longctx": _records("longctx", "lc", 1100, rates, loads.get("longctx", 1.0), rng, noise, reuse_doc=1060)}
    for k, prompt in RAG_PROMPTS.items():
        runs[k] = _records("rag", k, prompt, rates, loads.get(k, 1.0), rng, noise)
    return runs


def _modelled_means(runs: dict[str, list[dict]]) -> dict[str, float]:
    model = fit_work_model([r for recs in runs.values() for r in recs])
    assert model is not None
    return {name: sum(model.cpu_s(r) for r in recs) / len(recs) for name, recs in runs.items()}


def test_noiseless_records_give_back_the_true_rates():
    runs = _sweep(COMPUTE, {}, seed=0, noise=0.0)
    model = fit_work_model([r for recs in runs.values() for r in recs])
    assert model is not None and model.n == 96 and model.r2 == pytest.approx(1.0)
    for true, fitted, name in zip(COMPUTE, model.rates, FEATURES):
        assert fitted == pytest.approx(true, rel=1e-4, abs=1e-9), name
    lc = runs["longctx"][0]
    assert model.prefill_cpu_s(lc) == pytest.approx(lc["prefill_cpu_s"], rel=1e-4)
    assert model.prefill_cpu_s(runs["k1"][0]) is None  # no shared prefill: nothing to split


def _probe(rates) -> dict:
    return WorkModel(tuple(rates), 16, 0.99, 0.02, "a probe").to_dict()


def _means(runs: dict[str, list[dict]], work: WorkModel | None) -> dict[str, float]:
    return {name: sum((work.cpu_s(r) if work else r["cpu_s"]) for r in recs) / len(recs)
            for name, recs in runs.items()}


@pytest.mark.parametrize("rates,noise", [(COMPUTE, 0.05), (OVERHEAD, 0.15)], ids=["compute-bound", "overhead-bound"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_config_run_under_load_is_not_made_dearer(rates, noise, seed):
    truth = _means(_sweep(rates, {}, seed=seed, noise=0.0), None)
    loaded = _sweep(rates, {"k1": 2.5, "longctx": 1.6}, seed=seed, noise=noise)  # the cheapest ran while busy
    measured = _means(loaded, None)
    assert min(RAG_PROMPTS, key=measured.get) != "k1", "the load reorders the measured seconds"
    probed = WorkModel.from_dict(_probe([r * 1.7 for r in rates]))  # a probe under load: every rate 1.7x
    charged = _means(loaded, probed)
    assert sorted(RAG_PROMPTS, key=charged.get) == sorted(RAG_PROMPTS, key=truth.get)
    for name in truth:
        # generation at the probe's rates, retrieval (0.01 s a RAG answer) as measured
        assert charged[name] == pytest.approx(1.7 * truth[name] - 0.7 * 0.01 * (name != "longctx"), rel=1e-6)


def _write(root, runs: dict[str, list[dict]], work: dict | None) -> None:
    metrics = {"price": PRICE, "work_rates": work}
    write_run(root / "lc", {"arm": "longctx", "benchmark": "b", "generator": "g"}, runs["longctx"],
              extra_metrics=metrics)
    for k in RAG_PROMPTS:
        knobs = {"arm": "rag", "benchmark": "b", "generator": "g", "retriever": "bm25", "chunk_size": 128,
                 "top_k": int(k[1:]), "order": "document"}
        write_run(root / k, knobs, [{**r, "n_chunks": 10} for r in runs[k]], extra_metrics=metrics)


def _quick_settings(tmp_path):
    """conf/report.yaml with fewer splits and resamples: the choice of config is what these tests read."""
    from experiments.report.settings import DEFAULTS_FILE

    text = DEFAULTS_FILE.read_text(encoding="utf-8")
    text = re.sub(r"(?m)^(\s*resamples:) \d+", r"\1 200", re.sub(r"(?m)^(\s*splits:) \d+", r"\1 4", text))
    path = tmp_path / "report.yaml"
    path.write_text(text, encoding="utf-8")
    return load_settings(path)


def _cheapest_rag(tmp_path, name: str, loads: dict[str, float], work: dict | None) -> tuple[str, float, str, str]:
    """(the RAG config the report's prices make cheapest, long context's cost over its cost, the pricing sentence,
    the verdict's pricing phrase)."""
    from experiments.report.loading import load_runs
    from experiments.report.pricing import Pricing, deployment_cost

    _write(tmp_path / name, _sweep(COMPUTE, loads, seed=4, noise=0.05), work)
    settings = load_settings()
    runs = load_runs([tmp_path / name]).runs
    pricing = Pricing(settings, runs)
    cost = {run.path.name: deployment_cost(run, pricing, settings) for run in runs}
    cheapest = min(RAG_PROMPTS, key=cost.get)
    return cheapest, cost["lc"] / cost[cheapest], pricing.describe(), pricing.basis()


def test_the_prices_rank_the_configs_alike_whatever_the_load_each_ran_under(tmp_path):
    loads = {"k1": 2.5, "longctx": 1.6}
    idle = _cheapest_rag(tmp_path, "idle", {}, _probe(COMPUTE))
    loaded = _cheapest_rag(tmp_path, "loaded", loads, _probe(COMPUTE))
    assert idle[0] == loaded[0] == "k1" and loaded[1] == pytest.approx(idle[1], rel=1e-3)
    assert "per-token rates one probe measured for every run alike" in loaded[2] and "per prefilled token" in loaded[2]
    assert loaded[3].startswith("CPU time at the runs' probe's per-token rates")
    unprobed = _cheapest_rag(tmp_path, "unprobed", loads, None)  # the same records at their measured seconds
    assert unprobed[0] != "k1" and "the runs carry no probe of per-token rates" in unprobed[2]


def test_the_verdict_of_a_loaded_sweep_chooses_by_the_work_done(tmp_path):
    _write(tmp_path / "loaded", _sweep(COMPUTE, {"k1": 2.5, "longctx": 1.6}, seed=4, noise=0.05), _probe(COMPUTE))
    files = build_report([str(tmp_path / "loaded")], tmp_path / "out", _quick_settings(tmp_path))
    with open(files["verdict.csv"], newline="", encoding="utf-8") as f:
        verdict = list(csv.DictReader(f))[0]
    assert verdict["rag_config"] == "rag bm25 c128 k1"
    assert "per-token rates one probe measured for every run alike" in files["report.md"].read_text()


def test_runs_priced_at_different_probes_keep_their_measured_seconds_and_say_so(tmp_path):
    runs = _sweep(COMPUTE, {}, seed=5, noise=0.0)
    _write(tmp_path / "mixed", runs, _probe(COMPUTE))
    metrics = tmp_path / "mixed" / "k4" / "metrics.json"
    import json

    data = json.loads(metrics.read_text())
    data["work_rates"] = _probe(OVERHEAD)
    metrics.write_text(json.dumps(data))
    from experiments.report.loading import load_runs
    from experiments.report.pricing import Pricing

    pricing = Pricing(load_settings(), load_runs([tmp_path / "mixed"]).runs)
    assert pricing.work is None and "priced at different probes' rates" in pricing.describe()
    with pytest.raises(ValueError, match="features"):
        WorkModel.from_dict({**_probe(COMPUTE), "features": ["prefilled token"]})
