"""Links from the report's rows and counts to their questions in the viewer (questions.html)."""

from __future__ import annotations

from experiments.report.diagnostics import Agreement
from experiments.report.page.questions_html import questions_link
from experiments.report.verdict.row import ALL, VerdictRow


def level_param(level: str) -> str | None:
    """A row's length level as the viewer's filter (none for the rows over every level)."""
    return None if level == ALL else level


def row_links(vrows: list[VerdictRow]) -> str | None:
    """The questions behind each row of the answer table, in the viewer, as one sentence."""
    links = [f"[{v.benchmark} · {v.level}]({questions_link(bench=v.benchmark, level=level_param(v.level))})"
             for v in vrows]
    if not links:
        return None
    return ("The questions behind each row, both arms side by side: " + ", ".join(links)
            + f" ([every question]({questions_link()})).")


def cell_link(a: Agreement, cell: str, count: int) -> str:
    """An agreement-table count linked to its questions (the viewer's outcome cells are those of the overall pair)."""
    n = max(a.n, 1)
    text = f"{count} ({count / n:.0%})"
    return f"[{text}]({questions_link(bench=a.benchmark, level=level_param(a.level), cell=cell)})" if count else text
