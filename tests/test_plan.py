"""How much data a decision needs (experiments.report.verdict.power, `python -m experiments.plan`): the
clustered variance against hand numbers and a direct computation, the planned size against the
decision rule, and the promise itself: a sweep of the planned size decides at about the planned rate."""

import json
import math
import random

import numpy as np
import pytest

from eval.metrics.confidence import _group_index, _resampled_cluster_means
from experiments.plan import main as plan_main
from experiments.report.settings import load_settings
from experiments.report.verdict.decision import INCONCLUSIVE, decide
from experiments.report.verdict.power import (
    clustered_variance,
    critical_sum,
    documents_for,
    minimum_detectable_difference,
    targets,
)
from experiments.report.verdict.sizing import MAX_DOCUMENTS as SIZING_MAX
from experiments.report.verdict.sizing import planted, share_reached, simulated_estimate
from experiments.report.verdict_row import plan_rows
from experiments.simulate.plan_check import decided_share, simulated_rows
from experiments.simulate.sweeps import known_truth_sweep
from tests.conftest import estimate_of


@pytest.fixture(scope="module")
def settings():
    return load_settings(tolerance=2.0, resamples=300)


def test_hand_made_example_gives_the_textbook_numbers():
    # three documents of two questions: means 3, 1, 0; every question 1 from its document's mean
    cv = clustered_variance([2, 4, 0, 2, -1, 1], ["A", "A", "B", "B", "C", "C"])
    # between-document variance of the means: ((5/3)^2 + (1/3)^2 + (4/3)^2) / 2 = 7/3; SE^2 = 7/3 / 3
    assert cv.between_sd == pytest.approx(math.sqrt(7 / 3)) and cv.se == pytest.approx(math.sqrt(7) / 3)
    # MSB = 2 x 42/9 / 2 = 14/3, MSW = 6 / 3 = 2, m0 = 2: ICC = (14/3 - 2) / (14/3 + 2) = 0.4
    assert cv.icc == pytest.approx(0.4) and cv.design_effect == pytest.approx(1.4)
    assert cv.mean == pytest.approx(4 / 3) and cv.n_documents == 3 and cv.questions_per_document == 2
    # 80% power, 5% two-sided: t_2(0.975) + t_2(0.8) = 4.303 + 1.061 with 3 documents, z's 2.80 with many
    assert critical_sum(3, 0.8) == pytest.approx(5.364, abs=0.05)
    assert critical_sum(10**6, 0.8) == pytest.approx(1.95996 + 0.84162, abs=1e-3)
    assert minimum_detectable_difference(cv.se, 3, 0.8) == pytest.approx(critical_sum(3, 0.8) * math.sqrt(7) / 3)


def _direct(d, docs):
    """The same quantities with plain loops: CR1 standard error and the one-way ANOVA ICC."""
    by = {}
    for x, g in zip(d, docs, strict=True):
        by.setdefault(g, []).append(x)
    n, k, mean = len(d), len(by), sum(d) / len(d)
    se2 = k / (k - 1) * sum((len(v) * (sum(v) / len(v) - mean)) ** 2 for v in by.values()) / n**2
    msb = sum(len(v) * (sum(v) / len(v) - mean) ** 2 for v in by.values()) / (k - 1)
    msw = sum((x - sum(v) / len(v)) ** 2 for v in by.values() for x in v) / (n - k)
    m0 = (n - sum(len(v) ** 2 for v in by.values()) / n) / (k - 1)
    return math.sqrt(se2), (msb - msw) / (msb + (m0 - 1) * msw)


def test_unequal_documents_match_a_direct_computation_and_the_cluster_bootstrap():
    rng = random.Random(3)
    docs, d = [], []
    for g in range(25):
        effect = rng.gauss(0, 20)
        for _ in range(rng.randint(2, 9)):
            docs.append(f"doc{g}")
            d.append(100 * ((rng.random() < 0.6 + effect / 200) - (rng.random() < 0.6)))
    cv = clustered_variance(d, docs)
    se, icc = _direct(d, docs)
    assert cv.se == pytest.approx(se) and cv.icc == pytest.approx(icc) and 0 < cv.icc < 1
    assert cv.design_effect == pytest.approx(1 + (len(d) / 25 - 1) * icc)
    # the verdict's resampling of whole documents has about the same spread (without the G/(G-1) factor)
    boot = _resampled_cluster_means(np.asarray(d, float), _group_index(docs, len(d)), 20000, 0)
    assert float(np.std(boot)) == pytest.approx(cv.se * math.sqrt(24 / 25), rel=0.05)


def test_planned_documents_are_the_smallest_that_reach_the_margin():
    for sd, margin in ((25.0, 10.0), (40.0, 3.0), (10.0, 30.0)):
        n = documents_for(sd, margin, 0.8)
        assert critical_sum(n, 0.8) * sd / math.sqrt(n) <= margin
        assert n == 2 or critical_sum(n - 1, 0.8) * sd / math.sqrt(n - 1) > margin
    assert documents_for(25.0, 0.0, 0.8) is None and documents_for(25.0, -1.0, 0.8) is None
    assert documents_for(25.0, 5.0, 0.9) > documents_for(25.0, 5.0, 0.8)


@pytest.mark.parametrize("rag_cheaper", [True, False, None])
def test_the_target_boundary_is_what_the_decision_rule_decides_on(rag_cheaper):
    rng = random.Random(0)
    for _ in range(300):
        diff, tol = rng.uniform(-15, 15), rng.choice([0.0, 2.0, 5.0])
        best = targets(diff, tol, rag_cheaper)[0]
        if best.margin <= 0:  # on a boundary: no interval around diff decides
            assert decide(estimate_of(diff - 0.01, diff + 0.01), tol, rag_cheaper).kind == INCONCLUSIVE
            continue
        # the interval at the claim's own level (one-sided 1.5% for the cheaper arm's claim, 2.5% otherwise)
        # reaching 1% short of the boundary decides it; 1% beyond, nothing (no other claim reaches further)
        inside, outside = 0.99 * best.margin, 1.01 * best.margin
        at = best.confidence
        assert decide(estimate_of(diff - inside, diff + inside, confidence=at), tol, rag_cheaper).kind == best.decision
        assert decide(estimate_of(diff - outside, diff + outside, confidence=at), tol, rag_cheaper).kind == INCONCLUSIVE


def test_every_claim_is_planned_at_its_stricter_level():
    # RAG cheaper, tolerance 2, RAG truly 8 better: "no more than 2 worse" (margin 10) at one-sided 1.5%
    best = targets(8.0, 2.0, True)[0]
    assert (best.decision, best.boundary, best.margin) == ("rag", -2.0, 8.0 + 2.0)
    assert best.confidence == pytest.approx(0.97) and best.reach == pytest.approx(10 / 2.1701, rel=1e-3)
    # long context cheaper, RAG truly 2.45 points better at tolerance 5: every claim at one-sided 1.5%, so the
    # larger margin goes first: "long context no more than 5 worse" (2.55) before "RAG better" (2.45)
    first = targets(2.45, 5.0, False)[0]
    assert (first.decision, first.boundary, first.confidence) == ("longctx", 5.0, pytest.approx(0.97))
    # a cross-fitted row plans at one-sided 1%
    assert targets(8.0, 2.0, True, strict=True)[0].confidence == pytest.approx(0.98)
    # the formula sizes the claim at its level: more documents than at 95% two-sided
    assert documents_for(24.0, 10.0, 0.8, 0.97) > documents_for(24.0, 10.0, 0.8)
    assert critical_sum(10**9, 0.8, 0.97) == pytest.approx(2.1701 + 0.8416, abs=1e-3)


def test_a_sweep_of_the_planned_size_decides_at_about_the_planned_rate(tmp_path, settings):
    # a pilot of 60 documents x 10 questions, RAG truly 8 points better (and cheaper): the planner's
    # variance, asked for the documents that decide +8 points at 80% power
    row = simulated_rows(tmp_path / "pilot", 0.08, 60, settings, seed=11)[0]
    plan = plan_rows([row], settings, power=0.8, difference=8.0)[0]
    assert plan["target"]["decision"] == "rag" and plan["target"]["boundary"] == -2.0
    n = plan["documents_needed"]
    assert 20 <= n <= 200, plan
    # the plan's size reaches 80% power in at least 4 of 5 plausible worlds drawn from the pilot, and says the
    # size for 9 of 10 beside it
    assert plan["worlds"] == 20 and plan["worlds_reaching_power"] >= 0.8 and plan["sure_documents"] >= n, plan
    assert "in 4 of 5 plausible worlds" in plan["sentence"] and "for 9 of 10" in plan["sentence"], plan["sentence"]
    # the claim is tested at one-sided 1.5% (RAG is cheaper), and the plan is sized for that level (a 1,500-
    # document pilot sizes 54-57 documents for 80% power on average; this plan asks for more, to hold in 4 of 5
    # worlds); 40 sweeps of one seed stream may all decide, so the check on too large a plan is the one below
    shares = decided_share(tmp_path, 0.08, n, 40, settings, seed=12)
    assert shares["rag"] >= 0.6 and shares["longctx"] == 0, (n, shares)
    # a third of the planned documents falls well short of the promised power (about 50% here): a plan asking for
    # three times the documents it needs would fail this
    fewer = decided_share(tmp_path, 0.08, n // 3, 40, settings, seed=13)
    assert fewer["rag"] < min(0.7, shares["rag"] - 0.2), (n, shares, fewer)


def test_cli_prints_one_json_object_per_verdict_row(tmp_path, capsys):
    known_truth_sweep(tmp_path / "sweep", 0.02, n_rag_configs=1, n_docs=10, seed=1)
    assert plan_main([str(tmp_path / "sweep"), "--tolerance", "2", "--power", "0.8"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1
    row = json.loads(lines[0])
    assert row["benchmark"] == "sim" and row["level"] == "8k" and row["n_documents"] == 10
    assert row["questions_per_document"] == 10 and row["decision"] == "inconclusive"
    assert row["documents_needed"] > 10 and row["more_documents"] == row["documents_needed"] - 10
    # RAG is cheaper: the plan aims at its "no more than 2 worse" claim, tested at one-sided 1.5%
    assert row["mdd"] == pytest.approx(critical_sum(10, 0.8, 0.97) * row["se"], abs=0.02)
    assert row["sentence"].startswith(f"About {row['documents_needed']} documents ({row['more_documents']} more)")
    assert "80% power" in row["sentence"]
    assert "(the difference that matters, report.yaml plan.difference" in row["sentence"]
    assert row["assumed"] == "setting" and abs(row["planned_difference"]) == 5.0
    assert row["column"] == f"~{row['documents_needed']} docs (+{row['more_documents']})"
    assert f"a true difference {row['mdd']:.1f} points or more" in row["detail"]
    # RAG is cheaper here: exactly 2 points worse sits on the boundary of "no more than 2 points worse and cheaper"
    assert plan_main([str(tmp_path / "sweep"), "--difference", "-2"]) == 0
    never = json.loads(capsys.readouterr().out)
    assert never["documents_needed"] is None and never["column"] == "never" and never["target"] is None
    assert "no number of documents would decide it" in never["sentence"]
    # a hair beyond the boundary: more documents than the simulated search tries, said as "more than"
    assert plan_main([str(tmp_path / "sweep"), "--difference", "-2.05"]) == 0
    far = json.loads(capsys.readouterr().out)
    assert far["beyond_search"] and far["documents_needed"] == SIZING_MAX, far
    assert far["column"] == f"> {SIZING_MAX} docs" and far["sentence"].startswith(f"More than {SIZING_MAX} documents")


def test_decided_and_floor_rows_say_so(tmp_path, settings):
    decided = simulated_rows(tmp_path / "clear", 0.3, 30, settings, seed=4)[0]
    plan = plan_rows([decided], settings)[0]
    assert plan["decision"] == "rag" and plan["column"] == "decided"
    assert plan["sentence"].startswith("Already decided (rag) with 30 documents")
    floor = simulated_rows(tmp_path / "floor", 0.0, 6, settings, seed=4, base=0.0, doc_sd=0.0, config_doc_sd=0.0)[0]
    plan = plan_rows([floor], settings)[0]
    assert plan["decision"] == "no_decision" and plan["column"] == "-" and plan["documents_needed"] is None
    assert "more documents would not help" in plan["sentence"]


def test_cli_counts_sweep_documents_when_the_verdict_reports_on_a_split(tmp_path, capsys):
    known_truth_sweep(tmp_path / "sweep", -0.05, n_rag_configs=4, n_docs=24, questions_per_doc=4, seed=2)
    assert plan_main([str(tmp_path / "sweep")]) == 0
    row = json.loads(capsys.readouterr().out.strip().splitlines()[0])
    assert row["n_documents"] == 24 and row["interval_documents"] in (12, 24)
    if row["documents_needed"] is not None:
        assert row["documents_needed"] % 1 == 0 and row["documents_needed"] >= 2


def test_cli_errors_are_clear(tmp_path, capsys):
    assert plan_main([str(tmp_path / "nothing_here")]) == 2
    assert "no such run or multirun directory" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert plan_main([str(tmp_path / "empty")]) == 2
    assert "no run directories (with metrics.json)" in capsys.readouterr().err
    known_truth_sweep(tmp_path / "sweep", 0.0, n_rag_configs=1, n_docs=4, seed=1)
    assert plan_main([str(tmp_path / "sweep"), "--power", "1.2"]) == 2
    assert "--power 1.2: must be between 0 and 1" in capsys.readouterr().err


@pytest.mark.integration  # end to end, 20-40 s: the fast tier stays under 10 minutes on 2 cores
def test_the_plans_sweeps_decided_at_once_decide_as_one_sweep_at_a_time():
    # share_reached chooses on every sweep of one world in one call: the same decisions, from the same draws, as
    # simulating the sweeps one by one (12 RAG configs, so each sweep is cross-fitted over its splits)
    from experiments.report.verdict.decision import MIN_DOCUMENTS
    from experiments.simulate.scores import candidates, simulated_scores

    world = planted(candidates(simulated_scores(np.random.default_rng(3), 14, 3, 0.0,
                                                truths=[-6.0] * 3 + [8.0] * 9), 2.0), 3.0)
    shares = []
    for n in (7, 9, 16, 40, 90):
        one_by_one, rng = 0, np.random.default_rng(n)
        for _ in range(16):
            est, naive = simulated_estimate(world, rng.integers(0, 14, n), rng)
            one_by_one += not (est is None or naive or n < MIN_DOCUMENTS) and decide(est, 2.0, True).kind == "rag"
        shares.append(share_reached(world, n, "rag", 2.0, True, 0.05, 16, np.random.default_rng(n),
                                    uncertain_variance=False))
        assert shares[-1] == one_by_one / 16
    assert shares[0] == 0 and any(0 < x < 1 for x in shares) and shares == sorted(shares)


def test_plan_check_script_prints_json_figures():
    import subprocess
    import sys

    from tests.conftest import ROOT

    args = ["--sweeps", "3", "--pilots", "2", "--sweeps-per-pilot", "2", "--resamples", "200", "--big-pilot", "60",
            "--rule-pilots", "1", "--rule-sweeps", "1", "--pilot-docs", "12", "--max-documents", "40", "--plan-sweeps",
            "20"]
    res = subprocess.run([sys.executable, "perf/plan_check.py", *args], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    figures = json.loads(res.stdout.strip().splitlines()[-1])
    assert figures["A_rag_better_8"]["planned_documents"] > 10 and figures["A_rag_better_8"]["sweeps"] == 3
    assert figures["C_observed_difference"]["planned_median"] is not None and figures["seconds"] > 0
    assert 0 <= figures["D_selection_matters"]["decided_share"] <= 1 and figures["E_pilot_8_truth_25"]["sweeps"] == 1


def test_plan_check_script_measures_single_plans_against_their_promise():
    # check F at a smoke size: per pilot the plan's size (4 of 5 plausible worlds), the share of worlds that reach
    # the power there, and what sweeps of that size from the true model deliver
    import subprocess
    import sys

    from tests.conftest import ROOT

    args = ["--only-assurance", "--assurance-pilots", "2", "--assurance-sweeps", "4", "--assurance-cases", "one_config",
            "--plan-sweeps", "40", "--max-documents", "60", "--resamples", "200"]
    res = subprocess.run([sys.executable, "perf/plan_check.py", *args], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    assert "delivered at N" in res.stdout and "lowest single plan delivered" in res.stdout
    figures = json.loads(res.stdout.strip().splitlines()[-1])
    rows = figures["F_assurance"]["one_config"]
    assert [r["pilot"] for r in rows] == [0, 1] and figures["F_lowest_delivered"] == min(r["delivered"] for r in rows)
    for r in rows:
        assert 6 <= r["documents"] <= 60 and r["sweeps"] == 4 and 0 <= r["delivered"] <= 1
        assert r["beyond_search"] or r["worlds_reaching_power"] >= 0.8
    below = figures["F_below_floor"]["one_config"]
    assert below["at_N"] == sum(r["delivered"] < 0.65 for r in rows) / 2
    # normal theory, computed here by drawing 8-document pilots' variances: a plan sized for 80% power at the
    # 80th (90th) percentile of what the pilot's variance allows, its claim at one-sided 1.5%, delivers below 65%
    rng = np.random.default_rng(0)
    z, z80 = 2.1701, 0.8416
    chi2_7_at = {0.8: 3.8223, 0.9: 2.8331}  # chi-square(7) quantiles at 0.2 and 0.1
    s2 = rng.chisquare(7, 400_000) / 7  # the pilot's variance over the true one
    for key, assurance in (("normal_theory_at_N", 0.8), ("normal_theory_at_M", 0.9)):
        planned = s2 * 7 / chi2_7_at[assurance]  # the variance the plan sizes for, over the true one
        delivered = 0.5 * (1 + np.vectorize(math.erf)(((z + z80) * np.sqrt(planned) - z) / math.sqrt(2)))
        assert below[key] == pytest.approx(np.mean(delivered < 0.65), abs=0.002)
    assert 0.085 < below["normal_theory_at_N"] < 0.1 and 0.035 < below["normal_theory_at_M"] < 0.05


def test_a_large_difference_over_few_documents_still_needs_an_honest_split(tmp_path, capsys):
    # 6 documents, 4 RAG configs, RAG truly far better: the variance alone would say "6 documents suffice", but
    # choosing among the configs needs MIN_GROUPS documents in each half, so the plan asks for 2 x MIN_GROUPS
    from experiments.report.halves import MIN_GROUPS

    known_truth_sweep(tmp_path / "sweep", 0.4, n_rag_configs=4, n_docs=6, questions_per_doc=5, seed=5)
    assert plan_main([str(tmp_path / "sweep"), "--observed"]) == 0
    row = json.loads(capsys.readouterr().out.strip().splitlines()[0])
    assert row["decision"] == "inconclusive" and row["selection_floor"] == 2 * MIN_GROUPS
    # the simulated rule never plans below the selection's floor (a 6-document pilot's variance is uncertain,
    # so the plan may ask for more)
    assert row["documents_needed"] >= 2 * MIN_GROUPS and row["more_documents"] == row["documents_needed"] - 6
    if row["documents_needed"] == 2 * MIN_GROUPS:
        assert f"needs {MIN_GROUPS} documents in each half of the selection split" in row["sentence"]
    assert row["column"] == f"~{row['documents_needed']} docs (+{row['more_documents']})"
