"""Claims under lopsided differences (one stricter level for every claim), one level for every word, no decision
from arms that answer alike, and routers tested beside the arm decisions with one family-wise error."""

from __future__ import annotations

import numpy as np
import pytest

from eval.metrics.confidence import Estimate, cluster_t
from experiments.report.settings import load_settings
from experiments.report.verdict.decision import ALPHA, CLAIM_SHARE, INCONCLUSIVE, LONGCTX, RAG, OwnDecision, decide
from experiments.report.verdict.family import ROUTER_SHARE, control_family, holm, two_families
from experiments.report.verdict.row import Comparison
from experiments.simulate.scores import SCENARIOS, rag_shift, scenario_scores


@pytest.fixture(scope="module")
def settings():
    return load_settings(tolerance=2.0, resamples=400)


def _docs(n_docs: int, per_doc: int = 3) -> list[str]:
    return [f"d{d}" for d in range(n_docs) for _ in range(per_doc)]


def test_arms_that_answer_alike_decide_nothing_from_zero_variance():
    """Identical answers on every question gave [0, 0] and `rag`. Now the interval's ends are the exact bounds from
    the count of discordant answers (none in 6 documents: 1 - 0.025^(1/6) = 45.9 points either way at 95%), and one
    flipped answer reads alike; where the arms disagree in many documents the t interval stands alone."""
    same = cluster_t([0.0] * 18, _docs(6), unit=100.0)
    flipped = cluster_t([100.0] + [0.0] * 17, _docs(6), unit=100.0)
    assert same.interval(0.95) == pytest.approx((-100 * (1 - 0.025 ** (1 / 6)), 100 * (1 - 0.025 ** (1 / 6))))
    assert flipped.interval(0.95)[0] < -2.0 < 2.0 < flipped.interval(0.95)[1]
    d = decide(same, 2.0, rag_cheaper=True)
    assert d.kind == INCONCLUSIVE and "exact bound" in d.why and "no document" in d.why
    rng = np.random.default_rng(0)
    noisy = [100.0 * (rng.random() < 0.5) - 100.0 * (rng.random() < 0.5) for _ in range(60)]
    assert cluster_t(noisy, _docs(20), unit=100.0) == cluster_t(noisy, _docs(20))


def test_every_claim_reads_the_stricter_interval_whichever_arm_is_cheaper():
    """`rag` and `longctx` both need the 97% interval (one-sided 1.5%), whether the arm they favour is cheaper or not:
    skew comes from the data, not the price. A 95% interval that clears the boundary alone is inconclusive and says
    so."""
    est = Estimate(2.0, 2.0, 1e6, 40)  # 95%: [-1.92, +5.92]; 97%: [-2.34, +6.34]
    assert est.interval(0.95)[0] > -2.0 > est.interval(1 - ALPHA * CLAIM_SHARE)[0]
    d = decide(est, 2.0, rag_cheaper=True)
    assert d.kind == INCONCLUSIVE and "stricter 97% interval" in d.why
    dearer = decide(Estimate(4.0, 2.0, 1e6, 40), 2.0, rag_cheaper=False)  # 95% above 0, 97% not
    assert dearer.kind == INCONCLUSIVE and "stricter 97% interval" in dearer.why
    lc = decide(Estimate(-6.0, 2.0, 1e6, 40), 2.0, rag_cheaper=True)  # 95% below -2, 97% not
    assert lc.kind == INCONCLUSIVE and "stricter 97% interval" in lc.why
    assert decide(Estimate(-7.0, 2.0, 1e6, 40), 2.0, rag_cheaper=True).why == \
        "long context is better by more than 2 points (the whole 97% interval)"
    clear = decide(Estimate(3.0, 1.0, 1e6, 40), 2.0, rag_cheaper=True)
    assert clear.kind == RAG and clear.why == "RAG is better (the whole 97% interval is above 0)"


def _tested(name: str, est: Estimate, token_ratio: float, settings) -> tuple[Comparison, OwnDecision]:
    """A tested row's comparison (its estimate, 95% interval and prompt-token ratio) and its own decision."""
    c = Comparison(name, "all", ci=est.interval(), token_ratio=token_ratio, estimate=est)
    return c, OwnDecision(decide(est, settings.tolerance, c.rag_cheaper), tested=True)


def test_a_cross_fitted_estimate_tests_every_claim_at_one_sided_one_percent(settings):
    """With several configs the cross-fitted error leans towards the chosen arm's side (false `rag` up to 3.5% at
    one-sided 1.5%): its claims read the 98% interval, the same numbers from one config the 97% one. Both the row's
    own decision and the family's restatement read the same level, and the cross-fit marks its estimate."""
    from experiments.report.verdict.decision import STRICT_SHARE, claim_levels, claim_p_values

    one = Estimate(2.6, 2.0, 1e6, 40)  # 97%: [-1.74, +6.94]; 98%: [-2.05, +7.25]
    crossed = Estimate(2.6, 2.0, 1e6, 40, cross_fitted=True)
    assert one.interval(1 - ALPHA * CLAIM_SHARE)[0] > -2.0 > crossed.interval(1 - ALPHA * STRICT_SHARE)[0]
    assert decide(one, 2.0, rag_cheaper=True).kind == RAG
    d = decide(crossed, 2.0, rag_cheaper=True)
    assert d.kind == INCONCLUSIVE and "stricter 98% interval" in d.why
    assert claim_levels(True, strict=True)[RAG] == pytest.approx(0.02)
    assert claim_levels(False, strict=True)[LONGCTX] == pytest.approx(0.02)
    assert claim_p_values(crossed, 2.0, True)[RAG] > ALPHA > claim_p_values(one, 2.0, True)[RAG]
    # a claim that an arm is better reads the 98% interval too: 5.0 - 2.33 x 2.0 > 0
    assert decide(Estimate(5.0, 2.0, 1e6, 40, cross_fitted=True), 2.0, rag_cheaper=False).kind == RAG
    assert decide(Estimate(4.5, 2.0, 1e6, 40, cross_fitted=True), 2.0, rag_cheaper=False).kind == INCONCLUSIVE
    # through the family: a kept cross-fitted `rag` is shown at 98%
    clear = Estimate(4.0, 2.0, 1e6, 40, cross_fitted=True)
    r = _tested("b", clear, 0.5, settings)
    assert r[1].decision.kind == RAG
    (family,), _ = control_family([r], settings)
    assert family.confidence == pytest.approx(0.98) and family.ci[0] > -2.0


def test_the_repeated_cross_fit_marks_its_estimate():
    from experiments.report.verdict.crossfit import repeated_crossfit
    from experiments.simulate.scores import candidates

    sweep = scenario_scores(np.random.default_rng(3), "own", 12, 0.0, 4)
    rep = repeated_crossfit(candidates(sweep, 2.0), 4, 200, 0)
    assert rep is not None and rep.estimate.cross_fitted

def test_superiority_words_are_judged_on_the_family_adjusted_interval(settings):
    """A kept `rag` whose 97% interval is above 0 but whose family-adjusted interval crosses 0 says "no more than
    2 points worse", never "better"."""
    def row(name, center, sd):
        return _tested(name, Estimate(center, sd, 1e6, 40), 0.5, settings)  # RAG cheaper

    rows = [row("edge", 5.0, 2.2), row("far", 20.0, 2.0), row("open", 0.0, 8.0)]
    assert rows[0][1].decision.why.startswith("RAG is better")  # alone: 97% lower end about +0.2
    families, _ = control_family(rows, settings)
    edge = families[0]
    assert edge.decision.kind == RAG and edge.p_holm < ALPHA
    assert -2.0 < edge.ci[0] < 0 and "no more than 2 points worse" in edge.decision.why
    assert families[1].decision.why.startswith("RAG is better") and families[1].ci[0] > 0
    assert rows[0][1].decision.why.startswith("RAG is better")  # the row's own decision stage is left as it was


def test_two_families_reduce_to_holm_where_one_is_empty():
    p = [0.01, 0.04, 0.2]
    assert two_families(p, [])[0] == pytest.approx(holm(p))
    assert two_families([], p)[1] == pytest.approx(holm(p))


def test_a_router_is_tested_when_the_arms_tie_and_gets_the_whole_level_once_they_stand():
    arms, routers = two_families([0.5], [0.004])
    assert arms[0] >= 0.5 and routers[0] == pytest.approx(0.004 / ROUTER_SHARE) and routers[0] < ALPHA
    arms, routers = two_families([0.001], [0.03])  # the arm decision stands: the router gets 5%
    assert arms[0] < ALPHA and routers[0] == pytest.approx(0.03)
    arms, routers = two_families([0.048], [0.9])  # an open router costs the arm decision its last half point
    assert arms[0] == pytest.approx(0.048 / (1 - ROUTER_SHARE)) and arms[0] > ALPHA


@pytest.mark.parametrize("rho", [0.0, 0.8])
def test_two_families_keep_the_family_wise_error_on_true_nulls(rho):
    """3 arm claims and 2 router claims, all true nulls (uniform p-values, independent or correlated), and the
    same with the arm claims false (tiny p-values) so that their level passes to the routers."""
    from scipy.stats import norm

    rng = np.random.default_rng(41)
    n = 8_000
    z = np.sqrt(rho) * rng.normal(size=(n, 1)) + np.sqrt(1 - rho) * rng.normal(size=(n, 5))
    p = 2 * norm.sf(np.abs(z))
    all_null = sum(min(a + r) < ALPHA for a, r in (two_families(list(x[:3]), list(x[3:])) for x in p)) / n
    arms_false = sum(min(two_families([1e-6] * 3, list(x[3:]))[1]) < ALPHA for x in p) / n
    assert all_null <= 0.055 and arms_false <= 0.055


@pytest.mark.parametrize("scenario", [s for s in SCENARIOS if s != "own"])
def test_each_scenario_plants_the_truth_it_states(scenario):
    """The arms' mean accuracies over questions differ by the truth (rag_shift, or the misses of near-identical
    arms), and each scenario has the shape it names: "skewed" lopsided on RAG's losing side, "lc_fails" on long
    context's, "uneven" with heavy-tailed questions per document."""
    rng = np.random.default_rng(1)
    sweep = scenario_scores(rng, scenario, 4000, -5.0)
    diff = [sweep.rags[0][i] - sweep.lc[i] for i in sweep.lc]
    assert 100 * np.mean(diff) == pytest.approx(-5.0, abs=1.2)
    per_doc = {}
    for i, d in zip(sweep.lc, diff, strict=True):
        per_doc.setdefault(sweep.groups[i], []).append(d)
    sizes = np.array([len(v) for v in per_doc.values()])
    if scenario.startswith("uneven"):
        assert np.median(sizes) == 3 and 5 < sizes.mean() < 7
        assert np.sort(sizes)[::-1][:200].sum() / sizes.sum() > 0.25  # 5% of documents, about 30% of questions
    else:
        assert set(sizes) == (set(range(2, 11)) if scenario == "unequal" else {3})
    means = np.array([np.mean(v) for v in per_doc.values()])
    third = np.mean((means - means.mean()) ** 3)
    if scenario in ("skewed", "rag_dearer_skewed"):
        assert rag_shift(SCENARIOS[scenario], -5.0) > 0 and third < 0  # better where retrieval works
    if scenario == "lc_fails":
        assert third > 0  # the long tail is on long context's losing side
    if scenario == "near_identical":
        assert min(diff) == -1.0 and max(diff) == 0.0  # RAG answers as long context does, but for its misses


@pytest.mark.parametrize("family", ["own", "shared"])
def test_the_router_family_setting_picks_the_procedure(settings, family):
    """"own": Holm within each family at 5%; "shared": one 5% for both, so an arm decision at p 0.046 (on the common
    scale) falls while the router's claim is open, and says why."""
    from dataclasses import replace

    est = Estimate(4.4, 2.0, 1e6, 40)  # RAG dearer: its claim "better", p 0.028 at level 0.03: 0.046 at 0.05
    (row,), (router,) = control_family([_tested("b", est, 2.0, settings)], replace(settings, router_family=family),
                                       [0.03])
    if family == "own":
        assert row.decision.kind == RAG and row.p_holm == pytest.approx(row.p_decision)
        assert router == pytest.approx(0.03)
    else:
        assert row.decision.kind == INCONCLUSIVE and "2 tests (arm decisions and router claims)" in row.decision.why
        assert row.p_holm == pytest.approx(row.p_decision / (1 - ROUTER_SHARE))
        # the router stands from the level at which the arm decision stands and passes it its 5%
        assert router == pytest.approx(min(0.03 / ROUTER_SHARE, row.p_holm))
    assert row.ci[0] > 0 if family == "own" else row.ci[0] < 0  # the interval shown agrees


def test_an_unknown_router_family_is_refused_by_name():
    with pytest.raises(ValueError, match="router_family='both'"):
        load_settings(router_family="both")


def test_gap_closed_comes_only_with_an_interval_that_holds_its_ratio():
    """(router - best) / (benchmark - best) from each difference's 97.5% interval; none when the benchmark's
    gain may be 0."""
    from experiments.report.router.fit import gap_closed_interval

    router, bench = Estimate(6.0, 1.0, 1e6, 40), Estimate(10.0, 1.0, 1e6, 40)
    lo, hi = gap_closed_interval(router, bench)
    r_lo, r_hi = router.interval(0.975)
    b_lo, b_hi = bench.interval(0.975)
    assert (lo, hi) == pytest.approx((r_lo / b_hi, r_hi / b_lo)) and lo < 0.6 < hi
    assert gap_closed_interval(router, Estimate(1.0, 1.0, 1e6, 40)) is None
    neg_lo, _ = gap_closed_interval(Estimate(0.5, 1.0, 1e6, 40), bench)
    assert neg_lo == pytest.approx(Estimate(0.5, 1.0, 1e6, 40).interval(0.975)[0] / b_lo)  # a loss: the nearer end


def test_an_untested_interval_is_shown_within_the_scores_range():
    """Two documents give a t with one degree of freedom: the demo's 6k row showed [-292.7, +342.7], differences
    no pair of 0..1 scores can make. The first screen, the forest plot and the sentence cut it to [-100, +100]."""
    from experiments.report.page.verdict_cells import shown_interval
    from experiments.report.verdict.family import Family
    from experiments.report.verdict.sentence import _interval_words
    from experiments.report.verdict_row import VerdictRow

    untested = Family(0, None)
    wide = Comparison("synthetic", "6k", diff=25.0, ci=(-292.7, 342.7), n_groups=2)
    assert shown_interval(VerdictRow(wide, OwnDecision(), untested)) == (-100.0, 100.0)
    assert _interval_words(wide, untested) == "nominal 95% CI [-100.0, +100.0] over 2 documents, untested"
    inside = Comparison("synthetic", "1k", diff=5.0, ci=(-3.0, 13.0), n_groups=16)
    assert shown_interval(VerdictRow(inside, OwnDecision(), untested)) == (-3.0, 13.0)
