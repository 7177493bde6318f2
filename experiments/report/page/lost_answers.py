"""The table "Why answers were lost" (under Diagnostics), its one line on the first screen, and the links from the
report's rows to the question viewer (questions.html). Renders rows computed in experiments.report.questions."""

from __future__ import annotations

from experiments.report.diagnostics import Agreement
from experiments.report.page.cells import fmt
from experiments.report.page.contents import section_ref
from experiments.report.page.document import Document, Heading, Paragraph, Table
from experiments.report.page.questions_html import questions_link
from experiments.report.questions.reasons import REASONS, LossRow
from experiments.report.upper_bound import UpperBoundRow
from experiments.report.verdict.lookups import overall_row
from experiments.report.verdict.row import ALL, VerdictRow


def _level(level: str) -> str | None:
    return None if level == ALL else level


def lost_answers_section(doc: Document, rows: list[LossRow]) -> None:
    doc.add(Heading(3, "Why answers were lost"))
    if not rows:
        doc.add(Paragraph("No scored config with a context."))
        return
    shown = [r for r in REASONS if any(row.reasons.get(r, 0) for row in rows)] or list(REASONS[:4])
    body = []
    for row in rows:
        cells = []
        for reason in shown:
            n = row.reasons.get(reason, 0)
            link = questions_link(bench=row.benchmark, level=_level(row.level), config=row.config, reason=reason)
            cells.append(f"[{n}]({link})" if n else "0")
        body.append([row.benchmark, row.config, row.level, str(row.scored), str(row.wrong), *cells, row.signal])
    doc.add(Table(["benchmark", "config", "level", "scored", "wrong", *shown, "signal"], body), Paragraph(
        "Each wrong answer (score below the correct threshold; skipped ones too) counted once. **retrieval miss**: "
        "the evidence was not in RAG's top k; **cut by the prompt budget**: in the top k, but its chunk did not fit "
        "the prompt; **truncated away**: long context cut it to fit the window; **reading miss**: the evidence "
        "reached the model and the answer is still wrong; **no evidence known**: the question has no evidence "
        "quotes and nothing else says; **not served**: the prompt could not fit. Signal: where a question has no "
        "evidence quotes but has answers, whether a gold answer appears in the context sent (**answer in "
        "context**) stands in for the evidence. Each count opens its questions in the viewer (questions.html)."))


def main_loss_line(vrows: list[VerdictRow], rows: list[LossRow]) -> Paragraph | None:
    """One line per benchmark: what mostly costs the chosen RAG config its answers, linked to those questions."""
    parts = []
    for scope in dict.fromkeys(v.benchmark for v in vrows):
        v = overall_row(vrows, scope)
        if v is None or v.rag is None:
            continue
        mine = [r for r in rows if r.benchmark == scope and r.config == v.rag.label]
        row = next((r for r in mine if r.level == v.level), next((r for r in mine if r.level == ALL), None))
        if row is None and len(mine) == 1:
            row = mine[0]
        top = row.main_reason if row else None
        if row is None or top is None:
            continue
        others = ", ".join(f"{r} {row.reasons.get(r, 0)}" for r in REASONS if row.reasons.get(r, 0) and r != top[0])
        link = questions_link(bench=scope, level=_level(row.level), config=row.config, reason=top[0])
        parts.append(f"{scope}: {row.config} lost {row.wrong} of {row.scored} answers, most to **{top[0]}** "
                     f"([{top[1]}]({link}))" + (f", then {others}" if others else "") + f" (by {row.signal})")
    if not parts:
        return None
    return Paragraph("What costs the chosen RAG config its answers: " + "; ".join(parts)
                     + f". {section_ref('diagnostics').capitalize()} has the table for every config.")


def row_links(vrows: list[VerdictRow]) -> Paragraph | None:
    """The questions behind each row of the answer table, in the viewer."""
    links = [f"[{v.benchmark} · {v.level}]({questions_link(bench=v.benchmark, level=_level(v.level))})"
             for v in vrows]
    if not links:
        return None
    return Paragraph("The questions behind each row, both arms side by side: " + ", ".join(links)
                     + f" ([every question]({questions_link()})).")


def cell_link(a: Agreement, cell: str, count: int) -> str:
    """An agreement-table count linked to its questions (the viewer's outcome cells are those of the overall pair)."""
    n = max(a.n, 1)
    text = f"{count} ({count / n:.0%})"
    return f"[{text}]({questions_link(bench=a.benchmark, level=_level(a.level), cell=cell)})" if count else text


__all__ = ["cell_link", "lost_answers_section", "main_loss_line", "row_links", "upper_bound_section"]


def upper_bound_section(doc: Document, rows: list[UpperBoundRow]) -> None:
    """The oracle retriever beside the chosen RAG config and long context: what retrieval costs."""
    if not rows:
        return
    body = [[r.benchmark, r.level, r.oracle.label, fmt(r.oracle_score, 1), fmt(r.recall_at_k, 2),
             r.rag.label if r.rag else "-", fmt(r.rag_score, 1), fmt(r.lc_score, 1),
             "-" if r.retrieval_cost is None else f"{r.retrieval_cost:+.1f}",
             "-" if r.gap_closed is None else f"{r.gap_closed:.0%}"] for r in rows]
    doc.add(Heading(3, "Retrieval's upper bound: what retrieval costs"), Table(
        ["benchmark", "level", "oracle", "score", "evidence recall@k", "chosen RAG", "score", "long context",
         "what retrieval costs", "share of the LC gap it closes"], body), Paragraph(
        "The oracle retriever (`retriever=oracle`) gives the prompt the chunks that hold the gold evidence, at most "
        "top k of them in document order, through the same template: the score a perfect retriever would reach with "
        "this chunking and generator. What retrieval costs = oracle − chosen RAG config (points); the last column is "
        "that difference as a share of long context's lead over RAG (\"-\" where long context does not lead). The "
        "oracle reads the answer's evidence, so the verdict never chooses it. Scores: all scored questions of the "
        "level (the verdict's columns are on the questions both arms share)."))
