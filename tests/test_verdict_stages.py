"""The verdict's stages hand on frozen results (issue 52): the comparison, the row's own decision, the family, the
router and the words are each a frozen dataclass, a verdict row is their composition, and nothing after a stage
changes its result."""

from __future__ import annotations

import json
from dataclasses import FrozenInstanceError, fields
from typing import get_type_hints

import pytest

from experiments.report.decision_order import verdicts
from experiments.report.loading import load_runs
from experiments.report.page.summary_file import SUMMARY_VERSION, load_summary
from experiments.report.pricing import Pricing
from experiments.report.router.evaluate import OtherRouter, RouterRow
from experiments.report.settings import load_settings
from experiments.report.verdict.decision import Decision, OwnDecision
from experiments.report.verdict.family import Family
from experiments.report.verdict.power import plan_row
from experiments.report.verdict.row import Comparison
from experiments.report.verdict.sentence import Words
from experiments.report.verdict_row import VerdictRow
from experiments.simulate.sweeps import known_truth_sweep


@pytest.fixture(scope="module")
def row(tmp_path_factory) -> VerdictRow:
    """The row of a sweep where RAG is clearly better over 12 documents: decided, tested, with a learned router."""
    root = tmp_path_factory.mktemp("stages")
    known_truth_sweep(root / "s", 0.3, n_rag_configs=1, n_docs=12, questions_per_doc=3, seed=4)
    runs = load_runs([root / "s"]).runs
    settings = load_settings(tolerance=2.0, resamples=400)
    (only,) = verdicts(runs, Pricing(settings, runs), settings)
    return only


def test_a_row_is_the_composition_of_its_stages_types():
    hints = get_type_hints(VerdictRow)
    assert {f.name: hints[f.name] for f in fields(VerdictRow)} == {
        "comparison": Comparison, "own": OwnDecision, "family": Family, "router": RouterRow | None, "words": Words}
    assert get_type_hints(plan_row)["row"] is Comparison  # the plan reads the comparison, named by its type
    assert get_type_hints(plan_row)["arm"] == Decision | None


def test_every_stage_of_a_real_row_is_made_and_typed(row):
    assert isinstance(row.comparison, Comparison) and isinstance(row.own, OwnDecision)
    assert isinstance(row.family, Family) and isinstance(row.router, RouterRow) and isinstance(row.words, Words)
    assert row.own.tested and row.own.decision.kind == "rag" and row.family.size == 1
    assert row.decision is row.family.decision and row.family.p_holm is not None and row.family.ci is not None
    assert row.router.p_route is not None and not row.router.gated  # the family tested its claim
    assert row.words.recommendation.startswith("Use RAG (") and row.benchmark == row.comparison.benchmark


@pytest.mark.parametrize("stage, name", [("comparison", "diff"), ("comparison", "rag"), ("own", "decision"),
                                         ("own", "tested"), ("family", "p_holm"), ("family", "decision"),
                                         ("router", "decided"), ("router", "p_route_holm"),
                                         ("words", "recommendation")])
def test_no_stage_result_can_be_changed_after_it_is_made(row, stage, name):
    result = getattr(row, stage)
    with pytest.raises(FrozenInstanceError):
        setattr(result, name, getattr(result, name))
    with pytest.raises(FrozenInstanceError):
        setattr(row, stage, result)


def test_the_routing_arms_beside_a_router_are_frozen_too():
    other = OtherRouter("self-route", "Self-Route", 60.0, 2.0, (0.0, 4.0), 30, 10, None, None, None, 0.5)
    with pytest.raises(FrozenInstanceError):
        other.score = 70.0  # type: ignore[misc]


def test_a_summary_of_the_flat_row_layout_is_refused_by_its_version(tmp_path):
    """summary.json version 2 kept a verdict row as one flat record: read by this version's page it would miss
    every stage, so it is refused, naming the file and the version found."""
    old = tmp_path / "summary.json"
    old.write_text(json.dumps({"version": 2, "vrows": [{"benchmark": "b", "level": "all", "diff": 1.0}]}))
    assert SUMMARY_VERSION == 3
    with pytest.raises(ValueError, match=r"summary.json: not a report summary of version 3 \(version: 2\)"):
        load_summary(old)
