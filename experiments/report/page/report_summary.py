"""The report's Summary (every row the page shows, computed before anything is rendered) and the Facts every
section's rows are computed from.

`summarize` (experiments.report.page.build) computes the Facts, then each section's rows
(experiments.report.page.sections), and builds the Summary from them by keyword; `present` renders the Summary
alone, section by section; summary.json holds it (experiments.report.page.summary_file)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from experiments.report.data_mix import DataSet
from experiments.report.diagnostics import Diagnostics
from experiments.report.latency import LatencyRow
from experiments.report.loading import LoadedRuns
from experiments.report.losses import Losses
from experiments.report.other_arms import OtherArmsRow
from experiments.report.overlap import SplitRow
from experiments.report.overview import Overview
from experiments.report.page.drawing import Figures
from experiments.report.page.summary_file import NOT_IN_JSON
from experiments.report.pairwise import PairwiseRow
from experiments.report.pricing import Pricing
from experiments.report.questions.reasons import LossRow
from experiments.report.reproducibility import Reproducibility
from experiments.report.runs import Run
from experiments.report.settings import ReportSettings
from experiments.report.upper_bound import UpperBoundRow
from experiments.report.verdict.budget import BudgetPair
from experiments.report.verdict.row import VerdictRow
from experiments.report.whatif import WhatIfRow


@dataclass(frozen=True)
class Facts:
    """What the sections' rows are computed from: the runs read, their pricing, the verdict rows (the decisions,
    in experiments.report.decision_order) and the diagnostics, which several sections, the figures and the
    question viewer share."""
    settings: ReportSettings
    out: Path  # the report's folder
    loaded: LoadedRuns
    pricing: Pricing
    vrows: list[VerdictRow]
    diagnostics: Diagnostics

    @property
    def runs(self) -> list[Run]:
        return self.loaded.runs


@dataclass(kw_only=True)
class Summary:
    """Everything the report shows, computed before anything is rendered (summarize, then present): `present`
    reads nothing else. `runs` and `pricing` are what the rows were computed from (the figures and the details
    export draw on them); the page does not read them. Which section computes which field: its module's `rows`
    (experiments.report.page.sections)."""
    settings: ReportSettings
    out: str  # the report's folder: run folders and figures are named relative to it
    runs: list[Run] = field(metadata=NOT_IN_JSON)
    pricing: Pricing = field(metadata=NOT_IN_JSON)
    overview: Overview  # what the report read (the first screen)
    summary: list[dict[str, Any]]  # one row per config point (summary.csv)
    levels: list[str]
    recall_ns: list[str]
    vrows: list[VerdictRow]
    plans: list[dict[str, Any]]
    other: list[OtherArmsRow]
    budget: list[BudgetPair]
    pairwise: list[PairwiseRow]
    unjudged: int
    whatif: list[WhatIfRow]
    pricing_note: str  # how the runs were priced (the what-if)
    cost_basis: str  # what the cost ratios are priced by (the first screen)
    diagnostics: Diagnostics
    splits: list[SplitRow]
    overlap_spread: dict[str, float]  # per config: recall high - low overlap
    question_groups: dict[str, tuple[int, int]]
    reproducibility: Reproducibility
    lost: Losses | None = None  # documents cut to fit the window, what the load left out
    latency: list[LatencyRow] = field(default_factory=list)  # p50 / p90 per config and level (latency.csv)
    data_mix: list[DataSet] = field(default_factory=list)  # the data sets pooled (--pool-data); empty: one
    lost_answers: list[LossRow] = field(default_factory=list)  # why answers were lost (lost_answers.csv)
    questions: dict[str, Any] = field(default_factory=dict, metadata=NOT_IN_JSON)  # the viewer's rows (questions.html)
    viewer: dict[str, Any] = field(default_factory=dict)  # what questions.html holds, its files (draw_files)
    upper_bound: list[UpperBoundRow] = field(default_factory=list)  # the oracle retriever: what retrieval costs
    timing: list[str] = field(default_factory=list)  # how the runs' costs were not measured alike (first screen)
    figures: Figures = field(default_factory=Figures)  # the PNG files build_report drew (draw_files)
