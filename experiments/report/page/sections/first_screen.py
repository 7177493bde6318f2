"""The report's first screen (an unnumbered section of experiments.report.page.sections), what a reader sees
first: the answer per benchmark and length level in a compact table whose cells hold values only, the forest
plot of the same rows, then what the report read and its contents.

Why this order: a team asks first "which arm, how sure, at what price, and what would settle it",
then "why". The method, the full verdict table (verdict.csv's columns, the selection and the
recommendation sentences) and the plan sentences follow in the verdict section under "How the verdict was
reached". A row over one document has no interval (nothing varies between documents): such a cell
shows "-" and a note below the table says why. Where the report makes several decisions, the
interval shown for a tested row is the family-adjusted one (experiments.report.verdict.family), so a
row never shows an interval that decides beside a decision that does not. The chosen configs carry
their scores on the basis Δ is on (cross-fitted and averaged over the splits where configs were chosen),
so that RAG minus long context is Δ on every row; the best-scoring RAG config is named beside the chosen
one when they differ, with the points it scores above it (both on all samples): the rule prefers the
cheapest config within the tolerance, and a team should see what it gave up.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval.metrics.cluster_variance import CONCENTRATED, LARGEST_SHARE
from experiments.context_cuts import kept_words
from experiments.report import pricing_words
from experiments.report.data_mix import DataSet
from experiments.report.losses import CutRow, LoadLossRow, Losses, losses
from experiments.report.overview import Overview, overview
from experiments.report.page.cells import ratio
from experiments.report.page.contents import Outline
from experiments.report.page.document import Bullets, Document, Image, Paragraph, Table
from experiments.report.page.report_summary import Facts, Summary
from experiments.report.page.sections import lost_answers
from experiments.report.page.sections.lost_answers import main_loss_line
from experiments.report.page.verdict_cells import cost_cell, delta_cell, family_size, no_interval_reason, row_name
from experiments.report.page.viewer_links import row_links
from experiments.report.runs import Run
from experiments.report.settings import ReportSettings
from experiments.report.timing_notes import timing_notes
from experiments.report.verdict_row import VerdictRow

ANSWER_HEAD = ["benchmark", "level", "decision", "Δ RAG−LC [interval]", "docs", "long context (score)",
               "RAG (score)", "best-scoring RAG", "RAG÷LC: prompt tokens, latency, cost [interval]", "to decide"]
ANSWER_NOWRAP = (0, 1, 2, 3, 4, 8)  # values on one line; "to decide" may wrap
ANSWER_LABELS = (5, 6, 7)  # "label (score)": the label on one line, the score may wrap below it
MAX_LABEL = 28  # a config label longer than this is cut and tagged with its config hash
WITHHELD = ("the interval would say", "the row's own interval alone says")  # a rule withheld the decision
ANCHOR, TITLE = "answer", None


@dataclass(frozen=True)
class FirstScreen:
    """The first screen's own rows (the verdict rows and their plans are the Summary's, shared)."""
    overview: Overview  # what the report read
    cost_basis: str  # what the cost ratios are priced by
    lost: Losses | None  # documents cut to fit the window, what the load left out
    data_mix: list[DataSet]  # the data sets pooled (--pool-data); empty: one
    timing: list[str]  # how the runs' costs were not measured alike


def rows(f: Facts) -> FirstScreen:
    """What the report read, what the cost ratios are priced by, what was lost before scoring, the data sets pooled
    and the costs not measured alike."""
    return FirstScreen(overview=overview(f.runs, f.loaded.missing, f.loaded.duplicates),
                       cost_basis=pricing_words.basis(f.pricing), lost=losses(f.runs) or None,
                       data_mix=f.loaded.data_mix, timing=timing_notes(f.runs, f.pricing))


def render(doc: Document, s: Summary, outline: Outline) -> None:
    """The answer, what was lost before scoring, the forest plot, then what the report read and its contents."""
    mine: FirstScreen = s.sections[ANCHOR]
    forest = Path(s.out) / s.figures.forest if s.figures.forest else None
    add_answer(doc, s.vrows, s.plans, s.settings, forest, outline, mine.cost_basis, mine.lost)
    add_data_mix(doc, mine.data_mix)
    lines = (main_loss_line(s.vrows, s.sections[lost_answers.ANCHOR], outline), row_links(s.vrows))
    doc.add(*[Paragraph(line) for line in lines if line is not None])
    add_timing_notes(doc, mine.timing)
    add_overview(doc, mine.overview, outline.contents())


def short_label(run: Run | None) -> str:
    """A config's label, cut to MAX_LABEL characters with its config hash when longer (the full
    label is in the verdict table and verdict.csv)."""
    if run is None:
        return "-"
    label = run.label
    if len(label) <= MAX_LABEL:
        return label
    tag = str(run.metrics.get("config_hash") or "")[:6]
    return (label[:MAX_LABEL - 9].rstrip() + "… #" + tag) if tag else label[:MAX_LABEL - 1].rstrip() + "…"


def scored(run: Run | None, score: float | None) -> str:
    """"rag bm25 c128 k4 (61.2)"."""
    return "-" if run is None else f"{short_label(run)} ({'-' if score is None else f'{score:.1f}'})"


def best_scoring_cell(v: VerdictRow) -> str:
    """The best-scoring RAG config when the rule chose another, with the points it scores above the chosen one,
    both on all their samples (not selection-adjusted): "rag bm25 c256 k8 (+1.4)". Its own score beside the
    chosen config's cross-fitted one would compare two bases (33.3 against 27.8 where both got 6 of 18 right)."""
    c = v.comparison
    if c.best_rag is None or c.rag is None or c.best_rag.label == c.rag.label:
        return "same"
    gap = (c.best_rag_score - c.rag_own_score
           if c.best_rag_score is not None and c.rag_own_score is not None else None)
    return f"{short_label(c.best_rag)} ({'-' if gap is None else f'{gap:+.1f}'})"


def answer_rows(vrows: list[VerdictRow], plans: list[dict[str, Any]]) -> list[list[str]]:
    """One line of values per verdict row, in ANSWER_HEAD's order."""
    return [[v.benchmark, v.level, f"**{v.decision.kind}**" if v.decision else "-", delta_cell(v),
             str(v.n_groups) if v.n_groups else "-", scored(v.lc, v.comparison.lc_score),
             scored(v.rag, v.comparison.rag_score), best_scoring_cell(v),
             f"{ratio(v.comparison.token_ratio)}, {ratio(v.comparison.latency_ratio)}, {cost_cell(v)}",
             plan["column"]]
            for v, plan in zip(vrows, plans, strict=True)]


def answer_notes(vrows: list[VerdictRow]) -> list[str]:
    """The reason of every "-" in the Δ column, and of every decision a rule withheld."""
    notes = [f"{row_name(v)}, no Δ interval: {reason}." for v in vrows if (reason := no_interval_reason(v))]
    notes += [f"{row_name(v)}: {v.decision.why}." for v in vrows
              if v.decision and v.decision.why.startswith(WITHHELD)]
    notes += [line for v in vrows if (line := concentration_note(v))]
    return notes


def concentration_note(v: VerdictRow) -> str:
    """A row whose mean over questions rests on a few documents (the largest tenth holds CONCENTRATED of the
    questions or more), with what that does to its decision; "" otherwise."""
    est = v.comparison.estimate
    if est is None or not v.n_groups or est.largest_share < CONCENTRATED:  # read back from summary.json: fields only
        return ""
    top = max(1, math.ceil(LARGEST_SHARE * v.n_groups))
    return (f"{row_name(v)}: the largest {top} of {v.n_groups} documents hold {100 * est.largest_share:.0f}% of the "
            "questions, so Δ (the mean over questions) rests on them. Its interval allows for that, but if the arms "
            "differ on exactly the largest documents, a sweep holding few of them leans away from them: simulated "
            "so, false claims reached 3.4% where 2.5% is promised. If your documents matter equally, `--weight "
            "document` (report.yaml `weight: document`) makes Δ the mean of the documents' means.")


def add_answer(doc: Document, vrows: list[VerdictRow], plans: list[dict[str, Any]], settings: ReportSettings,
               forest: Path | None, outline: Outline, cost_basis: str = "", lost: Losses | None = None) -> None:
    """The answer table, its notes, what was lost before scoring, and the forest plot (`forest`: its file, drawn
    by experiments.report.page.drawing; None: not drawn)."""
    doc.add(Table(ANSWER_HEAD, answer_rows(vrows, plans), "The answer, per benchmark and length level",
                  css_class="answer", nowrap=ANSWER_NOWRAP, labels=ANSWER_LABELS))
    notes = answer_notes(vrows)
    if notes:
        doc.add(Bullets(notes))
    add_losses(doc, lost)
    left_out = [f"{row_name(v)} ({no_interval_reason(v)})" for v in vrows if v.diff is None]
    if forest is None:
        doc.add(Paragraph("Not drawn: the verdict plot (no row with a difference)."))
    else:
        doc.add(Image(forest, "verdict forest plot: Δ RAG−LC with the interval its decision was tested at (95% "
                            "where untested); shaded: the tolerance"))
        if left_out:
            doc.add(Paragraph("Not in the plot (no difference): " + "; ".join(left_out) + "."))
    family = family_size(vrows)
    chance = family_chance(vrows, settings.router_family)
    if chance:
        doc.add(Paragraph(chance))
    routers_shared = settings.router_family == "shared" and any(_router_tested(v) for v in vrows)
    doc.add(Bullets(legend(family, settings, cost_basis, outline, routers_shared)))


STATISTICS_PAGE = "docs/statistics.md"  # the method, the guarantees and their checks (the docs site's page)


def legend(family: int, settings: ReportSettings, cost_basis: str, outline: Outline,
           routers_shared: bool = False) -> list[str]:
    """The answer table's legend in five short lines; the method is on the statistics page."""
    adjusted = (f"; adjusted for {family} decisions" + (" and the routers' claims" if routers_shared else "")
                if family > 1 else "")
    priced = f" (priced by {cost_basis})" if cost_basis else ""
    over = "documents (each document's mean once)" if settings.per_document else "questions"
    return [f"Δ: RAG − long context in points, the mean over {over}; interval over documents at its decision's "
            f"level (every claim at 97%, 98% if cross-fitted{adjusted}).",
            "untested: the row decides nothing (too few documents, or configs chosen on the questions reported on).",
            "docs: the distinct contexts questions were asked over; scores: each chosen config's mean (x100) on Δ's "
            "questions, so RAG − long context = Δ.",
            f"ratios: RAG ÷ long context, cost at {settings.queries_per_doc:g} queries per document{priced}; to "
            "decide: the documents for 80% power.",
            f"Method and guarantees: the statistics page (`{STATISTICS_PAGE}`); the configs compared, the rule and "
            f"the full table: {outline.ref('verdict')}."]


def _router_tested(v: VerdictRow) -> bool:
    return v.router is not None and not getattr(v.router, "gated", False)


def family_chance(vrows: list[VerdictRow], router_family: str) -> str:
    """The chance of any wrong statement on the screen, under the family setting in force (experiments.report.
    verdict.family): "" when the screen decides nothing."""
    decisions = family_size(vrows)
    routers = sum(_router_tested(v) for v in vrows)
    if not decisions and not routers:
        return ""
    arms = f"{decisions} arm decision{'s' if decisions != 1 else ''}"
    if not routers:
        return (f"**Chance of any wrong decision on this screen: at most 5%** ({arms}, Holm's procedure at 5%).")
    claims = f"{routers} router claim{'s' if routers != 1 else ''}"
    if router_family == "shared":
        return (f"**Chance of any wrong statement on this screen: at most 5%** ({arms} and {claims} in one family "
                "at 5%, `router_family: shared`).")
    return (f"**Chance of any wrong statement on this screen: at most 10%**: at most 5% for the {arms} and 5% for "
            f"the {claims}, each family at 5% (`router_family: own`; `shared` keeps both within one 5%, at some cost "
            "in the routers' power).")


SHOWN = 4  # names shown per loss on the first screen (metrics.json keeps them all, up to 50)
NAME_CHARS = 160  # a longer name is cut


def _names(names: list[str], count: int) -> str:
    names = [n.replace("`", "'") for n in names]  # each is shown as a code span
    shown = "; ".join(f"`{n}`" if len(n) <= NAME_CHARS else f"`{n[:NAME_CHARS - 3]}...`" for n in names[:SHOWN])
    return shown + (f" (+{count - min(len(names), SHOWN)} more)" if count > min(len(names), SHOWN) else "")


def cut_line(c: CutRow) -> str:
    """One config's documents cut to fit the window, and the questions whose evidence went with them."""
    window = f"the {c.window:,}-token window" if c.window else "the window"
    if c.n_documents_cut is None:
        head = f"{c.config} cut the context of {c.questions_cut} of {c.questions} questions to fit {window}"
    else:
        docs = "; ".join(f"`{str(d['document']).replace('`', chr(39))}` ({kept_words(d)})"
                         for d in c.documents_cut[:SHOWN])
        more = f"; +{c.n_documents_cut - SHOWN} more" if c.n_documents_cut > SHOWN else ""
        head = (f"{c.config} cut {c.n_documents_cut} of {c.documents} documents to fit {window}: {docs}{more}")
    if c.n_evidence_lost:
        tail = (f"the evidence of **{c.n_evidence_lost} of {c.questions_with_evidence} questions** was cut away "
                f"({c.n_evidence_gone} wholly): {_names(c.evidence_lost, c.n_evidence_lost)}")
    elif c.questions_with_evidence:
        tail = "no question's evidence was cut away"
    else:
        tail = "no evidence quotes say whether answers were lost with it"
    return f"{c.benchmark}: {head}; {tail}."


def loss_line(row: LoadLossRow) -> str:
    """One kind of load-time loss, counted and named."""
    named = f": {_names(row.names, row.count)}" if row.names else ""
    return f"{row.benchmark}: {row.count} {row.kind}{named}" + (f" ({row.hint})" if row.hint else "") + "."


def add_losses(doc: Document, lost: Losses | None) -> None:
    """What was lost before scoring, under the answer: documents cut to fit the window, and what the load left
    out or read doubtfully (experiments/report/losses.py computes the rows)."""
    if not lost:
        return
    doc.add(Paragraph("**Lost before scoring** (the answer above is over what was left):"),
            Bullets([cut_line(c) for c in lost.cuts] + [loss_line(r) for r in lost.load]))


def add_data_mix(doc: Document, sets: list[DataSet]) -> None:
    """On the first screen, where the report pooled runs over different documents or questions (--pool-data):
    the data sets and their folders."""
    if sets:
        doc.add(Paragraph(f"**Pooled {len(sets)} different sets of documents or questions** (--pool-data; each "
                          "config point's questions are the union of theirs):"),
                Bullets([f"{s.folders[0]}: {s.fingerprint} ({s.runs} run(s))" for s in sets]))


def add_timing_notes(doc: Document, notes: list[str]) -> None:
    """How the runs' costs were not measured alike (experiments/report/timing_notes.py), under the answer."""
    if notes:
        doc.add(Paragraph("**Costs not measured alike** (the cost ratios above mix them):"), Bullets(notes))


def add_overview(doc: Document, ov: Overview, sections: list[str]) -> None:
    """What the report read (config points, records, merged or skipped run dirs, imported predictions)
    and its contents."""
    doc.add(Paragraph(
        f"{ov.config_points} config points ({', '.join(f'{n} {a}' for a, n in ov.arms.items())}) on "
        f"{', '.join(ov.scopes)} with {', '.join(ov.generators)}; {ov.records} records."
        + (f" {ov.duplicates} duplicate run(s) merged." if ov.duplicates else "")
        + (f" {ov.missing} run dir(s) without records.jsonl left out." if ov.missing else "")))
    if ov.imported:
        doc.add(Paragraph(
            "Imported predictions (`python -m experiments.import`): " + "; ".join(
                f"{m.format} from {m.path}, scored with `{m.metric}`" for m in ov.imported)
            + ". Tokens, latency and cost are shown only where the files gave them. A judge-free stand-in for a "
            "benchmark's LLM judge (e.g. `lara_auto`) is not comparable with the benchmark's published numbers."))
    doc.add(Bullets(sections))
