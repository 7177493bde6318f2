"""The cpu basis's work model (llm/work_model.py, llm/work_probe.py): CPU seconds from tokens at rates one probe
measured, so the machine's load during one config's run cannot make that config dearer (issue 38, item 5).

Simulated records with a known truth: each document's answers cost what true per-token rates give them, times the
load the config ran under (a sweep runs configs one after another), split evenly among the batch's answers as the
backends split a batch's time. Two data models: a compute-bound one (prefill and decode rates dominate) and an
overhead-bound one (a large fixed cost per answer, lognormal noise on every document), like the tiny model. Rates
fitted on such records cannot tell a config run under load from a dearer one; rates from a probe can."""

from __future__ import annotations

import csv
import json
import random
import re

import pytest

from experiments.report.page.build import build_report
from experiments.report.settings import load_settings
from experiments.simulate.sweeps import write_run
from llm.work_model import FEATURES, WorkModel, answer_features, fit_work_model, shared_prefill_features

PRICE = {"name": "cpu-2vcpu", "kind": "hourly", "usd_per_hour": 0.08925, "devices": 1, "basis": "cpu", "vcpus": 2}
COMPUTE = (2e-4, 4e-5, 2e-2, 6e-2, 1e-3, 2e-3, 0.02)  # seconds per unit of each of FEATURES
OVERHEAD = (2e-5, 0.0, 4e-3, 4e-3, 0.0, 0.0, 1.5)
RAG_PROMPTS = {"k1": 220, "k2": 380, "k4": 700}


def _records(arm: str, config: str, prompt: int, rates, load: float, rng: random.Random, noise: float,
             docs: int = 8, q: int = 3, reuse_doc: int | None = None, alone: bool = False) -> list[dict]:
    """One config's records: each document's q answers decoded together (`alone`: one at a time), each batch running
    its longest answer's steps."""
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
        for r in batch:
            r["decode_batch"] = 1 if alone else q
            r["decode_steps"] = r["completion_tokens"] - 1 if alone else max(b["completion_tokens"] for b in batch) - 1
        truth = sum(float(answer_features(r) @ rates) for r in batch)  # type: ignore[operator]
        measured = truth * load * (rng.lognormvariate(0.0, noise) if noise else 1.0)
        for r in batch:
            r["cpu_s"] = measured / q + r["retrieval_cpu_s"]
            r["generation_s"] = r["latency_s"] = r["cpu_s"]
            r["cost_usd"] = r["cpu_s"] / PRICE["vcpus"] * PRICE["usd_per_hour"] / 3600
        if reuse_doc:
            shared = float(shared_prefill_features(batch[0]) @ rates)
            for r in batch:
                r["prefill_cpu_s"] = r["prefill_s"] = shared * load
        out += batch
    return out


def _sweep(rates, loads: dict[str, float], seed: int, noise: float) -> dict[str, list[dict]]:
    import numpy as np

    rates = np.asarray(rates)
    rng = random.Random(seed)
    runs = {"longctx": _records("longctx", "lc", 1100, rates, loads.get("longctx", 1.0), rng, noise, reuse_doc=1060)}
    for k, prompt in RAG_PROMPTS.items():  # k4's answers decoded one at a time
        runs[k] = _records("rag", k, prompt, rates, loads.get(k, 1.0), rng, noise, alone=k == "k4")
    return runs


def _modelled_means(runs: dict[str, list[dict]]) -> dict[str, float]:
    model = fit_work_model([r for recs in runs.values() for r in recs])
    assert model is not None
    return {name: sum(model.cpu_s(r) for r in recs) / len(recs) for name, recs in runs.items()}


def test_noiseless_records_give_back_the_true_rates():
    runs = _sweep(COMPUTE, {}, seed=0, noise=0.0)
    model = fit_work_model([r for recs in runs.values() for r in recs])
    assert model is not None and model.n == 96 and model.r2 == pytest.approx(1.0)
    for true, fitted, name in zip(COMPUTE, model.rates, FEATURES, strict=True):
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
    from experiments.report import pricing_words
    from experiments.report.loading import load_runs
    from experiments.report.pricing import Pricing, deployment_cost

    _write(tmp_path / name, _sweep(COMPUTE, loads, seed=4, noise=0.05), work)
    settings = load_settings()
    runs = load_runs([tmp_path / name]).runs
    pricing = Pricing(settings, runs)
    cost = {run.path.name: deployment_cost(run, pricing, settings) for run in runs}
    cheapest = min(RAG_PROMPTS, key=cost.get)
    return cheapest, cost["lc"] / cost[cheapest], pricing_words.describe(pricing), pricing_words.basis(pricing)


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
    from experiments.report import pricing_words
    from experiments.report.loading import load_runs
    from experiments.report.pricing import Pricing

    pricing = Pricing(load_settings(), load_runs([tmp_path / "mixed"]).runs)
    assert pricing.work is None and "priced at different probes' rates" in pricing_words.describe(pricing)
    with pytest.raises(ValueError, match="features"):
        WorkModel.from_dict({**_probe(COMPUTE), "features": ["prefilled token"]})


def _answer(prompt: int, decoded: int, batch: int, steps: int, doc: int = 0, group: int | None = None) -> dict:
    rec = {"prompt_tokens": prompt, "completion_tokens": decoded, "decode_batch": batch, "decode_steps": steps,
           "context_tokens": doc, "cpu_s": 1.0}
    if group:
        rec.update(prefix_group_size=group, prefill_cpu_s=0.5)
    return rec


def test_a_batch_is_charged_its_steps_once_and_a_shared_document_once_a_step():
    """Six answers decoded together over a shared 1,800-token document for 20 steps (the longest answer's 21 tokens
    less the first): together they are charged 20 steps of the batch and 20 reads of the document, not 6 x 20; each
    its own question's reads; an answer decoded alone is charged its steps at the alone rate."""
    import numpy as np

    batch = [_answer(1830 + j, 8 + 2 * j, 6, 20, doc=1800, group=6) for j in range(6)]
    x = np.sum([answer_features(r) for r in batch], axis=0)
    assert x[2] == pytest.approx(20) and x[3] == 0
    assert x[5] == pytest.approx(20 * 1.8)  # the document: once a step for the whole batch
    assert x[4] == pytest.approx(sum(20 * (30 + j + 10) for j in range(6)) / 1e3)  # each its own question and answer
    assert x[0] == pytest.approx(1800 + sum(30 + j for j in range(6)))  # the document prefilled once
    padded = [_answer(600, 8 + 2 * j, 6, 20) for j in range(6)]  # RAG: each row reads its own prompt every step
    y = np.sum([answer_features(r) for r in padded], axis=0)
    assert y[2] == pytest.approx(20) and y[5] == 0 and y[4] == pytest.approx(6 * 20 * 610 / 1e3)
    alone = answer_features(_answer(600, 9, 1, 8))
    assert alone[2] == 0 and alone[3] == 8
    old = answer_features({"prompt_tokens": 600, "completion_tokens": 9})  # before decode_steps: alone, its own
    assert old[3] == 8


def test_without_reuse_every_answer_prefills_and_reads_its_whole_prompt():
    from llm.work_model import no_reuse_features

    rec = _answer(1830, 12, 6, 20, doc=1800, group=6)
    plain = no_reuse_features(rec)
    assert plain[0] == 1830 and plain[1] == pytest.approx(1830 ** 2 / 2e3)
    assert plain[4] == pytest.approx(20 * (1830 + 10) / 1e3) and plain[5] == 0 and plain[2] == pytest.approx(20 / 6)
    work = WorkModel(COMPUTE, 1, 1.0, 0.0)
    assert work.no_reuse_cpu_s(rec) > work.cpu_s(rec)  # the whole document prefilled and read for this answer


def test_the_rates_carry_their_noise_in_their_draws():
    """Measured units from known rates: without noise every bootstrap refit gives the rates back; with 10% noise the
    refits spread, and their central 95% holds the true cost of a long-context answer and of a RAG one."""
    import numpy as np

    from llm.work_model import fit_rows

    rng = np.random.default_rng(3)
    truth = np.asarray(COMPUTE)
    shapes = [np.array([p, p * p / 2e3, s / b, 0, s * p / 1e3 * (b > 1), 0, b]) for p in (50, 300, 1200)
              for s in (0, 15) for b in (2, 4)] + [np.array([p, p * p / 2e3, 0, 15, 15 * p / 1e3, 0, 1])
                                                     for p in (50, 600)]
    shapes += [np.array([d, d * d / 2e3, 0, 0, 0, 0, 0]) for d in (1000, 2000, 4000)]
    shapes += [np.array([40, 40 * d / 1e3, 15, 0, 0.5, 15 * d / 1e3, 4]) for d in (1000, 2000, 4000)]
    clean = fit_rows([(x, float(x @ truth)) for x in shapes], answers=40)
    assert clean is not None and np.allclose(clean.rates, truth, rtol=1e-5)
    assert len(clean.draws) == 200 and np.allclose(clean.draws, truth, rtol=1e-4)
    noisy = fit_rows([(x, float(x @ truth) * rng.lognormal(0, 0.1)) for x in shapes for _ in range(2)], answers=80)
    lc = np.array([1830, 1830 * 1830 / 2e3, 20 / 6, 0, 0.8, 20 * 1.8 / 6, 1])  # a long-context answer's features
    rag = np.array([600, 600 * 600 / 2e3, 20 / 6, 0, 20 * 0.61, 0, 1])
    for x in (lc, rag):
        costs = np.asarray(noisy.draws) @ x
        low, high = np.quantile(costs, [0.025, 0.975])
        assert low < x @ truth < high and high / low > 1.02, (low, x @ truth, high)


def test_what_a_run_priced_with_builds_the_same_model_read_back():
    """llm.priced_with: the runner's price and probe rates, written as data and read back, give the same model; the
    rates price only an hourly price on the cpu basis; rates this version cannot read are refused by name."""
    from llm.cost import HourlyCost, PerTokenCost, load_price, record_cost
    from llm.priced_with import PricedWith
    from llm.work_model import WorkPriced

    work = WorkModel(COMPUTE, 1, 1.0, 0.0)
    cpu = PricedWith(load_price("cpu"), work)
    written = json.loads(json.dumps(cpu.to_metrics()))  # through metrics.json
    assert isinstance(written["price"], dict) and isinstance(written["work_rates"], dict)
    back = PricedWith.from_metrics(written)
    assert back == cpu and isinstance(back.cost_model(), WorkPriced)
    rec = {"prompt_tokens": 900, "completion_tokens": 20, "cpu_s": 30.0, "generation_s": 9.0, "decode_batch": 1}
    assert record_cost(back.cost_model(), rec) == pytest.approx(record_cost(cpu.cost_model(), rec), rel=1e-12)
    assert record_cost(back.cost_model(), rec) != pytest.approx(record_cost(PricedWith(load_price("cpu")).cost_model(),
                                                                            rec))  # the tokens' rates, not 30 s
    assert isinstance(PricedWith(load_price("h100"), work).cost_model(), HourlyCost)  # wall clock: no rates
    assert isinstance(PricedWith(load_price("gpt-4o"), work).cost_model(), PerTokenCost)
    assert PricedWith.from_metrics({}) == PricedWith() and PricedWith().cost_model().cost(1, 1, 1.0) is None
    with pytest.raises(ValueError, match="features"):
        PricedWith.from_metrics({"work_rates": {**written["work_rates"], "features": ["tokens"]}})
    with pytest.raises(ValueError, match="'n'"):
        PricedWith.from_metrics({"work_rates": {k: v for k, v in written["work_rates"].items() if k != "n"}})
