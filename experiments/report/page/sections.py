"""The report's sections after the verdict: pairwise preferences, the deployment what-if, the plots, the
diagnostics (with the lexical-overlap split) and reproducibility. Each renders rows computed elsewhere."""

from __future__ import annotations

from pathlib import Path

from eval.lexical_overlap import BUCKET_EDGES
from experiments.report.diagnostics import Diagnostics
from experiments.report.latency import LatencyRow
from experiments.report.overlap import SplitRow
from experiments.report.page.lost_answers import cell_link
from experiments.report.page.cells import fmt, pct, usd
from experiments.report.page.contents import section_title
from experiments.report.page.drawing import Figures
from experiments.report.page.document import Code, Document, Heading, Image, Paragraph, Table
from experiments.report.pairwise import PairwiseRow
from experiments.report.reproducibility import Reproducibility
from experiments.report.settings import ReportSettings
from experiments.report.whatif import WhatIfRow

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


def whatif_section(doc: Document, rows: list[WhatIfRow], pricing_note: str, settings: ReportSettings,
                   latency: list[LatencyRow] | None = None) -> None:
    """The deployment what-if; `pricing_note`: how the runs were priced (Pricing.describe)."""
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
        Paragraph(pricing_note + " Measured times come from the machine that ran the sweep."))
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


def plots_section(doc: Document, figures: Figures, out: Path) -> None:
    """The figures drawn per benchmark (experiments.report.page.drawing), and those with nothing to draw."""
    doc.add(Heading(2, section_title("plots"), "plots"))
    for scope in figures.scopes:
        if len(figures.scopes) > 1:
            doc.add(Heading(3, scope.scope))
        for f in scope.figures:
            doc.add(Paragraph(f.caption), Image(out / f.file, Path(f.file).stem.replace("_", " ")))
        if scope.not_drawn:
            doc.add(Paragraph("Not drawn: " + "; ".join(scope.not_drawn) + "."))


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


def overlap_section(doc: Document, rows: list[SplitRow], groups: dict[str, tuple[int, int]],
                    lean: dict[str, float]) -> None:
    """The report's subsection (under Diagnostics); nothing when no record carries an overlap, pages or a
    question-level group. `lean`: each config's recall gap high - low overlap (experiments.report.overlap.spread)."""
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
        if lean:
            worst = max(lean, key=lambda c: lean[c])
            doc.add(Paragraph(f"Recall gap high − low overlap: largest for {worst} ({lean[worst]:+.2f})."))
    for benchmark, (own, n) in sorted(groups.items()):
        doc.add(Paragraph(f"{benchmark}: {own} of {n} questions have no evidence inside a document of the corpus, so "
                          "the bootstrap resamples each of them alone (its group is the question); the others are "
                          "grouped by the document their evidence lies in."))


def reproducibility_section(doc: Document, rep: Reproducibility) -> None:
    doc.add(Heading(2, section_title("reproducibility"), "reproducibility"), Paragraph(
        "Data fingerprint: sha256 of the run's benchmark config and the sorted ids of the samples it recorded "
        "(same fingerprint, same questions). Config hash: the runner's hash of everything that changes the records. "
        "Rerun a config with `python -m experiments.run` and the overrides shown."))
    doc.add(Heading(3, "Package versions"), Paragraph(
        "Recorded by the runs." if rep.versions_recorded else
        "Of the environment that wrote this report (the runs did not record theirs)."))
    doc.add(Table(["package", "version"], [[k, v] for k, v in rep.versions.items()]))
    doc.add(Heading(3, "Runs"))
    rows = [[r.label, r.benchmark, r.config_hash, r.models, r.data_fingerprint, r.dataset_revision,
             f"`{r.overrides}`" if r.overrides != "-" else "-", str(r.n_records), fmt(r.wall_s), f"`{r.run_dir}`"]
            for r in rep.runs]
    doc.add(Table(["config", "benchmark", "config hash", "models", "data fingerprint", "dataset revision", "overrides",
                   "records", "wall s", "run dir"], rows))
    if rep.merged:
        doc.add(Paragraph(f"{len(rep.merged)} duplicate run(s) of an identical config point were merged (the one "
                          "with the most records is shown): " + ", ".join(f"`{p}`" for p in rep.merged) + "."))
    if rep.common:
        doc.add(Heading(3, "Config shared by all runs"), Code(rep.common, "yaml"))
        if rep.varying:
            doc.add(Paragraph("Keys that differ between runs (or that some runs lack): "
                              + ", ".join(f"`{k}`" for k in rep.varying) + "."))
    else:
        doc.add(Paragraph("The run directories have no .hydra/config.yaml."))
