"""The verdict section: how it was reached, its table (one row per benchmark and length level, computed in
experiments.report.decision_order), the notes of the rows that need one, and the naive same-sample picks."""

from __future__ import annotations

from typing import Any

from experiments.report.page.cells import fmt, pct, ratio
from experiments.report.page.contents import Outline
from experiments.report.page.document import Bullets, Document, Heading, Paragraph, Table
from experiments.report.page.report_summary import Facts, Summary
from experiments.report.page.verdict_cells import cost_cell, delta_cell, family_size
from experiments.report.settings import ReportSettings
from experiments.report.verdict.decision import ALPHA, MIN_DOCUMENTS
from experiments.report.verdict.family import ROUTER_SHARE
from experiments.report.verdict_row import VerdictRow

ANCHOR, TITLE = "verdict", "Verdict"


def rows(f: Facts) -> None:
    """Nothing of its own: the verdict rows (the decisions) and their plans are the Summary's, shared with the first
    screen, the other sections and verdict.csv."""
    return None


def render(doc: Document, s: Summary, outline: Outline) -> None:
    """How the verdict was reached, its table, the notes of the rows that need one, and the naive same-sample
    picks where they differ."""
    doc.add(Heading(3, "How the verdict was reached"), Paragraph(how_reached(s.settings)),
            Paragraph(family_sentence(s.vrows, s.settings.router_family)))
    doc.add(Table(*verdict_table(s.vrows, s.plans)))
    notes = row_notes(s.vrows, s.plans)
    if notes:
        doc.add(Bullets(notes))
    naive = [[v.benchmark, v.level, c.naive_lc.label, c.naive_rag.label, fmt(c.naive_diff, 1)]
             for v in s.vrows if (c := v.comparison).naive_picks_matter and c.naive_lc is not None
             and c.naive_rag is not None]
    if naive:
        doc.add(Paragraph("Naive same-sample picks (not selection-adjusted: the configs were chosen and scored on all "
                          "samples, so with many configs the difference is biased towards the luckiest one; shown for "
                          "reference only, never used for the decision):"),
                Table(["benchmark", "level", "long context", "RAG", "Δ RAG−LC (same samples)"], naive))


def _selection_cell(v: VerdictRow) -> str:
    """The selection in a few words (verdict.csv and the notes below the table have it in full)."""
    c = v.comparison
    if c.selection.startswith("cross-fitted"):
        return f"cross-fitted, halves agree in {pct(c.halves_agreement)} of splits"
    return c.selection.split(":")[0] or "-"


def family_sentence(vrows: list[VerdictRow], router_family: str = "own") -> str:
    """How many decisions the report makes, how their family-wise error is controlled, and when the routers
    were tested."""
    m = family_size(vrows)
    held = [v for v in vrows
            if v.tested and v.decision and v.decision.why.startswith("the row's own interval alone says")]
    routers = [v.router for v in vrows if v.router is not None]
    gated = sum(r.gated for r in routers)
    if m <= 1:
        text = ("This report makes at most one arm decision (one row with an interval from honestly chosen configs and "
                f"at least {MIN_DOCUMENTS} documents), so no correction for multiple decisions is needed.")
    else:
        text = (f"**{m} decisions, one family**: the rows with an interval from honestly chosen configs, at least "
                f"{MIN_DOCUMENTS} documents and not at the floor or ceiling. Holm's step-down procedure on each "
                "decision's boundary test keeps the chance that any decision is wrong at 5% (p_decision and "
                "adjusted p_holm in verdict.csv); the interval a tested row shows is adjusted to the same level "
                "(its confidence beside it), so it clears its boundary exactly when the decision stands. The "
                "documents under \"to decide\" are planned by simulating this rule. "
                + (f"{len(held)} row(s) whose own interval decides are shown inconclusive after the correction."
                   if held else "No decision was withdrawn by the correction."))
    if routers:
        text += (" **The routers speak when the arms tie**: the learned routers' claims (router beats the better arm "
                 "by more than the tolerance) form their own family beside the arm decisions, tested whatever the "
                 "arms decide: "
                 + ("Holm at 5% (`router_family: own`): the chance of any wrong route is at most 5%, as is that of any "
                    "wrong arm decision (10% for a wrong statement of either kind); "
                    if router_family == "own" else
                    f"one 5% for both (`router_family: shared`): the arm decisions start at "
                    f"{100 * ALPHA * (1 - ROUTER_SHARE):g}% and the routers at {100 * ALPHA * ROUTER_SHARE:g}%, Holm "
                    "within each, and a family whose every claim stands passes its whole level to the other (a "
                    "Bonferroni-based graph, Bretz et al. 2009): the chance of any wrong statement stays at 5%; ")
                 + (f"{gated} of {len(routers)} routers were not tested: their row decides nothing."
                    if gated else "every router was tested."))
    return text


def how_reached(settings: ReportSettings) -> str:
    """How the verdict was reached: the choice of configs, cross-fitting, the interval, the decision rule."""
    return (
        "Per benchmark and length level: the best long-context config against the cheapest RAG config that is within "
        f"{settings.tolerance:g} points of the best RAG config (cost per answer including indexing over "
        f"{settings.queries_per_doc:g} queries per document; costs measured as time count as equal when their gap is "
        "within the measurement's noise, and then the better-scoring config is taken), so the RAG config shown never "
        "scores below one it could have taken by more than the tolerance. "
        "**Configs are chosen without looking at the samples reported on, and every document counts "
        "(cross-fitting)**: when an arm has several configs, the documents are split in two halves by a seeded hash; "
        "the configs chosen on each half are scored on the other half, and the paired differences of both halves are "
        "pooled into Δ (RAG minus long context, points) over all documents. One split is one draw, so it is repeated "
        f"over {settings.splits} splits (seeds {settings.seed} and up) and averaged, with a variance "
        "that counts how much the split moves the estimate. The configs named are the choice on all documents (what "
        "to deploy); the selection column says in how many splits both halves chose them too. The scores are on the "
        "basis Δ is on, so that RAG − long context = Δ: on a cross-fitted row each half's choice scored on the other "
        "half, averaged over the splits as Δ is; with one config per arm, the samples both arms answered. Where a "
        "config's own mean on all its samples differs, it follows in brackets (\"all\": not selection-adjusted, "
        "so not the basis of Δ). The interval of a cross-fitted row comes from a paired cluster "
        "bootstrap that resamples whole documents within each half, repeats both halves' choices in every resample "
        "and adds each chosen pair's resampled deviation from its own mean; its standard error (each half's scaled by "
        "sqrt(h/(h-1))) makes a t interval with G-2 degrees of freedom when documents have as many questions. With "
        "one config per arm nothing is chosen and the interval is the mean over questions with the CR2 standard "
        "error over documents and Bell-McCaffrey's degrees of freedom (G-1 when documents have as many questions, "
        "fewer when a few documents hold most of them; the cross-fit's degrees of freedom are corrected the same "
        "way), since questions about one document rise and fall together; where the arms disagree in few documents, "
        "an exact bound from the count of discordant answers joins the interval. Nothing is decided below "
        f"{MIN_DOCUMENTS} documents, on any path. The **decision** is a one-sided test of the interval's boundary, "
        "every claim at 1.5% (its 97% interval; 1% and 98% where the configs were cross-fitted), whichever arm is "
        f"cheaper, not the point estimate: `rag` when RAG is better (interval above 0) or no more than "
        f"{settings.tolerance:g} "
        f"points worse (lower end above -{settings.tolerance:g}) and cheaper; "
        "`longctx` when long context is better by more than the tolerance, or no more than the tolerance worse and "
        "cheaper; `inconclusive` when the interval allows both; `no_decision` when "
        f"both chosen configs answer at most {100 * settings.floor_share:g}% of questions correctly (score >= "
        f"{settings.correct_threshold:g}), or at least {100 - 100 * settings.floor_share:g}%: a model at the floor or "
        "ceiling cannot tell the arms apart. Ratios are RAG / long context. The oracle router takes, per sample, the "
        "better of the best long-context and the best RAG config (ties counted as ties); with one noisy answer per "
        "arm that includes luck (an upper bound inflated by it), so the report compares routers with the "
        "by-document benchmark (each question answered by the arm that did better on the other questions of its "
        "document: a benchmark a router can beat, not a bound). "
        "**To decide**: the documents a sweep needs to decide the difference that matters with 80% power, found by "
        "simulating this whole rule (`python -m experiments.plan`).")


def verdict_table(vrows: list[VerdictRow], plans: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """The verdict table: its head and one row of cells per verdict row."""
    head = ["benchmark", "level", "decision", "long context", "score", "RAG", "score", "Δ RAG−LC [interval]",
            "documents", "n", "correct (RAG / LC)", "prompt-token ratio", "latency ratio", "cost ratio",
            "oracle router", "selection", "to decide", "recommendation"]
    table = []
    for v, plan in zip(vrows, plans, strict=True):
        delta = "-" if v.diff is None else (f"{v.diff:+.1f} (one document: no interval)"
                                            if v.n_groups < 2 or v.ci is None else delta_cell(v))
        oracle = "-" if v.oracle is None else (f"{v.oracle.score:.1f} ({100 * v.oracle.share_first:.0f}% RAG, "
                                               f"{100 * v.oracle.share_second:.0f}% LC, "
                                               f"{100 * v.oracle.share_tie:.0f}% tie)")
        c = v.comparison
        shares = c.known_correct_shares
        correct = "-" if shares is None else f"{pct(shares[0])} / {pct(shares[1])}"
        table.append([v.benchmark, v.level, f"**{v.decision.kind}**" if v.decision else "-",
                      v.lc.label if v.lc else "-", score_cell(c.lc_score, c.lc_own_score),
                      v.rag.label if v.rag else "-", score_cell(c.rag_score, c.rag_own_score), delta,
                      str(v.n_groups), str(c.n_shared), correct, ratio(c.token_ratio), ratio(c.latency_ratio),
                      cost_cell(v), oracle, _selection_cell(v), plan["column"], v.words.recommendation])
    return head, table


def score_cell(score: float | None, own: float | None) -> str:
    """"25.0 (all 37.5)": the score on Δ's basis, and the config's own mean on all its samples where it differs."""
    if own is None or score is None or f"{own:.1f}" == f"{score:.1f}":
        return fmt(score, 1)
    return f"{score:.1f} (all {own:.1f})"


def row_notes(vrows: list[VerdictRow], plans: list[dict[str, Any]]) -> list[str]:
    """A note per row that needs one: what would decide an inconclusive row, halves that chose differently."""
    notes = []
    for v, plan in zip(vrows, plans, strict=True):
        to_decide = plan["sentence"] if v.decision and v.decision.kind == "inconclusive" else ""
        halves = f"Selection: {v.comparison.selection}." if v.comparison.halves_agree is False else ""
        if to_decide or halves:
            notes.append(f"{v.benchmark} {v.level}: " + " ".join(x for x in (to_decide, halves) if x))
    return notes
