"""The verdict on the shapes a team's own data takes: documents with unequal numbers of questions (CR2 with
Bell-McCaffrey degrees of freedom), arms that rarely disagree (the exact bound from the count of discordant
answers), small pilots (the 9-of-10 plan), and the words that say what holds."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import sqrtm

from eval.metrics.cluster_variance import anova_icc, bell_mccaffrey_df, clustered_mean, largest_share
from eval.metrics.confidence import Estimate, cluster_t, split_degrees_of_freedom
from eval.metrics.discordance import RARE_DOCUMENTS, rare_sides, upper_proportion


def _by_hand(sizes: list[int], rho: float, y: np.ndarray) -> tuple[float, float]:
    """(CR2 standard error, Bell-McCaffrey degrees of freedom) of the mean of `y` from the textbook matrices: the
    hat matrix H = 1 1' / n, A_g = (I - H_gg)^(-1/2), V = sum_g (1' A_g e_g / n)^2, and B = Q' Omega Q."""
    n = sum(sizes)
    cluster = np.repeat(np.arange(len(sizes)), sizes)
    hat = np.ones((n, n)) / n
    residual_maker = np.eye(n) - hat
    omega = (1 - rho) * np.eye(n) + rho * (cluster[:, None] == cluster[None, :])
    columns, var = [], 0.0
    for g in range(len(sizes)):
        idx = np.where(cluster == g)[0]
        a = np.real(sqrtm(np.linalg.inv(np.eye(idx.size) - hat[np.ix_(idx, idx)])))
        q = np.ones(idx.size) @ a @ residual_maker[idx, :] / n
        columns.append(q)
        var += float(q @ y) ** 2
    q = np.array(columns).T
    b = q.T @ omega @ q
    return float(np.sqrt(var)), float(np.trace(b) ** 2 / np.trace(b @ b))


@pytest.mark.parametrize("sizes", [[3] * 8, [1, 2, 3, 30, 2, 5, 4, 3], [10, 1, 1, 1, 1, 1], [2, 2, 2, 50]])
@pytest.mark.parametrize("rho", [0.0, 0.4])
def test_cr2_and_bell_mccaffrey_match_the_matrices_they_stand_for(sizes, rho):
    y = np.random.default_rng(len(sizes)).normal(size=sum(sizes))
    cluster = np.repeat(np.arange(len(sizes)), sizes)
    se, df = _by_hand(sizes, rho, y)
    m = clustered_mean(y, cluster, rho=rho)
    assert m.se == pytest.approx(se, rel=1e-9) and m.df == pytest.approx(df, rel=1e-9)
    counts = np.array(sizes, dtype=float)
    assert bell_mccaffrey_df(counts, counts, rho) == pytest.approx(df, rel=1e-9)


def test_with_documents_alike_cr2_is_cr1_on_g_minus_1_degrees_of_freedom():
    """Equal documents: the old interval exactly (CR1, t with G - 1), whatever the working correlation."""
    rng = np.random.default_rng(3)
    y = rng.normal(size=30)
    cluster = np.repeat(np.arange(10), 3)
    for rho in (0.0, 0.5, None):
        m = clustered_mean(y, cluster, rho=rho)
        assert m.se == pytest.approx(m.se_cr1) and m.df == pytest.approx(9.0)
    # one document with most of the questions: wider than CR1, on far fewer degrees of freedom
    uneven = np.repeat(np.arange(10), [21] + [1] * 9)
    m = clustered_mean(rng.normal(size=30), uneven)
    assert m.se > m.se_cr1 and m.df < 4


def test_the_mean_over_documents_weighs_each_document_once():
    """weights 1 / n_g: the mean of the documents' means, and its interval the t over those means."""
    values = [1.0, 1.0, 1.0, 1.0, 0.0, 0.5]
    groups = ["a", "a", "a", "a", "b", "c"]
    est = cluster_t(values, groups, weights=[0.25] * 4 + [1.0, 1.0])
    means = np.array([1.0, 0.0, 0.5])
    assert est.value == pytest.approx(means.mean()) and est.df == pytest.approx(2.0)
    assert est.se == pytest.approx(means.std(ddof=1) / np.sqrt(3))


def test_the_icc_and_the_largest_share():
    cluster = np.repeat(np.arange(4), 5)
    assert anova_icc(np.repeat([0.0, 1.0, 0.0, 1.0], 5), cluster) == pytest.approx(1.0)
    assert anova_icc(np.tile([0.0, 1.0, 0.0, 1.0, 0.5], 4), cluster) == 0.0
    assert largest_share(np.array([30, 2, 2, 2, 2, 2, 2, 2, 2, 2])) == pytest.approx(30 / 48)
    assert largest_share(np.array([3] * 20)) == pytest.approx(0.1)  # the largest two of twenty


def test_cluster_t_covers_when_a_few_documents_hold_most_questions():
    """Questions per document lognormal (median 3, mean 6; scenario `uneven`), 12 documents, 400 sweeps: the CR2 t
    interval holds the truth in about 95% of sweeps; CR1 on G - 1 degrees of freedom holds it less often."""
    from scipy.stats import t

    from experiments.simulate.scores import scenario_scores

    rng = np.random.default_rng(49)
    cr2 = cr1 = 0
    sweeps = 400
    for _ in range(sweeps):
        sweep = scenario_scores(rng, "uneven", 12, -2.0)
        ids = sorted(sweep.lc)
        d = np.array([100 * (sweep.rags[0][i] - sweep.lc[i]) for i in ids])
        est = cluster_t(d, [sweep.groups[i] for i in ids])
        lo, hi = est.interval(0.95)
        cr2 += lo <= -2.0 <= hi
        m = clustered_mean(d, np.unique([sweep.groups[i] for i in ids], return_inverse=True)[1])
        cr1 += abs(est.value + 2.0) <= m.se_cr1 * t.ppf(0.975, m.n_groups - 1)
    assert 0.92 <= cr2 / sweeps <= 0.98
    assert cr1 < cr2


def test_the_exact_bound_from_discordant_documents():
    """No discordant answer in G documents: Clopper-Pearson's 1 - level^(1/G) in points, either way; a claim the t
    alone would make is held back, in words, and the interval's ends are the bounds."""
    cluster = np.repeat(np.arange(80), 3)
    low, high = rare_sides(np.zeros(240), cluster, 100.0)
    assert low.documents == 0 and high.documents == 0 and low.other is None
    assert low.bound(0.015) == pytest.approx(-100 * (1 - 0.015 ** (1 / 80)))  # -5.1 points
    assert high.bound(0.015) == pytest.approx(100 * (1 - 0.015 ** (1 / 80)))
    assert upper_proportion(0.0, 80, 0.015) == pytest.approx(1 - 0.015 ** (1 / 80))
    # the p-value reads the same bound: the claim "above -5.2" clears at one-sided 1.5%, "above -5.0" does not
    assert low.p_beyond(-5.2) < 0.03 < low.p_beyond(-5.0)
    # arms that disagree in many documents get no exact bound
    values = np.where(np.arange(240) % 4 == 0, 100.0, np.where(np.arange(240) % 4 == 1, -100.0, 0.0))
    assert rare_sides(values, cluster, 100.0) == (None, None)


def test_near_identical_arms_decide_nothing_from_a_sample_without_a_miss():
    """RAG answers as long context does but for retrieval's misses; a sample of 40 documents with no miss at all has
    Δ = 0 and, before, a floored standard error that let `rag` ("no more than 2 worse") through. Now the claim
    rests on the exact bound (-10.0 at 97% over 40 documents) and is inconclusive, saying so."""
    from experiments.report.verdict.decision import INCONCLUSIVE, decide

    docs = [f"d{d}" for d in range(40) for _ in range(3)]
    est = cluster_t([0.0] * 120, docs, unit=100.0)
    assert est.exact_bound_sides == ["above", "below"]
    d = decide(est, 2.0, rag_cheaper=True)
    assert d.kind == INCONCLUSIVE and "exact bound" in d.why and "-10.0 at the 97% level" in d.why
    # one miss in 40 documents: still too few to trust the t alone
    one = cluster_t([-100.0] + [0.0] * 119, docs, unit=100.0)
    assert one.rare_low is not None and one.rare_low.documents == 1
    assert decide(one, 2.0, rag_cheaper=True).kind == INCONCLUSIVE
    # many documents with differences both ways: the t alone, as before
    rng = np.random.default_rng(2)
    noisy = list(100.0 * rng.integers(-1, 2, 120))
    assert cluster_t(noisy, docs, unit=100.0).exact_bound_sides == []
    assert RARE_DOCUMENTS == 5


def test_the_interval_and_the_p_values_agree_with_an_exact_bound():
    docs = [f"d{d}" for d in range(30) for _ in range(2)]
    est = cluster_t([-100.0, 0.0] + [0.0] * 58, docs, unit=100.0)
    for conf in (0.9, 0.95, 0.97):
        lo, hi = est.interval(conf)
        assert est.p_above(lo - 0.01) < 1 - conf < est.p_above(lo + 0.01)
        assert est.p_below(hi + 0.01) < 1 - conf < est.p_below(hi - 0.01)


def test_the_cross_fits_degrees_of_freedom_are_g_minus_2_for_equal_documents():
    rng = np.random.default_rng(5)
    docs = [f"d{d}" for d in range(12) for _ in range(3)]
    assert split_degrees_of_freedom(rng.normal(size=36), docs) == pytest.approx(10.0)
    uneven = [f"d{d}" for d in range(12) for _ in range(25 if d == 0 else 1)]
    assert split_degrees_of_freedom(rng.normal(size=len(uneven)), uneven) < 5


def test_a_small_pilot_plans_the_nine_of_ten_size():
    from experiments.report.verdict.power import SMALL_PILOT, pilot_assurance
    from experiments.report.verdict.sizing import ASSURANCE, SURE

    assert pilot_assurance(8) == SURE and pilot_assurance(SMALL_PILOT - 1) == SURE
    assert pilot_assurance(SMALL_PILOT) == ASSURANCE


def test_the_estimate_is_frozen_and_strict_only_when_cross_fitted():
    est = Estimate(1.0, 1.0, 10, 12, largest_share=0.6)
    assert est.concentrated and not est.strict
    assert Estimate(1.0, 1.0, 10, 12, cross_fitted=True).strict


def _write_pair(root, per_doc: list[tuple[int, float, float]]):
    """One long-context and one RAG run: per document (questions, RAG score, long-context score) on every question."""
    from experiments import records as schema
    from experiments.simulate.sweeps import write_run

    def records(arm: str, pick: int, tokens: int) -> list[dict]:
        out = []
        for d, row in enumerate(per_doc):
            for q in range(row[0]):
                s = row[pick]
                out.append({"id": f"d{d}-q{q}", "benchmark": "sim", "task": "qa", "language": "en",
                            "length_level": "8k", "group": f"d{d}", "arm": arm, "answers": ["x"],
                            "status": schema.OK, "prediction": "x" if s else "y", "score": s, "scores": {"score": s},
                            "prompt_tokens": tokens, "completion_tokens": 8, "latency_s": 0.5, "cached": False})
        return out

    write_run(root / "lc", {"arm": "longctx", "benchmark": "sim", "generator": "sim", "truncation": "benchmark"},
              records("longctx", 2, 8000))
    write_run(root / "rag", {"arm": "rag", "benchmark": "sim", "generator": "sim", "retriever": "bm25",
                             "chunk_size": 128, "chunk_overlap": 0, "top_k": 2, "order": "document"},
              records("rag", 1, 400))


@pytest.mark.parametrize("weight", ["question", "document"])
def test_the_report_weighs_by_question_or_by_document(tmp_path, weight):
    """One document with 20 questions where RAG loses every one, nine with 2 where it wins every one: the mean over
    questions is -5.3 points, the mean over documents +80; `weight` picks which Δ the verdict is about, and the
    largest tenth's share (20 of 38 questions) shows on the first screen's notes."""
    from experiments.report.decision_order import verdicts
    from experiments.report.loading import load_runs
    from experiments.report.page.sections.first_screen import concentration_note
    from experiments.report.pricing import Pricing
    from experiments.report.settings import load_settings

    _write_pair(tmp_path, [(20, 0.0, 1.0)] + [(2, 1.0, 0.0)] * 9)
    runs = load_runs([tmp_path]).runs
    settings = load_settings(tolerance=2.0, resamples=400, weight=weight)
    row = verdicts(runs, Pricing(settings, runs), settings, routers=False)[0]
    expected = 100 * (-20 + 18) / 38 if weight == "question" else 100 * (-1 + 9) / 10
    assert row.diff == pytest.approx(expected)
    if weight == "question":
        assert row.comparison.estimate.largest_share == pytest.approx(20 / 38)
        assert "hold 53% of the questions" in concentration_note(row)
    else:
        assert not concentration_note(row)


def test_an_unknown_weight_is_refused_by_name():
    from experiments.report.settings import load_settings

    with pytest.raises(ValueError, match="weight='answers'"):
        load_settings(weight="answers")


def test_a_cross_fit_over_documents_pools_each_documents_mean_once():
    """weight: document through the cross-fit: each split's Δ is the mean over documents of the pooled differences'
    document means, and the estimate averages those."""
    from experiments.report.verdict.crossfit import Candidates, document_weights, repeated_crossfit
    from experiments.simulate.scores import scenario_scores

    sweep = scenario_scores(np.random.default_rng(7), "uneven", 16, 0.0, 3)
    docs = sorted(set(sweep.groups.values()))
    table = Candidates([sweep.lc], sweep.rags, [8000.0], sweep.rag_tokens, [(t, t) for t in sweep.rag_tokens],
                       sweep.groups, docs, 2.0, per_document=True)
    rep = repeated_crossfit(table, 4, 200, 0)
    per_split = [100 * np.average([s[2] - s[3] for s in f.samples], weights=document_weights([s[1] for s in f.samples]))
                 for f in rep.fits]
    assert [f.diff for f in rep.fits] == pytest.approx(per_split)
    assert rep.estimate.value == pytest.approx(np.mean(per_split))
    question = Candidates([sweep.lc], sweep.rags, [8000.0], sweep.rag_tokens, [(t, t) for t in sweep.rag_tokens],
                          sweep.groups, docs, 2.0)
    first = repeated_crossfit(question, 4, 200, 0).fits[0]
    assert first.diff == pytest.approx(100 * np.mean([s[2] - s[3] for s in first.samples]))
