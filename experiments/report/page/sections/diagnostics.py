"""Section "Diagnostics": long context against the best RAG config question by question, correctness given the
evidence, distractors and truncation, and which path Self-Route took (rows: experiments.report.diagnostics). Its
subsections "Why answers were lost" and "By lexical overlap" follow as sections of their own."""

from __future__ import annotations


from experiments.report.agreement import Agreement
from experiments.report.diagnostics import Diagnostics, EvidenceRow, diagnose
from experiments.report.page.cells import fmt, pct
from experiments.report.page.contents import Outline
from experiments.report.page.document import Document, Heading, Paragraph, Table
from experiments.report.page.report_summary import Facts, Summary
from experiments.report.page.viewer_links import cell_link
from experiments.report.settings import ReportSettings

ANCHOR, TITLE = "diagnostics", "Diagnostics"

AGREEMENT_HEAD = ["benchmark", "level", "long context", "best RAG", "shared", "both right", "only long context right",
                  "only RAG right", "both wrong", "same answer"]
AGREEMENT_EXPLAINED = (
    "\"Only RAG right\" is what a router could add on top of long context; \"only long context right\" is what "
    "retrieval misses. Same answer: the two predictions are equal once normalised (lower case, no punctuation, "
    "articles or extra spaces), whatever their scores. Each count opens its questions in the viewer "
    "(questions.html).")
EVIDENCE_HEAD = ["benchmark", "config", "n", "evidence in prompt", "P(correct | evidence in prompt)",
                 "P(correct | evidence missed)", "distractor hit rate", "long context truncated",
                 "evidence partly truncated away", "evidence fully truncated away"]
EVIDENCE_EXPLAINED = ("Distractor hit rate: mean share of the benchmark's known distractors (confusing facts) "
                      "that reached the prompt; \"-\" where the benchmark has none. The truncation columns apply "
                      "to long context only.")


def rows(f: Facts) -> Diagnostics:
    """Correctness given the evidence, distractors and truncation, and which path a routing arm took (the
    agreements are the Summary's: the agreement figure and the viewer read them too)."""
    return diagnose(f.runs, f.settings.correct_threshold, f.settings.evidence_threshold)


def render(doc: Document, s: Summary, outline: Outline) -> None:
    mine: Diagnostics = s.sections[ANCHOR]
    doc.add(Paragraph(thresholds(s.settings)))
    agreement(doc, s.agreements)
    evidence(doc, mine)
    routes(doc, mine)


def thresholds(settings: ReportSettings) -> str:
    return (f"A sample is **correct** when its score is at least {settings.correct_threshold:g} (0..1; "
            f"`correct_threshold` in conf/report.yaml). Its **evidence is in the prompt** when at least "
            f"{100 * settings.evidence_threshold:g}% of the gold evidence reached the model: for RAG the retrieved "
            "chunks in the prompt, for long context what survived truncation, for Self-Route the path that "
            "answered.")


def agreement(doc: Document, agreements: list[Agreement]) -> None:
    doc.add(Heading(3, "Agreement: long context vs best RAG"))
    if not agreements:
        doc.add(Paragraph("No benchmark has both a scored long-context and a scored RAG run."))
        return
    doc.add(Table(AGREEMENT_HEAD, [_agreement_cells(a) for a in agreements]), Paragraph(AGREEMENT_EXPLAINED))


def _agreement_cells(a: Agreement) -> list[str]:
    same = "-" if a.same_answer is None else f"{a.same_answer} ({a.same_answer / max(a.n, 1):.0%})"
    return [a.benchmark, a.level, a.lc.label, a.rag.label, str(a.n), cell_link(a, "both_right", a.both_right),
            cell_link(a, "only_lc", a.only_lc), cell_link(a, "only_rag", a.only_rag),
            cell_link(a, "both_wrong", a.both_wrong), same]


def evidence(doc: Document, diag: Diagnostics) -> None:
    doc.add(Heading(3, "Correctness given the evidence, distractors, truncation"))
    if not diag.evidence:
        doc.add(Paragraph("No answered samples with evidence annotations."))
        return
    doc.add(Table(EVIDENCE_HEAD, [_evidence_cells(e) for e in diag.evidence]), Paragraph(EVIDENCE_EXPLAINED))


def _evidence_cells(e: EvidenceRow) -> list[str]:
    return [e.benchmark, e.run.label, str(e.n), pct(e.evidence_share), f"{pct(e.p_correct_with)} (n={e.n_with})",
            f"{pct(e.p_correct_missed)} (n={e.n_missed})", pct(e.distractor_rate), pct(e.truncated_share),
            pct(e.evidence_lost_share), pct(e.evidence_gone_share)]


def routes(doc: Document, diag: Diagnostics) -> None:
    """Which path answered Self-Route's questions, and how each path scored."""
    if diag.routes:
        doc.add(Heading(3, "Self-Route: which path answered"),
                Table(["benchmark", "config", "n", "answered by long context", "score on RAG path",
                       "score on long-context path"],
                      [[r.benchmark, r.run.label, str(r.n), pct(r.share_longctx), fmt(r.score_rag_route, 1),
                        fmt(r.score_longctx_route, 1)] for r in diag.routes]))
