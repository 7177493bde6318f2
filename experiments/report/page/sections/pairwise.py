"""The subsection "Questions without references: pairwise preference" (under the verdict): RAG's answers against
long context's, judged in both orders (`python -m experiments.pairwise`; load_runs applies and keeps the
judgments, experiments/report/loading.py). Per judged RAG run: the win / tie / loss shares, the share of
preferences that flipped with the order, the answer lengths of both arms (judges favour longer answers: read the win
rate beside them) and a 95% interval of wins − losses that resamples whole documents."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from eval.metrics.confidence import bootstrap_ci, n_clusters
from eval.metrics.reference_free import LOSS, OUTCOME_SCORE, TIE, WIN
from experiments import records as schema
from experiments.report.loading import Judged
from experiments.report.page.cells import pct
from experiments.report.page.contents import Outline
from experiments.report.page.document import Document, Heading, Paragraph, Table
from experiments.report.page.report_summary import Facts, Summary
from experiments.report.runs import Run

ANCHOR, TITLE = "pairwise", None

HEAD = ["benchmark", "RAG", "long context", "questions", "documents", "RAG wins", "ties", "LC wins", "order flips",
        "wins − losses, % [95% CI]", "words (RAG / LC)", "no judgment"]
EXPLAINED = (
    "Questions with neither reference answers nor evidence are scored by a judge that compares RAG's answer with "
    "long context's (`python -m experiments.pairwise`): asked twice, the answers shown in both orders and never "
    "named; a preference counts only when both orders agree, and one that flips with the order is a tie. In the "
    "verdict such questions score 1 (RAG preferred), 0.5 (tie) or 0 (long context preferred) for RAG and 0.5 for "
    "long context, so Δ is half the net preference, (wins − losses) / 2, in points. Judges favour longer "
    "answers: read the win rate beside the answer lengths.")


@dataclass
class PairwiseRow:
    benchmark: str
    rag: str
    longctx: str
    n: int
    documents: int
    win: float
    tie: float
    loss: float
    flipped: float  # share of questions whose preference flipped with the order (counted as ties)
    net: float  # (wins - losses) share, x100
    ci: tuple[float, float] | None  # of net, resampling documents; None with one document
    words_rag: float
    words_longctx: float
    no_judgment: int

    def as_dict(self) -> dict[str, Any]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


def pairwise_row(judged: Judged, resamples: int = 2000, seed: int = 0) -> PairwiseRow | None:
    """A judged RAG run's row: its shares, the flips, the answer lengths and the net preference's interval over
    documents (`eval.metrics.confidence.bootstrap_ci` over the question's group); None without an outcome."""
    run, lines = judged.run, judged.lines
    ok = [j for j in lines if j.get("outcome") in OUTCOME_SCORE]
    if not ok:
        return None
    n = len(ok)
    net = [100.0 * ((j["outcome"] == WIN) - (j["outcome"] == LOSS)) for j in ok]
    groups = [str(j.get("group") or j["id"]) for j in ok]
    docs = n_clusters(groups, n)
    ci = bootstrap_ci(net, n_resamples=resamples, seed=seed, groups=groups) if docs > 1 else None
    share = {k: sum(j["outcome"] == k for j in ok) / n for k in (WIN, TIE, LOSS)}
    return PairwiseRow(run.benchmark, run.label, str(ok[0].get("against_label", "?")), n, docs, share[WIN],
                       share[TIE], share[LOSS], sum(bool(j.get("flipped")) for j in ok) / n, sum(net) / n, ci,
                       sum(j.get("words_rag", 0) for j in ok) / n, sum(j.get("words_longctx", 0) for j in ok) / n,
                       len(lines) - n)


def pairwise_rows(judged: list[Judged], resamples: int = 2000, seed: int = 0) -> list[PairwiseRow]:
    rows = [pairwise_row(j, resamples, seed) for j in judged]
    return [r for r in rows if r is not None]


def waiting(runs: list[Run]) -> int:
    """Answers recorded for a pairwise judgment that has not been made (the report says so)."""
    return sum(1 for r in runs for rec in r.records if rec.get("scoring") == schema.PAIRWISE
               and schema.is_answered(rec) and rec.get("score") is None)


@dataclass(frozen=True)
class Pairwise:
    rows: list[PairwiseRow]  # the judged pairs per benchmark
    unjudged: int  # answers that still wait for a judgment


def rows(f: Facts) -> Pairwise:
    """The judged pairs per benchmark, and how many answers still wait for a judgment."""
    return Pairwise(pairwise_rows(f.loaded.judged, f.settings.resamples, f.settings.seed), waiting(f.runs))


def render(doc: Document, s: Summary, outline: Outline) -> None:
    mine: Pairwise = s.sections[ANCHOR]
    if not mine.rows and not mine.unjudged:
        return
    doc.add(Heading(3, "Questions without references: pairwise preference", "pairwise"), Paragraph(EXPLAINED))
    if mine.unjudged:
        doc.add(Paragraph(f"{mine.unjudged} answer(s) wait for a pairwise judgment and are left out of every score: "
                          "run `python -m experiments.pairwise RUN_DIRS --judge-model MODEL`, then the report again."))
    if mine.rows:
        doc.add(Table(HEAD, [_cells(r) for r in mine.rows]))


def _cells(r: PairwiseRow) -> list[str]:
    net = f"{r.net:+.1f}" + (f" [{r.ci[0]:+.1f}, {r.ci[1]:+.1f}]" if r.ci else " (one document)")
    return [r.benchmark, r.rag, r.longctx, str(r.n), str(r.documents), pct(r.win), pct(r.tie), pct(r.loss),
            pct(r.flipped), net, f"{r.words_rag:.0f} / {r.words_longctx:.0f}", str(r.no_judgment)]
