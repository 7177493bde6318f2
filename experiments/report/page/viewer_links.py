"""Links from the report's rows and counts to their questions in the viewer (questions.html)."""

from __future__ import annotations

from experiments.report.agreement import Agreement
from experiments.report.page.questions_html import QUESTIONS_FILE, questions_link
from experiments.report.verdict.row import ALL
from experiments.report.verdict_row import VerdictRow


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


def viewer_holds(viewer: dict | None) -> str | None:
    """What the question viewer holds and where its rows are, in one sentence (None: no viewer written)."""
    if not viewer:
        return None
    size = f"{viewer['page_bytes'] / 1e6:.1f} MB"
    if viewer["held"] < viewer["questions"]:
        held = (f"The viewer holds the first {viewer['held']:,} of {viewer['questions']:,} questions (its page stays "
                "under 15 MB); every answer is in lost_answers.csv and, with `--export details`, in details/")
    else:
        held = f"The viewer holds all {viewer['questions']:,} questions"
    if not viewer.get("part_files"):
        return f"{held}: {QUESTIONS_FILE} ({size}, one file)."
    return (f"{held}: {QUESTIONS_FILE} ({size}) reads their answers, chunks and windows from {viewer['folder']}/ "
            f"({viewer['part_files']:,} compressed files, {viewer['parts_bytes'] / 1e6:.1f} MB) as you page and "
            "filter; share the report's folder whole.")
