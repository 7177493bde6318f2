"""The learned router (experiments/report/router/fit.py) and its features, on simulated records with a known
truth (experiments/simulate/router.py): numpy only, no run folders, no model."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.arms.router_model import CUE_FEATURES, LONGCTX, POST_RETRIEVAL, PRE_ROUTE, RAG, fit_ridge
from experiments.report.router.features import router_features
from experiments.report.router.fit import route
from experiments.simulate.router import simulated_pair


def test_router_beats_the_best_arm_when_the_arms_differ_by_document_length():
    # 60 documents: at 40 the interval cleared 0 in 8 of 10 seeds (perf/router_simulation.py measures the rate)
    lc, rag = simulated_pair("length", n_docs=60, per_doc=5, seed=0)
    result = route(router_features(lc, rag), seed=0, n_resamples=500)
    assert result.ci[0] > 0, result.describe()
    assert result.diff > 10
    assert result.gap_closed is not None and result.gap_closed > 0.5
    assert result.router_mean > result.best_arm_mean and result.oracle_mean >= result.router_mean
    # the length of the document does the work: the biggest weight, negative (RAG better on short ones)
    weights = result.coefficients
    assert max(weights, key=lambda k: abs(weights[k])) == "log_doc_tokens"
    assert weights["log_doc_tokens"] < 0
    assert 0.2 < result.share_rag < 0.8


def test_router_does_not_claim_a_gain_when_errors_are_unrelated_to_features():
    covered = 0
    for seed in range(10):
        lc, rag = simulated_pair("null", n_docs=40, per_doc=5, seed=200 + seed)
        result = route(router_features(lc, rag), seed=seed, n_resamples=400)
        covered += result.ci[0] <= 0 <= result.ci[1]
    assert covered >= 8


def test_no_question_is_routed_by_a_model_that_saw_its_document():
    lc, rag = simulated_pair("length", n_docs=20, per_doc=3, seed=1)
    features = router_features(lc, rag)
    result = route(features, seed=5, n_resamples=50)
    group_of = dict(zip(features.ids, features.groups, strict=True))
    assert set(result.half_of.values()) == {"A", "B"}
    assert not set(result.trained_on["A"]) & set(result.trained_on["B"])
    for sid, half in result.half_of.items():
        assert group_of[sid] not in result.trained_on[half]
    # all questions of one document sit in one half, and each half is routed by the other's documents
    halves = {}
    for sid, half in result.half_of.items():
        halves.setdefault(group_of[sid], set()).add(half)
    assert all(len(h) == 1 for h in halves.values())
    assert set(result.trained_on["A"]) == {g for g, h in halves.items() if h == {"B"}}
    assert set(result.routes.values()) <= {RAG, LONGCTX} and len(result.routes) == features.n


def test_missing_retrieval_scores_drop_the_post_retrieval_features_and_say_so():
    lc, rag = simulated_pair("length", n_docs=12, per_doc=3, seed=0, retrieval=False)
    features = router_features(lc, rag)
    assert features.used == list(PRE_ROUTE)
    # one question type cannot separate; records without question text have no wording cues
    assert set(features.dropped) == {*POST_RETRIEVAL, *CUE_FEATURES, "task=qa"}
    assert "records without `question`" in features.dropped["cue=count"]
    result = route(features, seed=0, n_resamples=50)
    assert result.used == list(PRE_ROUTE) and set(result.dropped) == {*POST_RETRIEVAL, *CUE_FEATURES, "task=qa"}
    assert all(any(name in note for note in result.notes) for name in POST_RETRIEVAL)

    # one record without scores is enough to drop them for the whole set
    lc, rag = simulated_pair("length", n_docs=12, per_doc=3, seed=0)
    rag[4] = {k: v for k, v in rag[4].items() if k != "retrieved"}
    features = router_features(lc, rag)
    assert not set(features.used) & set(POST_RETRIEVAL)
    assert "missing on 1 of 36" in features.dropped["top1_score"]


def test_features_fall_back_and_drop_constant_or_missing_values():
    lc, rag = simulated_pair("length", n_docs=6, per_doc=2, seed=0)
    for r in lc:
        r.pop("context_tokens_full")  # falls back to the prompt's tokens
        r["truncated"] = False  # the same everywhere: dropped
    rag[0].pop("context_tokens")  # question tokens missing once: dropped
    features = router_features(lc, rag, post_retrieval=False)
    assert features.used == ["log_doc_tokens"]
    assert features.X[0, 0] == pytest.approx(np.log(lc[0]["prompt_tokens"]))
    assert "same on every question" in features.dropped["lc_truncated"]
    assert "missing" in features.dropped["question_tokens"]
    assert features.cost_unit == "prompt_tokens"
    # only questions both arms scored are paired
    lc[1] = {**lc[1], "status": "failed", "score": None}
    assert router_features(lc, rag).n == 11


def test_ridge_recovers_a_linear_gain_and_shrinks_noise():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 2))
    d = 0.3 * X[:, 0] + rng.normal(0, 0.1, 400)
    model = fit_ridge(X, d, ["signal", "noise"], ridge=1.0)
    assert model.weights[0] == pytest.approx(0.3, abs=0.03) and abs(model.weights[1]) < 0.03
    assert fit_ridge(X[:, :0], d, [], 1.0).predict(X[:3, :0]) == pytest.approx([d.mean()] * 3)


def test_cost_weight_tilts_the_routes_towards_the_cheaper_arm():
    lc, rag = simulated_pair("null", n_docs=20, per_doc=3, seed=7)
    features = router_features(lc, rag)
    free = route(features, seed=1, n_resamples=50)
    pricey = route(features, seed=1, n_resamples=50, cost_weight=1e-3)  # long context reads more tokens
    assert pricey.share_rag > max(free.share_rag, 0.8)
    assert pricey.cost_unit == "prompt_tokens"


def test_too_few_documents_for_a_split_give_none():
    lc, rag = simulated_pair("length", n_docs=6, per_doc=3, seed=0)
    assert route(router_features(lc, rag), seed=0, n_resamples=20) is None


def test_question_types_become_indicators_and_a_router_finds_a_type_effect():
    """Known truth: RAG answers "lookup" questions right and long context "reasoning" ones, whatever the
    length; the indicators task=lookup / task=reasoning carry it, and the router nearly reaches the oracle."""
    lc, rag = simulated_pair("null", n_docs=40, per_doc=4, seed=7)
    for i, (a, b) in enumerate(zip(lc, rag, strict=True)):
        task = "lookup" if i % 2 else "reasoning"
        a["task"] = b["task"] = task
        a["score"], b["score"] = (0.0, 1.0) if task == "lookup" else (1.0, 0.0)
    features = router_features(lc, rag)
    assert {"task=lookup", "task=reasoning"} <= set(features.used)
    result = route(features, n_resamples=200)
    assert result.diff > 40 and result.ci[0] > 2 and result.gap_closed > 0.9
    assert result.coefficients["task=lookup"] > 0 > result.coefficients["task=reasoning"]


def test_document_length_falls_back_to_the_length_level_for_imported_predictions():
    from experiments.arms.router_model import feature_row, level_tokens

    assert level_tokens("128k") == 128_000 and level_tokens("1.5k") == 1_500 and level_tokens("sim") is None
    row = feature_row({"length_level": "32k"}, {})
    assert abs(row["log_doc_tokens"] - np.log(32_000)) < 1e-9 and row["top1_score"] is None


def test_wording_cues_read_english_and_chinese_questions():
    from experiments.arms.router_model import wording_cues

    on = lambda q: {k[len("cue="):] for k, v in wording_cues(q).items() if v == 1.0}  # noqa: E731
    assert on("How many employees did the firm have in 2019?") == {"count"}
    assert on("Why did the board compare the offers?") == {"reason", "compare"}
    assert on("Who founded the company, and when?") == {"entity"}
    assert on("Summarize the main findings of the report.") == {"summary"}
    assert on("公司一共有多少名员工？") == {"count"}
    assert on("为什么两家公司的利润有差异？") == {"reason", "compare"}
    assert on("What is the capital of France?") == set()  # no cue: every indicator 0, none missing
    assert set(wording_cues("What is it?").values()) == {0.0}
    assert set(wording_cues(None).values()) == {None} and set(wording_cues("  ").values()) == {None}


def test_a_router_finds_a_wording_effect_and_an_overlap_effect():
    """Known truth 1: RAG answers "how many" questions right and long context "why" ones, whatever the
    length or type: only the wording (the records' `question`) tells them apart. Known truth 2: RAG is
    right exactly when its chunks hold most of the question's words (`retrieved_overlap`)."""
    from experiments.arms.router_model import feature_row

    lc, rag = simulated_pair("null", n_docs=40, per_doc=4, seed=11)
    for i, (a, b) in enumerate(zip(lc, rag, strict=True)):
        count = i % 2 == 0
        a["question"] = b["question"] = ("How many ships sailed in {}?" if count else "Why did {} sail?").format(i)
        a["score"], b["score"] = (0.0, 1.0) if count else (1.0, 0.0)
    features = router_features(lc, rag)
    assert {"cue=count", "cue=reason"} <= set(features.used) and "cue=summary" in features.dropped
    result = route(features, n_resamples=200)
    assert result.diff > 40 and result.ci[0] > 2 and result.gap_closed > 0.9
    assert result.coefficients["cue=count"] > 0 > result.coefficients["cue=reason"]

    lc, rag = simulated_pair("null", n_docs=40, per_doc=4, seed=12)
    rng = np.random.default_rng(3)
    for a, b in zip(lc, rag, strict=True):
        b["retrieved_overlap"] = float(rng.uniform(0, 1))
        a["score"], b["score"] = (0.0, 1.0) if b["retrieved_overlap"] > 0.5 else (1.0, 0.0)
    assert feature_row(lc[0], rag[0])["retrieved_overlap"] == rag[0]["retrieved_overlap"]
    features = router_features(lc, rag)
    assert "retrieved_overlap" in features.used
    result = route(features, n_resamples=200)
    weights = result.coefficients
    assert max(weights, key=lambda k: abs(weights[k])) == "retrieved_overlap" and weights["retrieved_overlap"] > 0
    assert result.diff > 20 and result.ci[0] > 2


def test_the_route_claim_is_one_sided_at_5_percent_and_its_shown_interval_agrees():
    """`route` has one direction (no "route is worse" claim), so its p-value is the one-sided tail: p < 0.05
    exactly when the 90% interval's lower end clears +tolerance, and the interval the table shows at the
    adjusted level clears it exactly when the claim stands (issue 41)."""
    from types import SimpleNamespace

    from eval.metrics.confidence import Estimate
    from experiments.report.router.evaluate import route_p_value, tested_interval

    est = Estimate(6.0, 2.0, 38, 40)  # t = 2 above +2: one-sided p about 0.026, two-sided about 0.053
    result = SimpleNamespace(estimate=est, ci=est.interval(0.95))
    p = route_p_value(result, 2.0)
    assert p < 0.05 < est.p_above(2.0) and est.interval(0.90)[0] > 2.0 > est.interval(0.95)[0]
    assert route_p_value(SimpleNamespace(estimate=Estimate(1.0, 2.0, 38, 40)), 2.0) > 0.5
    kept = SimpleNamespace(result=result, p_route=p, p_route_holm=p)  # alone in its family: kept
    dropped = SimpleNamespace(result=result, p_route=p, p_route_holm=2 * p)  # Holm over two claims: p_holm > 0.05
    assert tested_interval(kept)[0] > 2.0 > tested_interval(dropped)[0]
    assert tested_interval(kept)[0] == pytest.approx(est.interval(0.90)[0])


@pytest.mark.parametrize("edge", [0.15, 0.06])
def test_the_split_scenario_parts_its_arms_by_the_edge_it_is_given(edge):
    """"split": each arm at 0.6 +- `split_edge` on its side of SPLIT_AT, so the arms tie overall and routing by
    length gains about the edge (a little less: the document effect pulls accuracies towards 0.5)."""
    from experiments.simulate.router import SPLIT_AT

    lc, rag = simulated_pair("split", n_docs=600, per_doc=5, seed=3, split_edge=edge)
    short = np.array([r["context_tokens_full"] < SPLIT_AT for r in lc])
    s_lc, s_rag = np.array([r["score"] for r in lc]), np.array([r["score"] for r in rag])
    assert abs(s_lc.mean() - s_rag.mean()) < 0.03
    by_length = np.where(short, s_lc, s_rag).mean() - max(s_lc.mean(), s_rag.mean())
    assert 0.7 * edge < by_length < edge + 0.03


def test_the_screen_keeps_the_feature_that_carries_the_gain_and_zeroes_those_that_say_nothing():
    """Issue 41: the ridge shrinks every weight alike; the screen (|t| >= 2, and the strongest always) leaves out
    features unrelated to the gain, and with bootstrap weights it reads the questions as repeated."""
    from experiments.report.router.fit import fit_router, screened

    lc, rag = simulated_pair("split", n_docs=40, per_doc=5, seed=4)
    features = router_features(lc, rag)
    d = features.s_rag - features.s_lc
    keep = dict(zip(features.used, screened(features.X, d), strict=True))
    assert keep["log_doc_tokens"] and sum(keep.values()) < len(keep)
    model = fit_router(features.X, d, features.used, 1.0)
    assert all((w != 0) == keep[n] for n, w in zip(model.names, model.weights, strict=True))
    counts = np.random.default_rng(0).integers(0, 3, features.n)
    repeated = np.repeat(np.arange(features.n), counts)
    assert (screened(features.X, d, counts.astype(float)) == screened(features.X[repeated], d[repeated])).all()
    noise = np.random.default_rng(1).normal(size=(features.n, 1))  # one column that says nothing: kept (strongest)
    assert screened(noise, d).tolist() == [True]
