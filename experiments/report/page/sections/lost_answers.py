"""The subsection "Why answers were lost" (under Diagnostics) and its one line on the first screen; the rows come
from experiments.report.questions, and each count links to its questions in the viewer (questions.html)."""

from __future__ import annotations

from experiments.report.page.contents import Outline
from experiments.report.page.document import Document, Heading, Paragraph, Table
from experiments.report.page.questions_html import questions_link
from experiments.report.page.report_summary import Facts, Summary
from experiments.report.page.viewer_links import level_param, viewer_holds
from experiments.report.questions.reasons import REASONS, LossRow, loss_rows
from experiments.report.verdict.row import ALL
from experiments.report.verdict_row import VerdictRow, overall_row

ANCHOR, TITLE = "lost-answers", None

EXPLAINED = (
    "Each wrong answer (score below the correct threshold; skipped ones too) counted once. **retrieval miss**: "
    "the evidence was not in RAG's top k; **cut by the prompt budget**: in the top k, but its chunk did not fit "
    "the prompt; **truncated away**: long context cut it to fit the window; **reading miss**: the evidence "
    "reached the model and the answer is still wrong; **no evidence known**: the question has no evidence "
    "quotes and nothing else says; **not served**: the prompt could not fit. Signal: where a question has no "
    "evidence quotes but has answers, whether a gold answer appears in the context sent (**answer in "
    "context**) stands in for the evidence. Each count opens its questions in the viewer (questions.html).")


def rows(f: Facts) -> list[LossRow]:
    """Why each config lost its answers (lost_answers.csv)."""
    return loss_rows(f.runs, f.settings.correct_threshold, f.settings.evidence_threshold)


def render(doc: Document, s: Summary, outline: Outline) -> None:
    doc.add(Heading(3, "Why answers were lost"))
    mine: list[LossRow] = s.sections[ANCHOR]
    holds = viewer_holds(s.viewer)
    if not mine:
        doc.add(Paragraph("No scored config with a context."), *([Paragraph(holds)] if holds else []))
        return
    shown = [r for r in REASONS if any(row.reasons.get(r, 0) for row in mine)] or list(REASONS[:4])
    body = [[row.benchmark, row.config, row.level, str(row.scored), str(row.wrong),
             *(_count_cell(row, reason) for reason in shown), row.signal] for row in mine]
    doc.add(Table(["benchmark", "config", "level", "scored", "wrong", *shown, "signal"], body), Paragraph(EXPLAINED))
    if holds:
        doc.add(Paragraph(holds))


def _count_cell(row: LossRow, reason: str) -> str:
    """The answers a config lost for one reason, linked to them in the viewer."""
    n = row.reasons.get(reason, 0)
    link = questions_link(bench=row.benchmark, level=level_param(row.level), config=row.config, reason=reason)
    return f"[{n}]({link})" if n else "0"


def _chosen_rag_row(vrows: list[VerdictRow], rows: list[LossRow], scope: str) -> LossRow | None:
    """The loss row of the RAG config the verdict chose for a benchmark (its level's, else over all levels)."""
    v = overall_row(vrows, scope)
    if v is None or v.rag is None:
        return None
    mine = [r for r in rows if r.benchmark == scope and r.config == v.rag.label]
    row = next((r for r in mine if r.level == v.level), next((r for r in mine if r.level == ALL), None))
    return mine[0] if row is None and len(mine) == 1 else row


def main_loss_line(vrows: list[VerdictRow], rows: list[LossRow], outline: Outline) -> str | None:
    """One line per benchmark: what mostly costs the chosen RAG config its answers, linked to those questions."""
    parts = []
    for scope in dict.fromkeys(v.benchmark for v in vrows):
        row = _chosen_rag_row(vrows, rows, scope)
        top = row.main_reason if row else None
        if row is None or top is None:
            continue
        others = ", ".join(f"{r} {row.reasons.get(r, 0)}" for r in REASONS if row.reasons.get(r, 0) and r != top[0])
        link = questions_link(bench=scope, level=level_param(row.level), config=row.config, reason=top[0])
        parts.append(f"{scope}: {row.config} lost {row.wrong} of {row.scored} answers, most to **{top[0]}** "
                     f"([{top[1]}]({link}))" + (f", then {others}" if others else "") + f" (by {row.signal})")
    if not parts:
        return None
    return ("What costs the chosen RAG config its answers: " + "; ".join(parts)
            + f". {outline.ref('diagnostics').capitalize()} has the table for every config.")
