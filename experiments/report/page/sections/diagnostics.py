"""Section "Diagnostics", why an arm wins: long context against the best RAG config question by question (the
Summary's agreements, experiments/report/agreement.py), correctness given the evidence, distractors and truncation,
and which path Self-Route took. Its subsections "Why answers were lost" and "By lexical overlap" follow as sections
of their own.

"Correct" means score >= `correct_threshold` (0..1, conf/report.yaml, default 0.5): for exact-match
style metrics that is right/wrong, for graded metrics (F1, ROUGE) a majority of the answer.
"Evidence in the prompt" means at least `evidence_threshold` (default 1.0: all) of the gold evidence
reached the model: RAG's `evidence_in_prompt`, long context's `evidence_retained` (after truncation);
for benchmarks whose evidence is whole documents (Loong), `docs_in_prompt` and `docs_retained`."""

from __future__ import annotations

from dataclasses import dataclass
from statistics import mean
from typing import Any

from experiments.arms import ROLE_LONGCTX, ROLE_RAG
from experiments.report.agreement import Agreement
from experiments.report.page.cells import fmt, pct
from experiments.report.page.contents import Outline
from experiments.report.page.document import Document, Heading, Paragraph, Table
from experiments.report.page.report_summary import Facts, Summary
from experiments.report.page.viewer_links import cell_link
from experiments.report.runs import Run
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


@dataclass
class EvidenceRow:
    benchmark: str
    run: Run
    n: int  # answered samples with an evidence value
    evidence_share: float | None  # share with the evidence in the prompt
    p_correct_with: float | None
    n_with: int
    p_correct_missed: float | None
    n_missed: int
    distractor_rate: float | None  # mean share of known distractors in the prompt
    truncated_share: float | None  # long context: share of samples whose context was cut
    evidence_lost_share: float | None  # long context: share that lost some gold evidence to truncation
    evidence_gone_share: float | None  # long context: share that lost all of it


@dataclass
class RouteRow:
    benchmark: str
    run: Run
    n: int
    share_longctx: float
    score_rag_route: float | None
    score_longctx_route: float | None


def _first(rec: dict[str, Any], keys: tuple[str, ...]) -> float | None:
    return next((rec[k] for k in keys if rec.get(k) is not None), None)


RETAINED = ("evidence_retained", "docs_retained")


def _evidence_of(rec: dict[str, Any]) -> float | None:
    """Share of gold evidence (spans, else documents) in the prompt that produced the answer
    (Self-Route: of the path that answered)."""
    if rec.get("route") == ROLE_LONGCTX and _first(rec, RETAINED) is not None:
        return _first(rec, RETAINED)
    return _first(rec, ("evidence_in_prompt", "docs_in_prompt", *RETAINED))


def evidence_row(benchmark: str, run: Run, correct_threshold: float, evidence_threshold: float) -> EvidenceRow:
    answered = run.answered()
    with_ev = [(r, e) for r in answered if (e := _evidence_of(r)) is not None]
    hit = [r for r, e in with_ev if e >= evidence_threshold - 1e-9]
    miss = [r for r, e in with_ev if e < evidence_threshold - 1e-9]

    def p_correct(recs: list[dict[str, Any]]) -> float | None:
        return sum(r["score"] >= correct_threshold for r in recs) / len(recs) if recs else None

    whole_document = run.spec.role == ROLE_LONGCTX
    dkey = "distractors_retained" if whole_document else "distractors_retrieved"
    dvals = [r[dkey] for r in answered if r.get(dkey) is not None]
    truncated = lost = gone = None
    if whole_document and answered:
        truncated = sum(bool(r.get("truncated")) for r in answered) / len(answered)
        kept = [k for k in (_first(r, RETAINED) for r in answered) if k is not None]
        if kept:
            lost = sum(k < evidence_threshold - 1e-9 for k in kept) / len(kept)
            gone = sum(k == 0 for k in kept) / len(kept)
    return EvidenceRow(benchmark, run, len(with_ev), len(hit) / len(with_ev) if with_ev else None,
                       p_correct(hit), len(hit), p_correct(miss), len(miss), mean(dvals) if dvals else None,
                       truncated, lost, gone)


def route_row(benchmark: str, run: Run) -> RouteRow | None:
    routed = [r for r in run.answered() if r.get("route")]
    if not routed:
        return None
    by = {k: [r["score"] for r in routed if r["route"] == k] for k in (ROLE_RAG, ROLE_LONGCTX)}
    rag, lc = by[ROLE_RAG], by[ROLE_LONGCTX]
    return RouteRow(benchmark, run, len(routed), len(lc) / len(routed),
                    100 * mean(rag) if rag else None, 100 * mean(lc) if lc else None)


@dataclass
class Diagnostics:
    evidence: list[EvidenceRow]
    routes: list[RouteRow]


def diagnose(runs: list[Run], correct_threshold: float, evidence_threshold: float) -> Diagnostics:
    evidence, routes = [], []
    for bench in sorted({r.scope for r in runs}):
        mine = [r for r in runs if r.scope == bench]
        for run in sorted(mine, key=lambda r: (r.arm, -(r.score_at() or 0))):
            if run.spec.context and run.answered():
                evidence.append(evidence_row(bench, run, correct_threshold, evidence_threshold))
            if run.answered():  # only a routing arm's records say which path answered
                rr = route_row(bench, run)
                if rr:
                    routes.append(rr)
    return Diagnostics(evidence, routes)


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
