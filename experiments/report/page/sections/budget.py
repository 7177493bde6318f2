"""The subsection "Same token budget" (under the verdict): long context cut to a RAG config's token budget against
that config (rows: experiments.report.verdict.budget)."""

from __future__ import annotations


from experiments.report.page.cells import fmt
from experiments.report.page.contents import Outline
from experiments.report.page.document import Document, Heading, Paragraph, Table
from experiments.report.page.report_summary import Facts, Summary
from experiments.report.verdict.budget import BudgetPair, budget_pairs

ANCHOR, TITLE = "budget", None

HEAD = ["benchmark", "budget tokens", "RAG", "score", "budget-matched long context", "score",
        "Δ RAG−budget LC [95% CI]", "n", "full long context"]
EXPLAINED = (
    "Long context cut to a RAG config's token budget (its spec's: top_k x chunk_size for plain RAG) against "
    "that RAG config. Full long "
    "context minus the budget-matched run is what the extra text is worth; RAG minus the budget-matched run is "
    "what choosing the text (retrieval) is worth at equal length.")


def rows(f: Facts) -> list[BudgetPair]:
    return budget_pairs(f.runs, f.settings)


def render(doc: Document, s: Summary, outline: Outline) -> None:
    mine: list[BudgetPair] = s.sections[ANCHOR]
    if mine:
        doc.add(Heading(3, "Same token budget: better text or less text?"), Paragraph(EXPLAINED),
                Table(HEAD, [_cells(p) for p in mine]))


def _cells(p: BudgetPair) -> list[str]:
    return [p.benchmark, str(p.budget), p.rag.label, fmt(p.rag_score, 1), p.budget_lc.label, fmt(p.budget_lc_score, 1),
            "-" if p.diff is None else f"{p.diff:+.1f} [{p.ci[0]:+.1f}, {p.ci[1]:+.1f}]", str(p.n_shared),
            fmt(p.full_lc_score, 1)]
