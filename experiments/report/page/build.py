"""Many run directories -> the decision report: report.md, report.html (same content, plots
embedded), summary.csv (one row per config), verdict.csv, whatif.csv, agreement.csv (long context vs
the best RAG config per question, per benchmark and length level) and the plots as PNG files.

    python -m experiments.report outputs/demo
    python -m experiments.report outputs/multirun/2026-01-01_10-00-00 outputs/runs/other_run --out my_report
    python -m experiments.report outputs/demo --tolerance 1 --queries-per-doc 50 --price-in 3 --price-out 15
    python -m experiments.report outputs/demo --gpu-hour-price 2.5 --latency-target 2

Defaults come from conf/report.yaml (or --settings FILE); flags override them.

The report opens with the answer (experiments.report.page.first_screen): one line of values per benchmark
and length level, and the forest plot of the same rows (verdict_forest.png). Sections: 1 verdict per
benchmark and length level, how it was reached (best long context vs the cheapest RAG config within
the tolerance, paired bootstrap, ratios, one sentence of advice, the oracle router);
2 deployment what-if (cost per 1,000 answers with indexing, break-even queries per document,
latency target); 3 plots; 4 diagnostics; 5 reproducibility.

Longer than most modules on purpose: it lays out the sections of one document (markdown, HTML and
CSV from the same rows); the computations live in the modules it imports.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from experiments.report.plots import figures as plots
from experiments.report.diagnostics import Diagnostics, diagnose
from experiments.report.page.first_screen import add_answer, add_overview, delta_cell
from experiments.report.verdict.power import plan_rows
from experiments.report.pricing import Pricing
from experiments.report.page.document import (Bullets, Code, Document, Heading, Image, Paragraph, Table, to_html,
                                              to_markdown)
from experiments.report.settings import ReportSettings, load_settings
from experiments.report.reproducibility import provenance, shared_config
from experiments.versions import package_versions
from experiments.report.runs import Run, dedupe, find_runs
from experiments.report.summary import SHARE_COLUMNS, summary_rows
from experiments import records as schema
from experiments.report.verdict.oracle import mean_prompt_tokens
from experiments.report.page.router import router_section
from experiments.report.router.evaluate import write_routers
from experiments.report.other_arms import ArmBest, other_arm_specs, other_arms
from experiments.report.overlap import overlap_section, question_groups, split_rows
from experiments.report.pairwise import PairwiseRow, apply_pairwise, pairwise_rows, waiting
from experiments.report.verdict.rows import VerdictRow, budget_pairs, oracle_rows, overall_row, verdicts
from experiments.report.whatif import WhatIfRow, what_if

SECTIONS = {"verdict": "1. Verdict", "whatif": "2. Deployment what-if", "plots": "3. Plots",
            "diagnostics": "4. Diagnostics", "reproducibility": "5. Reproducibility"}


def _fmt(v: Any, digits: int = 2) -> str:
    if v is None or v == "":
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def _usd(v: float | None) -> str:
    if v is None:
        return "-"
    if v == 0:
        return "$0"
    return f"${v:.4f}" if v >= 0.01 else f"${v:.2e}"


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.0f}%"


def _ratio(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


def default_out_dir(paths: list[str]) -> Path:
    resolved = [Path(p).resolve() for p in paths]
    if len(resolved) == 1 and not (resolved[0] / "metrics.json").exists():
        return resolved[0]  # a multirun folder: the report sits beside its runs
    return Path(os.path.commonpath([p.parent if (p / "metrics.json").exists() else p for p in resolved]))


def _disambiguate(runs: list[Run]) -> None:
    """Scope verdicts by generator when a report mixes them; make labels unique within a scope."""
    # retrieval-only runs (no generator) do not split a report into scopes
    if len({r.knobs.get("generator") for r in runs if not r.retrieval_only}) > 1:
        for r in runs:
            r.scope_override = f"{r.benchmark} / {r.knobs.get('generator')}"
    seen = Counter((r.scope, r.config_label) for r in runs)
    for r in runs:
        if seen[(r.scope, r.config_label)] > 1:
            r.label_suffix = f" #{str(r.metrics.get('config_hash', ''))[:6] or r.path.name}"


def _arm_best(best: ArmBest | None) -> str:
    """An other-arms cell: the score and config of an arm's best run (a routing arm's share routed to long context)."""
    if best is None:
        return "-"
    routed = "" if best.longctx_share is None else f", {_pct(best.longctx_share)} to long context"
    return f"{best.score:.1f} ({best.run.label}{routed})"


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    fields: list[str] = []
    for row in rows:
        fields += [k for k in row if k not in fields]
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


# ---------------------------------------------------------------- sections


def pairwise_section(doc: Document, prows: list[PairwiseRow], unjudged: int) -> None:
    """Questions without references: RAG's answers against long context's, judged in both orders."""
    if not prows and not unjudged:
        return
    doc.add(Heading(3, "Questions without references: pairwise preference", "pairwise"), Paragraph(
        "Questions with neither reference answers nor evidence are scored by a judge that compares RAG's answer with "
        "long context's (`python -m experiments.pairwise`): asked twice, the answers shown in both orders and never "
        "named; a preference counts only when both orders agree, and one that flips with the order is a tie. In the "
        "verdict such questions score 1 (RAG preferred), 0.5 (tie) or 0 (long context preferred) for RAG and 0.5 for "
        "long context, so Δ is half the net preference, (wins − losses) / 2, in points. Judges favour longer "
        "answers: read the win rate beside the answer lengths."))
    if unjudged:
        doc.add(Paragraph(f"{unjudged} answer(s) wait for a pairwise judgment and are left out of every score: run "
                          "`python -m experiments.pairwise RUN_DIRS --judge-model MODEL`, then the report again."))
    rows = [[r.benchmark, r.rag, r.longctx, str(r.n), str(r.documents), _pct(r.win), _pct(r.tie), _pct(r.loss),
             _pct(r.flipped), f"{r.net:+.1f}" + (f" [{r.ci[0]:+.1f}, {r.ci[1]:+.1f}]" if r.ci else " (one document)"),
             f"{r.words_rag:.0f} / {r.words_longctx:.0f}", str(r.no_judgment)] for r in prows]
    if rows:
        doc.add(Table(["benchmark", "RAG", "long context", "questions", "documents", "RAG wins", "ties", "LC wins",
                       "order flips", "wins − losses, % [95% CI]", "words (RAG / LC)", "no judgment"], rows))


def _selection_cell(v: VerdictRow) -> str:
    """The selection in a few words (verdict.csv and the notes below the table have it in full)."""
    if v.selection.startswith("cross-fitted"):
        return "cross-fitted, " + ("halves agree" if v.halves_agree else "halves differ")
    return v.selection.split(":")[0] or "-"


def family_sentence(vrows: list[VerdictRow]) -> str:
    """How many tests the report makes and how their family-wise error is controlled."""
    m = max((v.family_size for v in vrows), default=0)
    if m <= 1:
        return ("This report makes at most one decision (one row with an interval from honestly chosen configs), so "
                "no correction for multiple decisions is needed.")
    held = [v for v in vrows if v.tested and v.decision and v.decision.why.startswith("the 95% interval alone says")]
    routers = sum(v.router is not None for v in vrows)
    members = ("the rows with an interval from honestly chosen configs and not at the floor or ceiling"
               + (f", and {routers} learned router(s)' test of beating the better arm by more than the tolerance "
                  "(`route`, below)" if routers else ""))
    return (f"**{m} tests, one family**: {members}. Holm's step-down procedure on each test of its decision "
            "boundary keeps the chance that any decision is wrong at 5% (p_decision and Holm-adjusted p_holm in "
            "verdict.csv; router_p_holm for the routers); the intervals shown are each row's own 95% interval, and "
            "the documents under \"to decide\" are planned for a row on its own (with the correction a row may need "
            "somewhat more). "
            + (f"{len(held)} row(s) whose interval alone decides are shown inconclusive after the correction."
               if held else "No decision was withdrawn by the correction."))


def verdict_section(doc: Document, vrows: list[VerdictRow], runs: list[Run], settings: ReportSettings,
                    summary: list[dict[str, Any]], levels: list[str], ns: list[str],
                    plans: list[dict[str, Any]]) -> None:
    doc.add(Heading(2, SECTIONS["verdict"], "verdict"), Heading(3, "How the verdict was reached"), Paragraph(
        "Per benchmark and length level: the best long-context config against the cheapest RAG config that is within "
        f"{settings.tolerance:g} points of it (cost per answer including indexing over {settings.queries_per_doc:g} "
        "queries per document; when no RAG config is that close, the best RAG config). **Configs are chosen without "
        "looking at the samples reported on, and every document counts (cross-fitting)**: when an arm has several "
        f"configs, the documents are split in two halves by a seeded hash (seed {settings.seed}); the configs chosen "
        "on each half are scored on the other half, and the paired differences of both halves are pooled into Δ "
        "(RAG minus long context, points) over all documents. Choosing and scoring on the same samples would favour "
        "the luckiest of many configs; scoring on one half only (split-half) would waste half of the documents. The "
        "configs named are the choice on all documents (what to deploy); the selection column says whether both "
        "halves chose them too, and the scores are the cross-fitted ones. The 95% interval is a paired cluster "
        f"bootstrap that resamples whole documents within each half ({settings.resamples} resamples), repeats both "
        "halves' choices in every resample and adds each chosen pair's resampled deviation from its own mean, so it "
        "includes how the choice and the scores move together; it is widened like a t interval when there are few "
        "documents, since questions about one document rise and fall together. The "
        "**decision** is read from the interval, not the point estimate: `rag` when RAG is better (interval above 0) "
        f"or no more than {settings.tolerance:g} points worse (lower end above -{settings.tolerance:g}) and cheaper; "
        "`longctx` when long context is better by more than the tolerance, or no more than the tolerance worse and "
        "cheaper; `inconclusive` when the interval allows both; `no_decision` when "
        f"both chosen configs answer at most {100 * settings.floor_share:g}% of questions correctly (score >= "
        f"{settings.correct_threshold:g}), or at least {100 - 100 * settings.floor_share:g}%: a model at the floor or "
        "ceiling cannot tell the arms apart. Ratios are RAG / long context. The oracle router takes, per sample, the "
        "better of the best long-context and the best RAG config (ties counted as ties): no router can do better. "
        "**To decide**: the documents a sweep needs to decide the observed difference with 80% power "
        "(`python -m experiments.plan`)."), Paragraph(family_sentence(vrows)))
    head = ["benchmark", "level", "decision", "long context", "score", "RAG", "score", "Δ RAG−LC [95% CI]", "documents",
            "n", "correct (RAG / LC)", "prompt-token ratio", "latency ratio", "cost ratio", "oracle router",
            "selection", "to decide", "recommendation"]
    rows = []
    for v, plan in zip(vrows, plans):
        delta = "-" if v.diff is None or v.ci is None else (f"{v.diff:+.1f} (one document: no interval)"
                                                            if v.n_groups < 2 else delta_cell(v))
        oracle = "-" if v.oracle is None else (f"{v.oracle.score:.1f} ({100 * v.oracle.share_first:.0f}% RAG, "
                                               f"{100 * v.oracle.share_second:.0f}% LC, "
                                               f"{100 * v.oracle.share_tie:.0f}% tie)")
        shares = v.known_correct_shares
        correct = "-" if shares is None else f"{_pct(shares[0])} / {_pct(shares[1])}"
        rows.append([v.benchmark, v.level, f"**{v.decision.kind}**" if v.decision else "-", v.lc.label if v.lc else "-",
                     _fmt(v.lc_score, 1), v.rag.label if v.rag else "-", _fmt(v.rag_score, 1), delta, str(v.n_groups),
                     str(v.n_shared), correct, _ratio(v.token_ratio), _ratio(v.latency_ratio), _ratio(v.cost_ratio),
                     oracle, _selection_cell(v), plan["column"], v.recommendation])
    doc.add(Table(head, rows))
    notes = []
    for v, plan in zip(vrows, plans):
        to_decide = plan["sentence"] if v.decision and v.decision.kind == "inconclusive" else ""
        halves = f"Selection: {v.selection}." if v.halves_agree is False else ""
        if to_decide or halves:
            notes.append(f"{v.benchmark} {v.level}: " + " ".join(x for x in (to_decide, halves) if x))
    if notes:
        doc.add(Bullets(notes))
    naive = [[v.benchmark, v.level, v.naive_lc.label, v.naive_rag.label, _fmt(v.naive_diff, 1)]
             for v in vrows if v.naive_picks_matter]
    if naive:
        doc.add(Paragraph("Naive same-sample picks (not selection-adjusted: the configs were chosen and scored on all "
                          "samples, so with many configs the difference is biased towards the luckiest one; shown for "
                          "reference only, never used for the decision):"),
                Table(["benchmark", "level", "long context", "RAG", "Δ RAG−LC (same samples)"], naive))

    # Other arms: floors, routers and controls, per level.
    other = [[o.benchmark, o.level, _fmt(o.lc_score, 1), *(_arm_best(b) for b in o.best),
              _fmt(o.oracle_score, 1)] for o in other_arms(vrows, runs)]
    if other:
        doc.add(Heading(3, "Other arms"), Paragraph(
            "Closed book (no context) is the memorisation floor; Self-Route tries RAG and falls back to long context "
            "when the model declines; budget-matched long context gets the same token budget as a RAG config, "
            "separating \"less text\" from \"better text\"."),
            Table(["benchmark", "level", "long context", *(s.display() for s in other_arm_specs()),
                   "budget-matched long context", "oracle router"], other))

    pairs = budget_pairs(runs, settings)
    if pairs:
        doc.add(Heading(3, "Same token budget: better text or less text?"), Paragraph(
            "Long context cut to a RAG config's token budget (its spec's: top_k x chunk_size for plain RAG) against "
            "that RAG config. Full long "
            "context minus the budget-matched run is what the extra text is worth; RAG minus the budget-matched run is "
            "what choosing the text (retrieval) is worth at equal length."),
            Table(["benchmark", "budget tokens", "RAG", "score", "budget-matched long context", "score",
                   "Δ RAG−budget LC [95% CI]", "n", "full long context"],
                  [[p.benchmark, str(p.budget), p.rag.label, _fmt(p.rag_score, 1), p.budget_lc.label,
                    _fmt(p.budget_lc_score, 1),
                    "-" if p.diff is None else f"{p.diff:+.1f} [{p.ci[0]:+.1f}, {p.ci[1]:+.1f}]", str(p.n_shared),
                    _fmt(p.full_lc_score, 1)] for p in pairs]))

    doc.add(Heading(3, "All configs"), Paragraph(
        "Scores are the benchmark's primary metric x100; a sample an arm could not serve (skipped) counts 0, failed "
        "samples are left out. recall@n: share of gold evidence spans in the top-n retrieved chunks; in prompt: share "
        "of gold evidence in the RAG prompt; retained: share that survived long-context truncation. Where a "
        "benchmark's evidence is whole documents (Loong), the same figures count gold documents and are named doc "
        "recall@n, docs in prompt and docs retained: a document counts when any chunk of it does. Retrieval-only "
        "runs (no generator) show recall without a score."))
    doc_ns = [c.split("@")[1] for c in (summary[0] if summary else {}) if c.startswith("doc_recall@")]
    shares = [k for k in schema.SHARE_KEYS if any(k in row for row in summary)]
    official = any(row.get("official_rule") for row in summary)
    head = ["config", "benchmark", "score", *(["official"] if official else []), *[f"score {lvl}" for lvl in levels],
            *[f"recall@{n}" for n in ns],
            *[f"doc recall@{n}" for n in doc_ns], *[SHARE_COLUMNS[k] for k in shares],
            "prompt tokens", "latency s", "cost/answer", "n", "skipped", "failed"]
    table = []
    for row in summary:
        table.append([row["config"], row["benchmark"], _fmt(row["score"], 1),
                      *([_fmt(row["official"], 1) if row["official_rule"] else ""] if official else []),
                      *[_fmt(row[f"score_{lvl}"], 1) for lvl in levels],
                      *[_fmt(row[f"recall@{n}"]) for n in ns], *[_fmt(row[f"doc_recall@{n}"]) for n in doc_ns],
                      *[_fmt(row.get(k)) for k in shares], _fmt(row["prompt_tokens_mean"], 0),
                      _fmt(row["latency_s_mean"]),
                      _usd(row["cost_per_answer_usd"]), _fmt(row["n"]), _fmt(row["skipped"]), _fmt(row["failed"])])
    for v in oracle_rows(vrows):
        table.append([f"oracle router (virtual: {v.best_rag.label} | {v.lc.label})", v.benchmark,
                      _fmt(v.oracle.score, 1), *([""] if official else []), *["" for _ in levels],
                      *["" for _ in ns],
                      *["" for _ in doc_ns], *["" for _ in shares], "", "", "", str(v.oracle.n), "", ""])
    doc.add(Table(head, table))
    rules = sorted({(row["benchmark"], row["official_rule"]) for row in summary if row.get("official_rule")})
    if rules:
        doc.add(Paragraph(
            "official: the benchmark's own aggregate beside the sample mean (score), which the verdict compares. "
            + " ".join(f"{rule}." for _, rule in rules)
            + " A dash: the benchmark defines no single figure for this mix of tasks (per-task figures in "
              "summary.csv)."))
    capped = [row for row in summary if row.get("answers_cut_share")]
    if capped:
        doc.add(Paragraph(
            "Answers cut at the token limit (the generator stopped at the benchmark's max_new_tokens, finish_reason "
            "length): " + "; ".join(f"{row['config']} {_pct(row['answers_cut_share'])}" for row in capped)
            + ". A cut answer may miss what it was about to say, so such a config's score can understate it; "
            "compare arms only where their shares are alike, or raise benchmark.max_new_tokens."))
    cut = [row for row in summary if row.get("embedder_truncated_share")]
    if cut:
        doc.add(Paragraph(
            "Embedder input limit: in these configs the embedder read only the start of some chunks, so their "
            "retrieval ranks chunks by their first tokens (share of chunks longer than the embedder's limit, in "
            "its own tokens): " + "; ".join(
                f"{row['config']} {_pct(row['embedder_truncated_share'])} over {row['embedder_input_limit']} tokens"
                for row in cut) + ". Smaller chunks, or an embedder that reads more, compare chunk sizes fairly."))


def whatif_section(doc: Document, rows: list[WhatIfRow], pricing: Pricing, settings: ReportSettings) -> None:
    target = ("no latency target" if settings.latency_target_s is None
              else f"a mean latency target of {settings.latency_target_s:g} s")
    doc.add(Heading(2, SECTIONS["whatif"], "whatif"), Paragraph(
        f"At **{settings.queries_per_doc:g} queries per document** for every arm and {target}, over all samples of "
        "each benchmark. Cost per 1,000 answers = 1000 x (generation cost per answer + indexing cost per document / "
        "queries per document), for long context **without** a prefix cache (each question pays its document's whole "
        "prefill) and **with** one (one prefill per document shared by its questions); RAG is the same in both. "
        "Break-even: queries per document from which the config is cheaper than the best long-context config, "
        "against each (q* = I / (c_long context - c); with a prefix cache (I - P) / (d - c), P one prefill). "
        "Latency: *user s* is what one user waits (retrieval + generation served to that user alone, the whole "
        "prefill included); *charged s* is the machine time an answer costs in the measured batch (its share of a "
        "shared prefill and batched decode, plus retrieval); *index s/doc* is the measured index build time."),
        Paragraph(pricing.describe() + " Measured times come from the machine that ran the sweep."))
    head = ["benchmark", "role", "config", "score", "cost/answer", "indexing/document",
            "cost per 1,000: no prefix cache", "cost per 1,000: with prefix cache", "user s mean", "user s p95",
            "charged s/answer", "index s/doc", "meets target", "break-even q/doc: no prefix cache",
            "break-even q/doc: with prefix cache"]
    table = [[r.benchmark, r.role, r.label, _fmt(r.score, 1), _usd(r.answer_cost), _usd(r.index_cost_per_doc),
              _usd(r.cost_per_1000), _usd(r.cost_per_1000_prefix_cache), _fmt(r.latency_mean), _fmt(r.latency_p95),
              _fmt(r.charged_s_mean), _fmt(r.index_s_per_doc), _fmt(r.meets_target), r.break_even_note or "-",
              r.break_even_prefix_cache_note or "-"] for r in rows]
    doc.add(Table(head, table))


def plots_section(doc: Document, runs: list[Run], vrows: list[VerdictRow], diag: Diagnostics, out: Path) -> list[Path]:
    doc.add(Heading(2, SECTIONS["plots"], "plots"))
    scopes = sorted({r.scope for r in runs})
    written: list[Path] = []
    for scope in scopes:
        mine = [r for r in runs if r.scope == scope]
        slug = "" if len(scopes) == 1 else "_" + "".join(c if c.isalnum() else "-" for c in scope)
        title = "" if len(scopes) == 1 else f" ({scope})"
        if len(scopes) > 1:
            doc.add(Heading(3, scope))
        overall = overall_row(vrows, scope)
        oracle_pt = None
        if overall and overall.oracle and overall.lc and overall.best_rag:
            tokens = mean_prompt_tokens(overall.oracle, overall.best_rag, overall.lc)  # first: the best RAG
            oracle_pt = None if tokens is None else (tokens, overall.oracle.score)
        lc_best = overall.lc_score if overall else None
        made = [
            (plots.score_vs_tokens(mine, out / f"score_vs_prompt_tokens{slug}.png", oracle_pt, title),
             "Score against mean prompt tokens; the dashed line and circled points are the Pareto front.",
             "score vs prompt tokens (no scored run)"),
            (plots.score_by_level(mine, out / f"score_by_length_level{slug}.png", title),
             "Score by length level; bold lines are the best config of each arm.",
             "score by length level (no scored run)"),
            (plots.recall_curves(mine, out / f"recall_at_n{slug}.png", title),
             "Evidence recall@n per retriever and chunk size.", "recall@n (no RAG run with evidence annotations)"),
            (plots.topk_tradeoff(mine, out / f"score_and_recall_vs_top_k{slug}.png", lc_best, title),
             "Score vs top-k beside evidence-in-prompt vs top-k (the rise-then-fall of OP-RAG).",
             "score and recall vs top-k (no RAG run)"),
            (plots.score_by_depth(mine, out / f"score_by_evidence_depth{slug}.png", title),
             "Score by the depth of the evidence in the context, best config of each arm.",
             "score by evidence depth (no scored record with a depth)"),
        ]
        missing = []
        for path, caption, name in made:
            if path is None:
                missing.append(name)
                continue
            written.append(path)
            doc.add(Paragraph(caption), Image(path, path.stem.replace("_", " ")))
        for a in diag.agreements:
            if a.benchmark == scope and a.level == "all":
                p = plots.agreement_matrix(a.both_right, a.only_lc, a.only_rag, a.both_wrong,
                                           out / f"agreement_matrix{slug}.png", title)
                written.append(p)
                doc.add(Paragraph(f"Per-question agreement of long context ({a.lc.label}) and the best RAG config "
                                  f"({a.rag.label})."), Image(p, p.stem.replace("_", " ")))
        if missing:
            doc.add(Paragraph("Not drawn: " + "; ".join(missing) + "."))
    return written


def diagnostics_section(doc: Document, diag: Diagnostics, settings: ReportSettings) -> None:
    doc.add(Heading(2, SECTIONS["diagnostics"], "diagnostics"), Paragraph(
        f"A sample is **correct** when its score is at least {settings.correct_threshold:g} (0..1; `correct_threshold` "
        f"in conf/report.yaml). Its **evidence is in the prompt** when at least {100 * settings.evidence_threshold:g}% "
        "of the gold evidence reached the model: for RAG the retrieved chunks in the prompt, for long context what "
        "survived truncation, for Self-Route the path that answered."))
    doc.add(Heading(3, "Agreement: long context vs best RAG"))
    if diag.agreements:
        rows = []
        for a in diag.agreements:
            n = max(a.n, 1)
            rows.append([a.benchmark, a.level, a.lc.label, a.rag.label, str(a.n),
                         f"{a.both_right} ({a.both_right / n:.0%})",
                         f"{a.only_lc} ({a.only_lc / n:.0%})", f"{a.only_rag} ({a.only_rag / n:.0%})",
                         f"{a.both_wrong} ({a.both_wrong / n:.0%})",
                         "-" if a.same_answer is None else f"{a.same_answer} ({a.same_answer / n:.0%})"])
        doc.add(Table(["benchmark", "level", "long context", "best RAG", "shared", "both right",
                       "only long context right", "only RAG right", "both wrong", "same answer"], rows), Paragraph(
            "\"Only RAG right\" is what a router could add on top of long context; \"only long context right\" is what "
            "retrieval misses. Same answer: the two predictions are equal once normalised (lower case, no punctuation, "
            "articles or extra spaces), whatever their scores."))
    else:
        doc.add(Paragraph("No benchmark has both a scored long-context and a scored RAG run."))
    doc.add(Heading(3, "Correctness given the evidence, distractors, truncation"))
    if diag.evidence:
        rows = []
        for e in diag.evidence:
            rows.append([e.benchmark, e.run.label, str(e.n), _pct(e.evidence_share),
                         f"{_pct(e.p_correct_with)} (n={e.n_with})", f"{_pct(e.p_correct_missed)} (n={e.n_missed})",
                         _pct(e.distractor_rate), _pct(e.truncated_share), _pct(e.evidence_lost_share),
                         _pct(e.evidence_gone_share)])
        doc.add(Table(["benchmark", "config", "n", "evidence in prompt", "P(correct | evidence in prompt)",
                       "P(correct | evidence missed)", "distractor hit rate", "long context truncated",
                       "evidence partly truncated away", "evidence fully truncated away"], rows),
                Paragraph("Distractor hit rate: mean share of the benchmark's known distractors (confusing facts) "
                          "that reached the prompt; \"-\" where the benchmark has none. The truncation columns apply "
                          "to long context only."))
    else:
        doc.add(Paragraph("No answered samples with evidence annotations."))
    if diag.routes:
        doc.add(Heading(3, "Self-Route: which path answered"),
                Table(["benchmark", "config", "n", "answered by long context", "score on RAG path",
                       "score on long-context path"],
                      [[r.benchmark, r.run.label, str(r.n), _pct(r.share_longctx), _fmt(r.score_rag_route, 1),
                        _fmt(r.score_longctx_route, 1)] for r in diag.routes]))


def reproducibility_section(doc: Document, runs: list[Run], out: Path, dupes: dict[str, list[Path]]) -> None:
    doc.add(Heading(2, SECTIONS["reproducibility"], "reproducibility"), Paragraph(
        "Data fingerprint: sha256 of the run's benchmark config and the sorted ids of the samples it recorded "
        "(same fingerprint, same questions). Config hash: the runner's hash of everything that changes the records. "
        "Rerun a config with `python -m experiments.run` and the overrides shown."))
    recorded = [r for r in runs if isinstance(r.metrics.get("versions"), dict)]
    versions = package_versions()
    doc.add(Heading(3, "Package versions"), Paragraph(
        "Recorded by the runs." if recorded and len(recorded) == len(runs) else
        "Of the environment that wrote this report (the runs did not record theirs)."))
    if recorded and len(recorded) == len(runs):
        versions = {k: ", ".join(sorted({str(r.metrics['versions'].get(k)) for r in recorded
                                         if r.metrics['versions'].get(k)}))
                    for k in sorted({k for r in recorded for k in r.metrics["versions"]})}
    doc.add(Table(["package", "version"], [[k, v] for k, v in versions.items()]))
    doc.add(Heading(3, "Runs"))
    rows = []
    for p in provenance(runs):
        try:
            where = os.path.relpath(p.run.path, out)
        except ValueError:
            where = str(p.run.path)
        rows.append([p.run.label, p.run.benchmark, p.config_hash, p.models, p.data_fingerprint, p.dataset_revision,
                     f"`{p.overrides}`" if p.overrides != "-" else "-", str(p.n_records), _fmt(p.wall_s), f"`{where}`"])
    doc.add(Table(["config", "benchmark", "config hash", "models", "data fingerprint", "dataset revision", "overrides",
                   "records", "wall s", "run dir"], rows))
    if dupes:
        doc.add(Paragraph(f"{sum(len(v) for v in dupes.values())} duplicate run(s) of an identical config point were "
                          "merged (the one with the most records is shown): " +
                          ", ".join(f"`{os.path.relpath(p, out)}`" for v in dupes.values() for p in v) + "."))
    common, varying = shared_config(runs)
    if common:
        doc.add(Heading(3, "Config shared by all runs"), Code(common, "yaml"))
        if varying:
            doc.add(Paragraph("Keys that differ between runs (or that some runs lack): "
                              + ", ".join(f"`{k}`" for k in varying) + "."))
    else:
        doc.add(Paragraph("The run directories have no .hydra/config.yaml."))


# ---------------------------------------------------------------- entry points


def build_report(paths: list[str], out_dir: Path | None = None,
                 settings: ReportSettings | None = None) -> dict[str, Path]:
    """Write every report file; return them by name."""
    settings = settings or load_settings()
    runs, dupes = dedupe(find_runs(paths, with_records=True))
    missing = [r.path for r in runs if not r.records]
    if len(missing) == len(runs):
        raise ValueError("no records.jsonl in any run directory: nothing to report on")
    runs = [r for r in runs if r.records]
    runs.sort(key=lambda r: (r.benchmark, r.arm, r.mean_of("prompt_tokens") or 0, r.config_label))
    _disambiguate(runs)
    judged = apply_pairwise(runs)  # questions without references: scores from pairwise judgments
    out = Path(out_dir) if out_dir else default_out_dir(paths)
    out.mkdir(parents=True, exist_ok=True)

    pricing = Pricing(settings, runs)
    summary, levels, ns = summary_rows(runs, pricing)
    vrows = verdicts(runs, pricing, settings)
    wrows = what_if(runs, vrows, pricing, settings)
    diag = diagnose(runs, settings.correct_threshold, settings.evidence_threshold)

    doc = Document("RAG vs long context: decision report")
    plans = plan_rows(vrows, settings)
    images = add_answer(doc, vrows, plans, settings, out)  # the first screen: the answer, then the forest plot
    add_overview(doc, runs, missing, dupes, list(SECTIONS.values()))
    verdict_section(doc, vrows, runs, settings, summary, levels, ns, plans)
    routers = write_routers([v.router for v in vrows if v.router is not None], out)
    router_section(doc, vrows, settings.tolerance)
    pairwise_section(doc, pairwise_rows(judged, settings.resamples, settings.seed), waiting(runs))
    whatif_section(doc, wrows, pricing, settings)
    images += plots_section(doc, runs, vrows, diag, out)
    diagnostics_section(doc, diag, settings)
    splits = split_rows(runs)
    overlap_section(doc, splits, question_groups(runs))
    reproducibility_section(doc, runs, out, dupes)

    files = {"report.md": out / "report.md", "report.html": out / "report.html", "summary.csv": out / "summary.csv",
             "verdict.csv": out / "verdict.csv", "whatif.csv": out / "whatif.csv",
             "agreement.csv": out / "agreement.csv"}
    files["report.md"].write_text(to_markdown(doc), encoding="utf-8")
    files["report.html"].write_text(to_html(doc), encoding="utf-8")
    _write_csv(files["summary.csv"], summary)
    _write_csv(files["verdict.csv"], [{**v.as_csv(), "to_decide": p["column"], "to_decide_sentence": p["sentence"]}
                                      for v, p in zip(vrows, plans)])
    _write_csv(files["whatif.csv"], [{k: getattr(w, k) for k in w.__dataclass_fields__} for w in wrows])
    _write_csv(files["agreement.csv"], [a.as_csv() for a in diag.agreements])
    if splits:
        files["overlap.csv"] = out / "overlap.csv"
        _write_csv(files["overlap.csv"], [r.as_csv() for r in splits])
    files.update({p.name: p for p in images + routers})
    return files


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.report", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dirs", nargs="+", help="multirun folders and/or run folders (each with metrics.json)")
    ap.add_argument("--out", type=Path, default=None, help="where to write (default: beside the runs)")
    ap.add_argument("--settings", type=Path, default=None, help="report settings YAML (default: conf/report.yaml)")
    ap.add_argument("--tolerance", type=float, help="points (x100) RAG may trail long context and still match it")
    ap.add_argument("--queries-per-doc", type=float, help="queries per indexed document in the what-if")
    ap.add_argument("--price-in", type=float, help="USD per million prompt tokens")
    ap.add_argument("--price-out", type=float, help="USD per million completion tokens")
    ap.add_argument("--gpu-hour-price", type=float, help="USD per GPU hour (prices generation by measured latency)")
    ap.add_argument("--latency-target", type=float, help="mean latency target in seconds")
    ap.add_argument("--correct-threshold", type=float, help="score (0..1) from which a sample counts as correct")
    ap.add_argument("--evidence-threshold", type=float, help="share of gold evidence that counts as retrieved")
    ap.add_argument("--router-points-per-1k-tokens", type=float,
                    help="score points the learned router gives up to save 1,000 prompt tokens per answer (default 0)")
    args = ap.parse_args(argv)
    try:
        settings = load_settings(args.settings, tolerance=args.tolerance, queries_per_doc=args.queries_per_doc,
                                 price_in=args.price_in, price_out=args.price_out, gpu_hour_price=args.gpu_hour_price,
                                 latency_target_s=args.latency_target, correct_threshold=args.correct_threshold,
                                 evidence_threshold=args.evidence_threshold,
                                 router_points_per_1k_tokens=args.router_points_per_1k_tokens)
        files = build_report(args.dirs, args.out, settings)
    except (FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print_locations(files)
    return 0


def print_locations(files: dict[str, Path], resolve: bool = False) -> None:
    """Where the report, its HTML page and its table were written."""
    for label, name in (("report", "report.md"), ("html", "report.html"), ("table", "summary.csv")):
        print(f"{label + ':':7} {files[name].resolve() if resolve else files[name]}")


if __name__ == "__main__":
    sys.exit(main())
