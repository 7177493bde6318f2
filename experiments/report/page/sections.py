"""The report's sections after the verdict: pairwise preferences, the deployment what-if, the plots, the
diagnostics (with the lexical-overlap split) and reproducibility. Each renders rows computed elsewhere."""

from __future__ import annotations

import os
from pathlib import Path

from eval.lexical_overlap import BUCKET_EDGES
from experiments.report.diagnostics import Diagnostics
from experiments.report.latency import LatencyRow
from experiments.report.overlap import SplitRow, spread
from experiments.report.page.lost_answers import cell_link
from experiments.report.page.cells import fmt, pct, usd
from experiments.report.page.contents import section_title
from experiments.report.page.document import Code, Document, Heading, Image, Paragraph, Table
from experiments.report.pairwise import PairwiseRow
from experiments.report.plots import figures as plots
from experiments.report.plots.context_share import score_vs_context_share
from experiments.report.pricing import Pricing
from experiments.report.reproducibility import provenance, shared_config
from experiments.report.runs import Run
from experiments.report.settings import ReportSettings
from experiments.report.verdict.oracle import mean_prompt_tokens
from experiments.report.verdict.lookups import overall_row
from experiments.report.verdict.row import VerdictRow
from experiments.report.whatif import WhatIfRow
from experiments.versions import package_versions

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
    rows = [[r.benchmark, r.rag, r.longctx, str(r.n), str(r.documents), pct(r.win), pct(r.tie), pct(r.loss),
             pct(r.flipped), f"{r.net:+.1f}" + (f" [{r.ci[0]:+.1f}, {r.ci[1]:+.1f}]" if r.ci else " (one document)"),
             f"{r.words_rag:.0f} / {r.words_longctx:.0f}", str(r.no_judgment)] for r in prows]
    if rows:
        doc.add(Table(["benchmark", "RAG", "long context", "questions", "documents", "RAG wins", "ties", "LC wins",
                       "order flips", "wins − losses, % [95% CI]", "words (RAG / LC)", "no judgment"], rows))


def whatif_section(doc: Document, rows: list[WhatIfRow], pricing: Pricing, settings: ReportSettings,
                   latency: list[LatencyRow] | None = None) -> None:
    target = ("no latency target" if settings.latency_target_s is None
              else f"a mean latency target of {settings.latency_target_s:g} s")
    doc.add(Heading(2, section_title("whatif"), "whatif"), Paragraph(
        f"At **{settings.queries_per_doc:g} queries per document** for every arm and {target}, over all samples of "
        "each benchmark. Cost per 1,000 answers = 1000 x (generation cost per answer + indexing cost per document / "
        "queries per document), for long context **without** a prefix cache (each question pays its document's whole "
        "prefill) and **with** one (one prefill per document shared by its questions); RAG is the same in both. "
        "Break-even: queries per document from which the config is cheaper than the best long-context config, "
        "against each (q* = I / (c_long context - c); with a prefix cache (I - P) / (d - c), P one prefill). "
        "**Provider caching** (an API that bills a prompt prefix it has cached at a discount: a per-token price "
        "with a cached rate): a document's first question writes it to the cache and the others read it; its "
        "break-even is (I - W) / (r - c), W the write's premium over a read, r an answer that reads the document. "
        "Latency: *user s* is what one user waits (retrieval + generation served to that user alone, the whole "
        "prefill included); *charged s* is the machine time an answer costs in the measured batch (its share of a "
        "shared prefill and batched decode, plus retrieval); *index s/doc* is the measured index build time."),
        Paragraph(pricing.describe() + " Measured times come from the machine that ran the sweep."))
    head = ["benchmark", "role", "config", "score", "cost/answer", "indexing/document",
            "cost per 1,000: no prefix cache", "cost per 1,000: with prefix cache", "cost per 1,000: provider caching",
            "user s mean", "user s p95", "charged s/answer", "index s/doc", "meets target",
            "break-even q/doc: no prefix cache", "break-even q/doc: with prefix cache",
            "break-even q/doc: provider caching"]
    table = [[r.benchmark, r.role, r.label, fmt(r.score, 1), usd(r.answer_cost), usd(r.index_cost_per_doc),
              usd(r.cost_per_1000), usd(r.cost_per_1000_prefix_cache), usd(r.cost_per_1000_provider_cache),
              fmt(r.latency_mean), fmt(r.latency_p95), fmt(r.charged_s_mean), fmt(r.index_s_per_doc),
              fmt(r.meets_target), r.break_even_note or "-", r.break_even_prefix_cache_note or "-",
              r.break_even_provider_cache_note or "-"] for r in rows]
    doc.add(Table(head, table))
    if latency:
        latency_table(doc, latency)


FEW_FOR_P90 = 10  # a p90 over fewer values is marked: it is one of the largest values, not a tail


def few(cell: str, n: int) -> str:
    """A p90 cell, marked * when it is over fewer than FEW_FOR_P90 values."""
    return f"{cell}*" if 0 < n < FEW_FOR_P90 and cell != "-" else cell


def latency_table(doc: Document, rows: list[LatencyRow]) -> None:
    """What one user waits, as a distribution, per config and length level (experiments/report/latency.py)."""
    retimed = any(r.retimed_n for r in rows)
    head = ["benchmark", "config", "arm", "level", "n", "user s p50", "user s p90"]
    if retimed:
        head += ["re-timed n", "re-timed p50", "re-timed p90"]
    head += ["first answer s", "others p50"]
    table = []
    for r in rows:
        line = [r.benchmark, r.label, r.arm, r.level, str(r.n), fmt(r.p50), few(fmt(r.p90), r.n)]
        if retimed:
            line += [str(r.retimed_n) if r.retimed_n else "-", fmt(r.retimed_p50), few(fmt(r.retimed_p90), r.retimed_n)]
        table.append(line + [fmt(r.first_s), fmt(r.rest_p50)])
    doc.add(Heading(3, "Latency per config and length level"), Table(head, table), Paragraph(
        "What one user waits (retrieval + generation), as a distribution over the answers: the median (p50) and the "
        "90th percentile (p90) with the number of answers n. One timing per answer is noisy; `run.timing_repeats` "
        "re-times a sample of the answers with the response cache bypassed, and the re-timed columns give the same "
        "percentiles over each answer's median. A p90 marked * is over fewer than 10 values: it is the largest or "
        "next to largest, not a tail estimate. First answer against the others' median: a first answer much "
        "slower than the rest carried a device warm-up (runs made before the untimed warm-up existed)."))


def plots_section(doc: Document, runs: list[Run], vrows: list[VerdictRow], diag: Diagnostics, out: Path) -> list[Path]:
    doc.add(Heading(2, section_title("plots"), "plots"))
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
            (score_vs_context_share(mine, out / f"score_vs_context_share{slug}.png", title),
             "Score against the share of the full context sent, per level: prompt tokens divided by long context's "
             "(long context at 1.0, the oracle retriever near 0), with 95% intervals over documents. Top-k, chunk "
             "size and long context on one curve.", "score vs share of context (no long-context run)"),
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
    doc.add(Heading(2, section_title("diagnostics"), "diagnostics"), Paragraph(
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
                         cell_link(a, "both_right", a.both_right), cell_link(a, "only_lc", a.only_lc),
                         cell_link(a, "only_rag", a.only_rag), cell_link(a, "both_wrong", a.both_wrong),
                         "-" if a.same_answer is None else f"{a.same_answer} ({a.same_answer / n:.0%})"])
        doc.add(Table(["benchmark", "level", "long context", "best RAG", "shared", "both right",
                       "only long context right", "only RAG right", "both wrong", "same answer"], rows), Paragraph(
            "\"Only RAG right\" is what a router could add on top of long context; \"only long context right\" is what "
            "retrieval misses. Same answer: the two predictions are equal once normalised (lower case, no punctuation, "
            "articles or extra spaces), whatever their scores. Each count opens its questions in the viewer "
            "(questions.html)."))
    else:
        doc.add(Paragraph("No benchmark has both a scored long-context and a scored RAG run."))
    doc.add(Heading(3, "Correctness given the evidence, distractors, truncation"))
    if diag.evidence:
        rows = []
        for e in diag.evidence:
            rows.append([e.benchmark, e.run.label, str(e.n), pct(e.evidence_share),
                         f"{pct(e.p_correct_with)} (n={e.n_with})", f"{pct(e.p_correct_missed)} (n={e.n_missed})",
                         pct(e.distractor_rate), pct(e.truncated_share), pct(e.evidence_lost_share),
                         pct(e.evidence_gone_share)])
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
                      [[r.benchmark, r.run.label, str(r.n), pct(r.share_longctx), fmt(r.score_rag_route, 1),
                        fmt(r.score_longctx_route, 1)] for r in diag.routes]))


def overlap_section(doc: Document, rows: list[SplitRow], groups: dict[str, tuple[int, int]]) -> None:
    """The report's subsection (under Diagnostics); nothing when no record carries an overlap, pages or a
    question-level group."""
    if not rows and not groups:
        return
    lo, hi = BUCKET_EDGES
    doc.add(Heading(3, "By lexical overlap and where the evidence lies"))
    if rows:
        doc.add(Table(["benchmark", "config", "split", "part", "n", "score", "evidence recall"],
                      [[r.benchmark, r.config, r.split, r.part, str(r.n), fmt(r.score, 1),
                        "-" if r.recall is None else f"{r.recall:.2f} @{r.recall_at}"] for r in rows]),
                Paragraph(f"Overlap: the share of a question's content words found in its evidence (low < {lo:g} <= "
                          f"mid < {hi:g} <= high). Questions that repeat their evidence's words flatter lexical "
                          "retrieval (NoLiMa): a config whose recall falls from high to low wins on the easy "
                          "questions only. Evidence: questions whose evidence lies on PDF pages and the rest "
                          "(overlap.csv has these rows)."))
        lean = spread(rows)
        if lean:
            worst = max(lean, key=lambda c: lean[c])
            doc.add(Paragraph(f"Recall gap high − low overlap: largest for {worst} ({lean[worst]:+.2f})."))
    for benchmark, (own, n) in sorted(groups.items()):
        doc.add(Paragraph(f"{benchmark}: {own} of {n} questions have no evidence inside a document of the corpus, so "
                          "the bootstrap resamples each of them alone (its group is the question); the others are "
                          "grouped by the document their evidence lies in."))


def reproducibility_section(doc: Document, runs: list[Run], out: Path, dupes: dict[str, list[Path]]) -> None:
    doc.add(Heading(2, section_title("reproducibility"), "reproducibility"), Paragraph(
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
                     f"`{p.overrides}`" if p.overrides != "-" else "-", str(p.n_records), fmt(p.wall_s), f"`{where}`"])
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
