"""Section "Plots": the figures drawn per benchmark (experiments.report.page.drawing draws them before the page is
rendered), and those with nothing to draw."""

from __future__ import annotations

from pathlib import Path

from experiments.report.page.contents import Outline
from experiments.report.page.document import Document, Heading, Image, Paragraph
from experiments.report.page.report_summary import Facts, Summary

ANCHOR, TITLE = "plots", "Plots"


def rows(f: Facts) -> None:
    """Nothing yet: the figures are drawn after summarize (build.draw_files) into the Summary's `figures`."""
    return None


def render(doc: Document, s: Summary, outline: Outline) -> None:
    scopes = s.figures.scopes
    for scope in scopes:
        if len(scopes) > 1:
            doc.add(Heading(3, scope.scope))
        for f in scope.figures:
            doc.add(Paragraph(f.caption), Image(Path(s.out) / f.file, Path(f.file).stem.replace("_", " ")))
        if scope.not_drawn:
            doc.add(Paragraph("Not drawn: " + "; ".join(scope.not_drawn) + "."))
