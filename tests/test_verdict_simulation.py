"""The verdict on sweeps with a known truth: selection-honest, decided from document-level
intervals, and not fooled by many configs (the common case: a Hydra sweep of 12 RAG configs)."""

import csv

import numpy as np
import pytest

from eval.metrics.confidence import paired_bootstrap
from experiments.report.halves import split_documents
from experiments.report.page.build import build_report
from experiments.report.settings import load_settings
from experiments.report.verdict.crossfit import BOOTSTRAPS, Candidates, crossfit
from experiments.report.verdict.decision import claim_p_values, decide
from experiments.report.verdict.family import holm
from experiments.simulate.sweeps import decision_rates, family_error_rates, known_truth_sweep
from tests.conftest import estimate_of

SWEEPS = 30


@pytest.fixture(scope="module")
def settings():
    return load_settings(tolerance=2.0, resamples=400)


def test_many_rag_configs_truly_worse_than_the_tolerance_are_rarely_recommended(tmp_path, settings):
    rates = decision_rates(tmp_path, "rag_worse_than_tolerance", SWEEPS, settings, seed=1)
    # Picking the luckiest of 12 configs on the same samples recommended RAG in about 3 of 4 such sweeps;
    # cross-fitting (each half's choice scored on the other half) keeps a wrong "rag" near the nominal 2.5%.
    assert rates["rag"] <= 0.1, rates


def test_equal_arms_are_not_called_for_long_context(tmp_path, settings):
    rates = decision_rates(tmp_path, "all_equal", SWEEPS, settings, seed=2)
    assert rates["longctx"] <= 0.1, rates
    assert rates["excludes_0"] <= 0.1, rates


@pytest.mark.integration  # end to end, 20-40 s: the fast tier stays under 10 minutes on 2 cores
def test_clear_differences_are_decided_about_as_often_as_with_one_config_fixed_in_advance(tmp_path, settings):
    better = decision_rates(tmp_path, "rag_clearly_better", SWEEPS, settings, seed=3)
    worse = decision_rates(tmp_path, "issue_longctx_better_21", SWEEPS, settings, seed=4)
    assert better["rag"] >= 0.8 and better["longctx"] == 0, better
    assert worse["longctx"] >= 0.8 and worse["rag"] == 0, worse
    # choosing among 12 configs costs little power: split-half decided 67% where one config decided 87-100%
    assert better["rag"] >= 0.9 * better["single"]["rag"], better
    assert worse["longctx"] >= 0.9 * worse["single"]["longctx"], worse


def _table(rows: dict[str, dict[str, float]], groups: dict[str, str], tolerance: float = 2.0) -> Candidates:
    lc, rags = rows["lc"], [rows[k] for k in sorted(rows) if k != "lc"]
    return Candidates([lc], rags, [1000.0], [100.0 * (i + 1) for i in range(len(rags))],
                      [(100.0 * (i + 1), 100.0 * (i + 1)) for i in range(len(rags))], groups,
                      sorted(set(groups.values())), tolerance)


def test_each_half_chooses_and_the_other_half_scores():
    docs = [f"doc{i}" for i in range(8)]
    half_a, half_b = split_documents(set(docs), seed=0)
    groups = {f"{d}-q{q}": d for d in docs for q in range(2)}
    # long context answers one of two questions per document; RAG config r0 (cheap) is lucky on half A
    # only, r1 (dearer) on half B only: on all documents both tie with long context
    lc = {i: float(i.endswith("q0")) for i in groups}
    r0 = {i: float(groups[i] in half_a) for i in groups}
    r1 = {i: float(groups[i] in half_b) for i in groups}
    table = _table({"lc": lc, "r0": r0, "r1": r1}, groups)
    fit = crossfit(table, sorted(half_a), sorted(half_b), n_resamples=200, seed=0)
    # half A chooses the cheapest RAG within 2 points of long context there (r0), half B chooses r1
    assert fit.choices == ((0, 0, True), (0, 1, True))
    assert not fit.halves_agree(0, 0)
    # r0 is scored on half B's samples and r1 on half A's: each looked good only where it was chosen
    assert {(s[0], s[2]) for s in fit.samples} == {(i, 0.0) for i in groups}
    assert fit.diff == pytest.approx(-50.0) and fit.n_groups == 8 and len(fit.samples) == 16
    # the same-sample choice on all documents: r0 (cheapest, 50 = long context's 50), difference 0
    everywhere = table.choose(np.arange(8), np.ones((1, 8)))
    assert (everywhere[0][0], everywhere[1][0], everywhere[2][0]) == (0, 0, True)


def test_with_nothing_to_choose_the_three_bootstraps_agree():
    rng = np.random.default_rng(5)
    docs = [f"doc{i}" for i in range(12)]
    groups = {f"{d}-q{q}": d for d in docs for q in range(3)}
    effect = {d: rng.normal(0, 0.3) for d in docs}
    lc = {i: float(rng.random() < 0.5) for i in groups}
    rag = {i: float(rng.random() < 0.5 + effect[groups[i]]) for i in groups}
    table = _table({"lc": lc, "r0": rag}, groups)
    half_a, half_b = split_documents(set(docs), seed=0)
    fits = [crossfit(table, sorted(half_a), sorted(half_b), 300, 0, bootstrap=b) for b in BOOTSTRAPS]
    # nothing chosen: "whole" and "fixed" draw the same pooled means; "recentred" the same deviations, each half's
    # scaled by sqrt(h / (h - 1)) (6 documents per half here)
    recentred, fixed, whole = (f.se for f in fits)
    assert fixed == pytest.approx(whole) and recentred == pytest.approx(fixed * (6 / 5) ** 0.5)
    assert fits[0].diff == pytest.approx(100 * np.mean([rag[i] - lc[i] for i in groups]))
    with pytest.raises(ValueError, match="bootstrap='other'"):
        crossfit(table, sorted(half_a), sorted(half_b), 10, 0, bootstrap="other")


def test_holm_adjusts_like_the_textbook():
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.2]) == [0.2] and holm([]) == []


@pytest.mark.parametrize("cheaper", [True, False, None])
def test_boundary_p_values_and_the_interval_never_disagree(cheaper):
    """A claim is decided exactly when its p-value is below 0.05 and exactly when the interval at its level (95%,
    or 97% for the cheaper arm's claim) clears its boundary: both read one t distribution (issue 33: an
    interpolated quantile cleared a boundary at p = 0.050)."""
    from eval.metrics.confidence import Estimate
    from experiments.report.verdict.decision import boundaries, claim_levels

    b_rag, b_lc = boundaries(2.0, cheaper)
    level = claim_levels(cheaper)
    for shift in np.linspace(-9, 9, 721):
        est = Estimate(float(shift), 2.0, 7, 8)
        lo, hi = est.interval(1 - level["rag"])[0], est.interval(1 - level["longctx"])[1]
        kind = decide(est, 2.0, cheaper).kind
        p = claim_p_values(est, 2.0, cheaper)
        assert (p["rag"] < 0.05) == (lo > b_rag) and (p["longctx"] < 0.05) == (hi < b_lc), shift
        assert (kind == "rag") == (p["rag"] < 0.05), (shift, kind, p)
        assert (kind == "longctx") == (p["longctx"] < 0.05 and p["rag"] >= 0.05), (shift, kind, p)
    # on the boundary itself: p = 1 and never decided
    on = Estimate(b_rag, 2.0, 7, 8)
    assert decide(on, 2.0, cheaper).kind != "rag" and claim_p_values(on, 2.0, cheaper)["rag"] == pytest.approx(1.0)


def test_holm_keeps_the_chance_of_any_wrong_decision_among_equal_rows_low(tmp_path, settings):
    # 6 rows whose arms are equal and RAG is dearer: any "rag" is wrong; each row alone errs ~2.5%
    rates = family_error_rates(tmp_path, 40, settings, n_rows=6, seed=9)
    assert rates["holm"] <= 0.1, rates
    assert rates["holm"] <= rates["per_row"], rates


def test_cluster_bootstrap_is_wider_when_questions_of_a_document_move_together():
    rng = np.random.default_rng(0)
    docs = np.repeat(np.arange(20), 10)
    effect = rng.normal(0, 0.3, 20)[docs]  # one document's questions rise and fall together
    a = effect + rng.normal(0, 0.1, docs.size)
    b = np.zeros(docs.size)
    per_question = paired_bootstrap(a, b, n_resamples=2000)
    per_document = paired_bootstrap(a, b, n_resamples=2000, groups=list(docs))
    width = lambda r: r.ci95[1] - r.ci95[0]  # noqa: E731
    assert per_document.n_groups == 20 and per_question.n_groups == docs.size
    assert width(per_document) > 2 * width(per_question)
    # one question per document: exactly the ordinary bootstrap
    same = paired_bootstrap(a[:20], b[:20], n_resamples=500, groups=[f"d{i}" for i in range(20)])
    assert same.ci95 == paired_bootstrap(a[:20], b[:20], n_resamples=500).ci95


def test_split_is_by_document_name_and_seed_not_by_score():
    docs = {f"doc{i}" for i in range(40)}
    first = split_documents(docs, seed=0)
    assert first == split_documents(set(sorted(docs, reverse=True)), seed=0)
    assert not first[0] & first[1] and first[0] | first[1] == docs and len(first[0]) == 20
    assert split_documents(docs, seed=1) != first


@pytest.mark.parametrize("ci,cheaper,shares,expected", [
    ((0.5, 9.0), False, None, "rag"),            # better, even if dearer
    ((-1.5, 6.0), True, None, "rag"),            # non-inferior and cheaper
    ((-1.5, 6.0), False, None, "inconclusive"),  # non-inferior but dearer, and long context not shown non-inferior
    ((-3.0, 1.0), False, None, "longctx"),       # long context non-inferior and cheaper
    ((-9.0, -2.5), True, None, "longctx"),       # long context better by more than the tolerance
    ((-3.0, 1.0), True, None, "inconclusive"),   # RAG cheaper but may lose more than the tolerance
    ((-1.0, 1.0), True, (0.0, 0.02), "no_decision"),  # floor: nobody answers
    ((-1.0, 1.0), True, (0.99, 1.0), "no_decision"),  # ceiling
    (None, True, None, "inconclusive"),
])
def test_decision_rule(ci, cheaper, shares, expected):
    assert decide(None if ci is None else estimate_of(*ci), 2.0, cheaper, shares).kind == expected


def test_report_states_selection_decision_and_naive_numbers(tmp_path, settings):
    known_truth_sweep(tmp_path / "sweep", -0.2, n_rag_configs=6, seed=7)
    files = build_report([str(tmp_path / "sweep")], tmp_path / "out", settings)
    with open(files["verdict.csv"], newline="", encoding="utf-8") as f:
        row = next(csv.DictReader(f))
    assert row["decision"] == "longctx"
    assert row["selection"].startswith("cross-fitted by document over 20 splits (seeds 0-19, averaged): 7 "
                                       "configs chosen on each half (about 20 documents) and scored on the other")
    assert row["configs_compared"] == "7" and row["n_groups"] == "40" and row["n_shared"] == "400"
    assert row["halves_agree"] in ("True", "False") and 0 <= float(row["halves_agreement"]) <= 1
    # the first family is the arm decisions alone: the router's test waits behind the gate
    assert row["family_size"] == "1" and float(row["p_decision"]) < 0.05
    assert row["naive_rag_config"] and row["naive_diff_rag_minus_longctx"]
    text = files["report.md"].read_text()
    assert "Configs are chosen without looking at the samples reported on" in text
    assert "Naive same-sample picks (not selection-adjusted" in text
    assert row["recommendation"].startswith("Use long context")


def test_floor_gives_no_decision_through_the_report(tmp_path, settings):
    known_truth_sweep(tmp_path / "sweep", 0.0, n_rag_configs=1, base=0.0, doc_sd=0.0, config_doc_sd=0.0, seed=3)
    files = build_report([str(tmp_path / "sweep")], tmp_path / "out", settings)
    with open(files["verdict.csv"], newline="", encoding="utf-8") as f:
        row = next(csv.DictReader(f))
    assert row["decision"] == "no_decision" and row["selection"].startswith("single config per arm")
    assert "answers 0% of questions correctly" in row["recommendation"]
    assert float(row["oracle_router_share_tie"]) == 1.0 and float(row["oracle_router_share_rag"]) == 0.0


def test_few_documents_widen_the_interval_like_a_t_interval():
    from eval.metrics.confidence import few_groups_factor, t_quantile

    assert (t_quantile(0.975, 3) == pytest.approx(3.182, abs=0.01)
            and t_quantile(0.975, 19) == pytest.approx(2.093, abs=0.002))
    assert few_groups_factor(4) == pytest.approx(1.873, abs=0.01) and few_groups_factor(1) == 1.0
    rng = np.random.default_rng(1)
    docs = np.repeat(np.arange(4), 5)
    a = rng.normal(0, 0.3, 4)[docs] + rng.normal(0, 0.1, docs.size)
    wide = paired_bootstrap(a, np.zeros(docs.size), n_resamples=1000, groups=list(docs))
    # the same draws without the correction: 4 groups, widened 1.87x around the estimate
    from eval.metrics.confidence import _group_index, _resampled_cluster_means

    raw = np.quantile(_resampled_cluster_means(a, _group_index(list(docs), docs.size), 1000, 0), [0.025, 0.975])
    assert wide.ci95[1] - wide.ci95[0] > 1.3 * (raw[1] - raw[0])
    assert wide.ci95[0] <= wide.diff <= wide.ci95[1]  # never clipped to the range of the values (issue 33)


def test_report_counts_the_decisions_and_says_what_would_decide_an_inconclusive_row(tmp_path, settings):
    known_truth_sweep(tmp_path / "sweep" / "clear", 0.3, n_rag_configs=1, n_docs=30, seed=5, benchmark="clear")
    known_truth_sweep(tmp_path / "sweep" / "open", 0.0, n_rag_configs=1, n_docs=8, seed=6, benchmark="open")
    files = build_report([str(tmp_path / "sweep")], tmp_path / "out", settings)
    with open(files["verdict.csv"], newline="", encoding="utf-8") as f:
        rows = {r["benchmark"]: r for r in csv.DictReader(f)}
    assert rows["clear"]["decision"] == "rag" and float(rows["clear"]["p_holm"]) < 0.05
    # the first family: the two rows' decisions (their routers' tests wait behind the gate)
    assert rows["clear"]["to_decide"] == "decided" and rows["clear"]["family_size"] == "2"
    open_row = rows["open"]
    assert open_row["decision"] == "inconclusive" and float(open_row["p_holm"]) >= float(open_row["p_decision"])
    assert open_row["to_decide"].startswith("~") and open_row["to_decide_sentence"].startswith("About ")
    md = files["report.md"].read_text()
    assert "**2 decisions, one family**" in md and "Holm's step-down procedure" in md
    assert "**The routers speak when the arms tie**" in md
    assert "| to decide |" in md and f"- open 8k: {open_row['to_decide_sentence']}" in md


def test_holm_withdraws_a_decision_only_one_row_alone_would_make(settings):
    from eval.metrics.confidence import Estimate
    from experiments.report.verdict.decision import Decision, OwnDecision
    from experiments.report.verdict.family import control_family
    from experiments.report.verdict.row import Comparison

    def row(name, center, sd):
        est = Estimate(center, sd, 1e6, 40)
        c = Comparison(name, "all", ci=est.interval(), token_ratio=2.0, estimate=est)  # RAG dearer
        return c, OwnDecision(decide(est, settings.tolerance, c.rag_cheaper), tested=True)

    # the first row's 97% interval just clears 0 (p about 0.018 at level 0.03: 0.03 on the common scale); the other
    # two are far from any boundary
    rows = [row("edge", 2.37 * 2.0, 2.0), row("b", 0.5, 4.0), row("c", -0.5, 4.0)]
    assert rows[0][1].decision.kind == "rag" and [own.decision.kind for _, own in rows[1:]] == ["inconclusive"] * 2
    families, _ = control_family(rows, settings)
    assert [f.size for f in families] == [3, 3, 3]
    edge = families[0]
    assert 0.0167 < edge.p_decision < 0.05 and edge.p_holm == pytest.approx(3 * edge.p_decision)
    assert edge.decision.kind == "inconclusive" and "makes 3 decisions" in edge.decision.why
    # the first screen's interval for it is the family-adjusted one, which no longer clears 0
    assert edge.ci[0] < 0 < rows[0][0].ci[0]
    (alone,), _ = control_family([row("edge", 2.37 * 2.0, 2.0)], settings)
    assert alone.decision == Decision("rag", alone.decision.why) and alone.size == 1
