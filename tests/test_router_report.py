"""The learned router in the report (issue 26): its section, the `route` decision, the routing arms
beside it, and the deployable file, on run directories with a known truth
(experiments/simulate/router.py); numpy and the report's own reader, no model."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from experiments.arms.router_model import feature_row, load_router
from experiments.report.page.build import build_report
from experiments.report.settings import ReportSettings
from experiments.simulate.router import write_router_sweep


@pytest.fixture(scope="module")
def length_report(tmp_path_factory):
    """RAG right on short documents, long context on long ones (the arms equal overall): a router reading the
    length wins while the arm decision stays open: its own family tests it all the same."""
    root = tmp_path_factory.mktemp("router_length")
    write_router_sweep(root / "runs", "length", selfroute=True)
    files = build_report([str(root / "runs")], root / "report", ReportSettings(resamples=400))
    return root, files


@pytest.fixture(scope="module")
def winning_report(tmp_path_factory):
    """The same with RAG 10 points better everywhere: RAG wins as an arm, and a router reading the length wins
    over RAG by much more than the tolerance; the arm decision stands, and so does the router."""
    root = tmp_path_factory.mktemp("router_wins")
    write_router_sweep(root / "runs", "length", rag_shift=0.14, n_docs=160)
    return root, build_report([str(root / "runs")], root / "report", ReportSettings(resamples=400))


def _verdict(files) -> list[dict[str, str]]:
    with open(files["verdict.csv"], encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_a_router_that_truly_wins_is_decided_route_with_its_costs_and_weights(winning_report):
    _, files = winning_report
    (row,) = _verdict(files)
    assert row["decision"] == "route" and row["arm_decision"] == "rag"
    assert float(row["router_ci95_low"]) > 2.0 and float(row["router_p_holm"]) < 0.05
    assert float(row["router_score"]) > float(row["router_best_arm_score"])
    assert float(row["router_oracle_score"]) >= float(row["router_score"])
    md = files["report.md"].read_text(encoding="utf-8")
    section = md[md.index("Route instead of choosing?"):]
    assert "**route**" in section and "benchmark gap closed" in section
    lo, hi = float(row["router_gap_closed_low"]), float(row["router_gap_closed_high"])  # only with its interval
    assert lo <= float(row["router_gap_closed"]) <= hi
    assert "a longer document favours long context" in section  # the known truth, in words
    assert "Route each question" in md  # the recommendation follows the decision


def test_a_router_whose_arms_tie_is_tested_and_decides_route(length_report):
    _, files = length_report
    (row,) = _verdict(files)
    # the arms tie, and the router's interval is far above the tolerance: tested in its own family, it stands
    assert row["decision"] == "route" and row["arm_decision"] == "inconclusive"
    assert float(row["router_ci95_low"]) > 2.0 and float(row["router_p_holm"]) < 0.05
    md = files["report.md"].read_text(encoding="utf-8")
    section = md[md.index("Route instead of choosing?"):]
    assert "**route**" in section and " adj." in section  # shown at the level it was tested at


def test_self_route_is_measured_on_the_same_questions_against_the_same_best_arm(length_report):
    _, files = length_report
    md = files["report.md"].read_text(encoding="utf-8")
    table = md[md.index("| benchmark | level | router |"):]
    head = [c.strip() for c in table.splitlines()[0].strip("|").split("|")]
    line = next(x for x in table.splitlines() if "Self-Route" in x)
    cells = dict(zip(head, (c.strip() for c in line.strip("|").split("|")), strict=True))
    router = dict(zip(head, (c.strip() for c in table.splitlines()[2].strip("|").split("|")), strict=True))
    assert router["router"] == "learned router" and cells["best arm"] == router["best arm"]
    assert cells["n"] == "200" and cells["to RAG"] == "50%"  # every question; half sent to RAG by construction


def test_the_router_file_is_plain_json_and_routes_like_the_report_says(length_report):
    root, files = length_report
    path = files["router_sim_sim.json"]
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["format"] == "rag-vs-lc-router" and "log_doc_tokens" in data["features"]
    router = load_router(path)
    assert router.estimate["diff"] > 2 and router.trained_on["documents"] == 40
    lc = [json.loads(x) for x in (root / "runs" / "lc" / "records.jsonl").read_text().splitlines()]
    rag = [json.loads(x) for x in (root / "runs" / "rag" / "records.jsonl").read_text().splitlines()]
    pairs = list(zip(lc, rag, strict=True))
    short = [router.choose(feature_row(a, b))[0] for a, b in pairs if a["context_tokens_full"] < 4_000]
    long = [router.choose(feature_row(a, b))[0] for a, b in pairs if a["context_tokens_full"] > 16_000]
    assert np.mean([r == "rag" for r in short]) > 0.9 and np.mean([r == "longctx" for r in long]) > 0.9


def test_features_that_say_nothing_decide_no_route_but_the_file_is_still_written(tmp_path):
    write_router_sweep(tmp_path / "runs", "null", seed=3)
    files = build_report([str(tmp_path / "runs")], tmp_path / "report", ReportSettings(resamples=400))
    (row,) = _verdict(files)
    assert row["decision"] != "route" and row["arm_decision"] == ""
    assert float(row["router_ci95_low"]) <= 2.0
    assert load_router(files["router_sim_sim.json"]).trained_on["questions"] == 200


def test_too_few_documents_give_no_router_and_say_why(tmp_path):
    write_router_sweep(tmp_path / "runs", "length", n_docs=6, seed=1)
    files = build_report([str(tmp_path / "runs")], tmp_path / "report", ReportSettings(resamples=200))
    (row,) = _verdict(files)
    assert row["router_score"] == "" and row["decision"] != "route"
    md = files["report.md"].read_text(encoding="utf-8")
    assert "No router for sim sim: fewer than 8 documents" in md
    assert not any(name.startswith("router_") for name in files)


def test_a_price_on_tokens_moves_questions_to_the_cheaper_arm(tmp_path):
    """RAG's prompts are about 1k tokens, long context's up to 16k: at 100 points per 1,000 tokens saved
    every question is worth sending to RAG, and the file carries the trade for the live arm."""
    write_router_sweep(tmp_path / "runs", "length", seed=2)
    plain = build_report([str(tmp_path / "runs")], tmp_path / "plain", ReportSettings(resamples=200))
    priced = build_report([str(tmp_path / "runs")], tmp_path / "priced",
                          ReportSettings(resamples=200, router_points_per_1k_tokens=100.0))
    share = lambda files: float(_verdict(files)[0]["router_share_rag"])  # noqa: E731
    assert share(priced) > 0.95 > share(plain)
    router = load_router(priced["router_sim_sim.json"])
    assert router.cost_unit == "prompt_tokens" and router.cost_weight == pytest.approx(1e-3)
    assert "100 points per 1,000 prompt tokens" in priced["report.md"].read_text(encoding="utf-8")


def test_the_two_cross_fitted_models_deployed_as_routers_route_exactly_as_the_report_measured():
    """What perf/router_live_check.py runs live: each half's model, saved and loaded as a router file and fed
    `feature_row` of a question's records, routes that half's questions as the report's estimate did."""
    from experiments.arms.router_model import Router, router_from_json
    from experiments.report.router.features import router_features
    from experiments.report.router.fit import half_models, route
    from experiments.simulate.router import simulated_pair

    lc, rag = simulated_pair("length", n_docs=20, per_doc=3, seed=11)
    features = router_features(lc, rag)
    result = route(features, n_resamples=100)
    models = {h: router_from_json(Router(m).to_json()) for h, m in half_models(features).items()}
    by_id = {r["id"]: r for r in rag}
    live = {a["id"]: models[result.half_of[a["id"]]].choose(feature_row(a, by_id[a["id"]]))[0] for a in lc}
    assert live == result.routes
