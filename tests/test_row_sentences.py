"""Every sentence a verdict row prints is made from that row's own facts (issue 54): its Δ, its interval, its
documents, its cost ratio and what prices it. The walk builds rows of each kind (decided either way, no decision at
the floor and ceiling, routed, inconclusive for every reason, one document, few documents, configs chosen on the
samples reported on, no shared samples, with and without a price, with and without token counts) through the
report's own rule (`row_decision`, `decide`) and checks the recommendation, the first screen's cells and notes and
the verdict table's Δ against the row."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from eval.metrics.confidence import Estimate
from experiments.report.page.sections.first_screen import answer_notes
from experiments.report.page.verdict_cells import delta_cell, no_interval_reason
from experiments.report.runs import find_runs
from experiments.report.settings import load_settings
from experiments.report.verdict.compare import row_decision
from experiments.report.verdict.decision import (
    INCONCLUSIVE,
    LONGCTX,
    MIN_DOCUMENTS,
    NO_DECISION,
    RAG,
    ROUTE,
    Decision,
    OwnDecision,
    decide,
)
from experiments.report.verdict.family import Family
from experiments.report.verdict.row import Comparison, on_scale
from experiments.report.verdict.sentence import recommend
from experiments.report.verdict_row import VerdictRow
from experiments.simulate.sweeps import write_run

BASIS = "a per-token price without prompt caching"
OPENINGS = {RAG: "Use RAG (", LONGCTX: "Use long context (", NO_DECISION: "No decision: ",
            ROUTE: "Route each question", INCONCLUSIVE: "Inconclusive: "}


@pytest.fixture(scope="module")
def settings():
    return load_settings(tolerance=2.0)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A long-context and a RAG run (their labels and latencies are what the sentences read of them)."""
    root = tmp_path_factory.mktemp("sentence_runs")
    base = {"benchmark": "b", "task": "t", "language": "en", "length_level": "2k", "status": "ok",
            "completion_tokens": 5}
    recs = [{**base, "id": f"q{i}", "group": f"d{i}", "score": 1.0} for i in range(4)]
    write_run(root / "lc", {"arm": "longctx", "benchmark": "b", "generator": "sim"},
              [{**r, "arm": "longctx", "prompt_tokens": 2000, "latency_s": 2.0} for r in recs])
    write_run(root / "rag", {"arm": "rag", "benchmark": "b", "generator": "sim", "retriever": "bm25",
                             "chunk_size": 64, "top_k": 2, "order": "document"},
              [{**r, "arm": "rag", "prompt_tokens": 200, "latency_s": 1.0} for r in recs])
    found = {r.spec.role: r for r in find_runs([root])}
    return found["longctx"], found["rag"]


def _row(runs, settings, *, diff: float | None, se: float = 0.0, docs: int = 12, naive: bool = False,
         shares=(0.6, 0.5), token_ratio: float | None = 0.1, cost_ratio: float | None = 0.2,
         cross_fitted: bool = False) -> VerdictRow:
    """A row whose numbers are `diff` (points) with standard error `se` over `docs` documents, decided by the
    report's own rule."""
    estimate = Estimate(diff, se, docs - 1, docs, cross_fitted) if diff is not None and docs >= 2 else None
    c = Comparison("b", "all", lc=runs[0], rag=runs[1], lc_score=50.0, n_groups=docs, n_shared=3 * docs,
                   token_ratio=token_ratio, cost_ratio=cost_ratio, cost_basis=BASIS if cost_ratio else "",
                   correct_shares=shares, estimate=estimate, ci=estimate.interval(0.95) if estimate else None,
                   diff=diff, rag_score=None if diff is None else 50.0 + diff)
    decision, tested = row_decision(estimate, docs if diff is not None else 0, naive, c.rag_cheaper, shares, settings)
    return VerdictRow(c, OwnDecision(decision, tested), Family(0, decision))


def _say(row: VerdictRow, settings) -> str:
    return recommend(row.comparison, row.family, settings)


KINDS = {  # name -> the row's facts
    "rag better": dict(diff=20.0, se=2.0),
    "rag no worse and cheaper": dict(diff=0.5, se=0.5),
    "rag no worse, cheaper by tokens alone (no price)": dict(diff=0.5, se=0.5, cost_ratio=None),
    "long context better": dict(diff=-20.0, se=2.0),
    "long context no worse and cheaper": dict(diff=-0.5, se=0.5, token_ratio=3.0, cost_ratio=3.0),
    "floor": dict(diff=1.0, se=1.0, shares=(0.02, 0.01)),
    "ceiling": dict(diff=0.0, se=1.0, shares=(0.99, 0.98)),
    "interval allows both": dict(diff=3.0, se=6.0),
    "interval allows both, no price": dict(diff=3.0, se=6.0, cost_ratio=None),
    "interval allows both, no cost nor tokens": dict(diff=3.0, se=6.0, cost_ratio=None, token_ratio=None),
    "cheaper arm's stricter level": dict(diff=1.3, se=1.45, cross_fitted=True),
    "no variation": dict(diff=-2.0, se=0.0),  # on the boundary: neither claim holds
    "one document": dict(diff=33.3, docs=1),
    "one document, no price": dict(diff=66.7, docs=1, cost_ratio=None),
    "few documents, the interval would decide": dict(diff=40.0, se=2.0, docs=4),
    "few documents, undecided anyway": dict(diff=3.0, se=6.0, docs=3),
    "chosen on the samples reported on": dict(diff=20.0, se=2.0, docs=7, naive=True),
    "no shared samples": dict(diff=None, docs=0),
}


def _check_sentence(name: str, row: VerdictRow, text: str, settings) -> None:
    decision = row.decision
    assert text.startswith(OPENINGS[decision.kind]), (name, text)
    if row.diff is None:
        assert "no difference measured" in text and "no shared samples" in text, (name, text)
    else:
        assert f"{row.diff:+.1f} points" in text and "no shared samples" not in text, (name, text)
    one_document = row.diff is not None and row.n_groups == 1
    assert ("one document:" in text) == one_document, (name, text)
    if one_document:
        assert f"one document: nothing is decided below {MIN_DOCUMENTS} documents" in text, (name, text)
        assert "one document: no interval" in text and "CI" not in text, (name, text)
    for found in re.findall(r"over (\d+) documents", text):
        assert int(found) == row.n_groups, (name, text)
    if row.ci is not None and decision.kind in (RAG, INCONCLUSIVE, ROUTE):
        lo, hi = on_scale(row.ci)
        assert f"[{lo:+.1f}, {hi:+.1f}]" in text, (name, text)
    # the cost: a ratio only with what prices it, and never "unknown" beside a ratio or a token count
    if "x the cost" in text:
        c = row.comparison
        assert f"{c.cost_ratio:.2f}x the cost per answer (priced by {c.cost_basis})" in text, (name, text)
    if row.comparison.cost_ratio is None:
        assert "x the cost" not in text, (name, text)
    if "unknown" in text:
        assert row.comparison.cost_ratio is None and row.comparison.token_ratio is None, (name, text)
    for points in re.findall(r"than (\d+(?:\.\d+)?) points", text):
        assert float(points) == settings.tolerance, (name, text)
    if row.n_groups < MIN_DOCUMENTS:
        assert decision.kind in (INCONCLUSIVE, NO_DECISION), (name, text)


@pytest.mark.parametrize("name", list(KINDS))
def test_each_kind_of_row_says_its_own_facts(name, runs, settings):
    row = _row(runs, settings, **KINDS[name])
    text = _say(row, settings)
    _check_sentence(name, row, text, settings)


def test_the_walk_reaches_every_decision_and_reason(runs, settings):
    rows = {name: _row(runs, settings, **facts) for name, facts in KINDS.items()}
    assert {r.decision.kind for r in rows.values()} >= {RAG, LONGCTX, NO_DECISION, INCONCLUSIVE}
    whys = {name: r.decision.why for name, r in rows.items()}
    assert "and cheaper" in whys["rag no worse and cheaper"]
    assert "and cheaper" in whys["long context no worse and cheaper"]
    assert "floor" in whys["floor"] and "ceiling" in whys["ceiling"]
    assert "stricter" in whys["cheaper arm's stricter level"] and "no variation" in whys["no variation"]
    assert whys["one document"].startswith("one document: nothing is decided below")
    assert whys["few documents, the interval would decide"].startswith("the interval would say rag, but 4 document")
    assert whys["few documents, undecided anyway"].startswith(f"3 documents are fewer than the {MIN_DOCUMENTS}")
    assert whys["chosen on the samples reported on"].startswith("the interval would say rag, but the configs")
    assert whys["no shared samples"] == "no shared samples to compare on"
    assert "unknown" not in whys["interval allows both, no price"]  # tokens say which arm is cheaper
    assert "neither arm is known to be the cheaper one" in whys["interval allows both, no cost nor tokens"]


def test_a_routed_row_states_the_arms_decision_and_its_own_numbers(runs, settings):
    row = _row(runs, settings, diff=1.0, se=3.0)
    row = replace(row, family=replace(row.family, decision=Decision(ROUTE, "a learned router beats the better arm"),
                                      arm_decision=row.decision))
    text = _say(row, settings)
    _check_sentence("route", row, text, settings)
    assert f"the decision is {INCONCLUSIVE}" in text


def test_rows_without_an_arm_name_the_one_they_have(runs, settings):
    none = Family(0, None)
    assert recommend(Comparison("b", "all"), none, settings).startswith("No long-context or RAG run")
    only_rag = Comparison("b", "all", rag=runs[1], rag_score=61.25)
    assert recommend(only_rag, none, settings) == (f"No long-context run to compare with; the best RAG config is "
                                                   f"{runs[1].label} (61.2).")
    only_lc = Comparison("b", "all", lc=runs[0], lc_score=40.0)
    assert recommend(only_lc, none, settings).endswith(f"long context ({runs[0].label}) scores 40.0.")


@pytest.mark.parametrize("rag_cheaper", [True, False, None])
def test_decide_names_an_unknown_cost_only_when_it_is_unknown(rag_cheaper):
    """Every message of `decide` over a grid of estimates: "neither arm is known to be the cheaper one" only where
    no arm is (an unknown cost or a cost tie),
    and the tolerance it names is the one it was given."""
    seen = set()
    for value in (-30.0, -2.5, -1.0, 0.0, 1.0, 1.5, 2.5, 30.0):
        for se in (0.0, 0.4, 1.5, 8.0):
            for cross_fitted in (False, True):
                why = decide(Estimate(value, se, 20, 21, cross_fitted), 2.0, rag_cheaper).why
                seen.add(why.split(" (")[0][:40])
                unknown = "neither arm is known to be the cheaper one" in why
                assert unknown == (rag_cheaper is None and why.startswith("the interval allows")), why
                assert all(float(p) == 2.0 for p in re.findall(r"than (\d+(?:\.\d+)?) points", why)), why
    assert len(seen) >= 4  # the grid reaches several messages, not one repeated


def test_the_page_states_a_one_document_row_by_its_own_numbers(runs, settings):
    row = _row(runs, settings, diff=33.3, docs=1)
    row = replace(row, comparison=replace(row.comparison, n_shared=3))
    reason = no_interval_reason(row)
    assert reason.startswith("Δ is +33.3 over one document (3 questions)") and delta_cell(row) == "-"
    assert answer_notes([row]) == [f"b · all, no Δ interval: {reason}."]
    decided = _row(runs, settings, diff=20.0, se=2.0)
    assert no_interval_reason(decided) is None
    lo, hi = on_scale(decided.ci)
    assert delta_cell(decided) == f"+20.0 [{lo:+.1f}, {hi:+.1f}] untested"
    withheld = _row(runs, settings, diff=40.0, se=2.0, docs=4)
    assert answer_notes([withheld]) == [f"b · all: {withheld.decision.why}."]
    undecided = replace(withheld, family=_row(runs, settings, diff=3.0, se=6.0, docs=3).family)
    assert answer_notes([undecided]) == []  # not a withheld decision: nothing to explain beside its Δ
