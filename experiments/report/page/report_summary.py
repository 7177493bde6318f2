"""The report's Summary (every row the page shows, computed before anything is rendered) and the Facts every
section's rows are computed from.

`summarize` (experiments.report.page.build) computes the Facts, then each section's rows
(experiments.report.page.sections: its module's `rows`), and keeps them by the section's ANCHOR; `present` renders
the Summary alone, section by section; summary.json holds it (experiments.report.page.summary_file). The Summary
names no section's row types: each section module defines its own, so a section computes and renders its rows in
one module."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from experiments.report.agreement import Agreement
from experiments.report.loading import LoadedRuns
from experiments.report.page.drawing import Figures
from experiments.report.page.summary_file import NOT_IN_JSON
from experiments.report.pricing import Pricing
from experiments.report.runs import Run
from experiments.report.settings import ReportSettings
from experiments.report.verdict_row import VerdictRow


@dataclass(frozen=True)
class Facts:
    """What the sections' rows are computed from: the runs read, their pricing, the verdict rows (the decisions,
    in experiments.report.decision_order) and their plans, and long context against the best RAG config question
    by question, which several sections, the figures and the question viewer share."""
    settings: ReportSettings
    out: Path  # the report's folder
    loaded: LoadedRuns
    pricing: Pricing
    vrows: list[VerdictRow]
    plans: list[dict[str, Any]]  # per verdict row: the documents a sweep needs to decide it (verdict.csv's too)
    agreements: list[Agreement]

    @property
    def runs(self) -> list[Run]:
        return self.loaded.runs


@dataclass(kw_only=True)
class Summary:
    """Everything the report shows, computed before anything is rendered (summarize, then present): `present`
    reads nothing else. What every section shares (the settings, the decisions and their plans, the agreements),
    then each section's own rows by its ANCHOR (`sections`: what its module's `rows` returned; None for a section
    that has none of its own). `runs` and `pricing` are what the rows were computed from (the figures and the
    details export draw on them); the page does not read them."""
    settings: ReportSettings
    out: str  # the report's folder: run folders and figures are named relative to it
    runs: list[Run] = field(metadata=NOT_IN_JSON)
    pricing: Pricing = field(metadata=NOT_IN_JSON)
    vrows: list[VerdictRow]
    plans: list[dict[str, Any]]
    agreements: list[Agreement]  # long context vs the best RAG config per question (agreement.csv)
    sections: dict[str, Any]  # each section's rows, by its ANCHOR
    questions: dict[str, Any] = field(default_factory=dict, metadata=NOT_IN_JSON)  # the viewer's rows (questions.html)
    viewer: dict[str, Any] = field(default_factory=dict)  # what questions.html holds, its files (draw_files)
    figures: Figures = field(default_factory=Figures)  # the PNG files build_report drew (draw_files)
