"""The subsection "Route instead of choosing?" (under the verdict): per verdict row the learned router
(experiments.report.router.evaluate) against the better single arm, the oracle and the routing arms that
were run, what it costs, where its file is, and its weights in words."""

from __future__ import annotations

from experiments.arms.router_model import CUE_PREFIX, POST_RETRIEVAL, TASK_PREFIX, is_cue_feature
from experiments.report.halves import MIN_GROUPS
from experiments.report.page.contents import Outline
from experiments.report.page.document import Bullets, Document, Heading, Paragraph, Table
from experiments.report.page.report_summary import Facts, Summary
from experiments.report.router.evaluate import OtherRouter, RouterRow, money
from experiments.report.router.features import SAME_EVERYWHERE
from experiments.report.router.fit import RouterResult
from experiments.report.verdict_row import VerdictRow

# how each feature reads in a sentence: (what grows, unit of one standard deviation)
FEATURE_WORDS = {
    "log_doc_tokens": "a longer document",
    "lc_truncated": "long context having to cut the document",
    "question_tokens": "a longer question",
    "top1_score": "a higher top retrieval score",
    "top_margin": "a clearer top-1 retrieval winner (top-1 minus top-2 score)",
    "top_spread": "more spread in the retrieval scores",
    "retrieved_overlap": "more of the question's words in the retrieved chunks",
}
CUE_WORDS = {"count": '"how many"', "compare": "comparison", "reason": '"why / how"', "entity": '"who / when / which"',
             "summary": "summary"}
NEGLIGIBLE = 0.5  # points per standard deviation: a weight below this is not worth a sentence
ANCHOR, TITLE = "routing", None
HEAD = ["benchmark", "level", "router", "features", "score", "best arm", "by-document benchmark",
        "per-question max (luck)", "Δ router−best [CI]", "benchmark gap closed [≥95%]", "to RAG", "documents", "n",
        "prompt tokens", "latency s", "cost/answer", "decision", "file"]


def rows(f: Facts) -> None:
    """Nothing of its own: each verdict row carries its router (experiments.report.decision_order fits them)."""
    return None


def render(doc: Document, s: Summary, outline: Outline) -> None:
    """Per verdict row the learned router and the routing arms that were run; the rows too small for one."""
    routed = [(v, v.router) for v in s.vrows if v.router is not None]
    skipped = [v for v in s.vrows if v.router is None and v.lc is not None and v.rag is not None]
    if not routed and not skipped:
        return
    doc.add(Heading(3, "Route instead of choosing?"), Paragraph(explained(s.settings.tolerance, outline)))
    if routed:
        doc.add(Table(HEAD, _table(routed)))
        doc.add(Paragraph("What the routers read (standardised weights of the deployed fit: points of RAG's gain "
                          "over long context per standard deviation of the feature):"), Bullets(_notes(routed)))
    if skipped:
        doc.add(Paragraph("No router for " + ", ".join(f"{v.benchmark} {v.level}" for v in skipped)
                          + f": fewer than {2 * MIN_GROUPS} documents with questions both arms scored, too few to "
                          "learn on one half and measure on the other."))


def _table(routed: list[tuple[VerdictRow, RouterRow]]) -> list[list[str]]:
    """Per verdict row its learned router, then the routing arms that were run."""
    table = []
    for v, rr in routed:
        table += [_main_row(v, rr), *(_other_row(v, rr, o) for o in rr.others)]
    return table


def _notes(routed: list[tuple[VerdictRow, RouterRow]]) -> list[str]:
    """Each router's weights in words, the features it could not use, and how its costs were counted."""
    notes = [weights_sentence(rr) for _, rr in routed]
    notes += [x for _, rr in routed if (x := dropped_sentence(rr))]
    return notes + [f"{v.benchmark} {v.level}: {rr.cost_note}" for v, rr in routed if rr.cost_note]


def feature_words(name: str) -> str:
    if name.startswith(TASK_PREFIX):
        return f"a question of type {name[len(TASK_PREFIX):]!r}"
    if is_cue_feature(name):
        cue = name[len(CUE_PREFIX):]
        return f"a {CUE_WORDS.get(cue, cue)} question"
    return FEATURE_WORDS.get(name, name)


def weights_sentence(row: RouterRow) -> str:
    """The deployed fit's weights in plain words, largest first."""
    r = row.result
    lean = "RAG" if r.intercept > 0 else "long context"
    head = (f"{row.benchmark} {row.level}: on average RAG gains {r.intercept:+.1f} points over long context "
            f"(leaning to {lean});")
    big = sorted(((w, n) for n, w in r.coefficients.items() if abs(w) >= NEGLIGIBLE), key=lambda wn: -abs(wn[0]))
    if not big:
        return head + " no feature moves that by half a point per standard deviation: the router follows the mean."
    parts = [f"{feature_words(n)} favours {'RAG' if w > 0 else 'long context'} ({w:+.1f} per sd)" for w, n in big]
    return head + " " + "; ".join(parts) + "."


def dropped_sentence(row: RouterRow) -> str:
    """The features a row's router could not use, grouped by why, in one sentence ("" when none)."""
    by_reason: dict[str, list[str]] = {}
    for name, why in row.result.dropped.items():
        # one question type, or a cue no question has (or every one): nothing to say
        if not ((name.startswith(TASK_PREFIX) or is_cue_feature(name)) and why == SAME_EVERYWHERE):
            by_reason.setdefault(why, []).append(name)
    if not by_reason:
        return ""
    text = "; ".join(f"{', '.join(names)} ({why})" for why, names in by_reason.items())
    post_missing = all(n in row.result.dropped and "missing" in row.result.dropped[n] for n in POST_RETRIEVAL)
    tail = (" The RAG records carry no retrieval scores (imported predictions do not): a pre-route router only."
            if post_missing else "")
    return f"{row.benchmark} {row.level}: not used: {text}.{tail}"


def _delta(diff: float, ci: tuple[float, float]) -> str:
    return f"{diff:+.1f} [{ci[0]:+.1f}, {ci[1]:+.1f}]"


def _pair(values: tuple[float | None, float | None], fmt) -> str:
    mine, best = values
    return "-" if mine is None or best is None else f"{fmt(mine)} / {fmt(best)}"


def _oracle_cell(r: RouterResult) -> str:
    """The by-document benchmark, "(no real gain)" when its gain over the better arm is inside the noise."""
    if r.oracle_corrected is None:
        return "-"
    return f"{r.oracle_corrected:.1f}" + ("" if r.oracle_real else " (no real gain)")


def _gap_cell(r: RouterResult) -> str:
    """The share of the benchmark's gain the router closes, with its interval; "-" without one."""
    if r.gap_closed is None or r.gap_closed_ci is None:
        return "-"
    lo, hi = r.gap_closed_ci
    return f"{100 * r.gap_closed:.0f}% [{100 * lo:.0f}%, {100 * hi:.0f}%]"


def _main_row(v: VerdictRow, rr: RouterRow) -> list[str]:
    r = rr.result
    gap = _gap_cell(r)
    decided = ("**route**" if rr.decided else "not tested (its row decides nothing)" if rr.gated
               else "no" if rr.p_route_holm is None else f"no (p {rr.p_route_holm:.2f})")
    return [v.benchmark, v.level, "learned router", rr.features_kind, f"{r.router_mean:.1f}", f"{r.best_arm_mean:.1f}",
            _oracle_cell(r), f"{r.oracle_mean:.1f}",
            _delta(r.diff, rr.shown_interval) + (" adj." if rr.p_route_holm is not None else ""), gap,
            f"{100 * r.share_rag:.0f}%", str(r.n_groups), str(r.n),
            _pair(rr.tokens, lambda x: f"{x:,.0f}"), _pair(rr.latency, lambda x: f"{x:.2f}"), _pair(rr.cost, money),
            decided, f"`{rr.file_name}`"]


def _other_row(v: VerdictRow, rr: RouterRow, o: OtherRouter) -> list[str]:
    """A routing arm that was run, in the learned router's columns (its own costs, not against the best arm)."""
    r = rr.result
    to_rag = "-" if o.share_longctx is None else f"{100 - 100 * o.share_longctx:.0f}%"
    return [v.benchmark, v.level, f"{o.title} ({o.label})", "run", f"{o.score:.1f}", f"{o.score - o.diff:.1f}",
            _oracle_cell(r), f"{r.oracle_mean:.1f}", _delta(o.diff, o.ci), "-", to_rag, str(o.n_groups), str(o.n),
            "-" if o.prompt_tokens is None else f"{o.prompt_tokens:,.0f}",
            "-" if o.latency_s is None else f"{o.latency_s:.2f}", money(o.cost), "", ""]


def explained(tolerance: float, outline: Outline) -> str:
    """What a router reads, how it is fitted and measured, and when its row decides "route"."""
    return (
        "A router sends each question to RAG or to long context from what is known before the answer: pre-route "
        "features (the document's length in tokens, whether long context must cut it, the question's length, its "
        "type, and its wording: \"how many\", comparison, \"why / how\", \"who / when / which\", summary) and, when "
        "the RAG records carry retrieval scores, post-retrieval ones (the top score, the top-1/top-2 margin, their "
        "spread, and how much of the question the retrieved chunks hold). It is a ridge regression of the "
        "per-question gain RAG − long context, learned over "
        "the row's two configs and **cross-fitted by document**: the model learned on one half of the documents "
        "routes the other half, so no question is routed by a model that saw its document. It is measured against "
        "the better single arm chosen the same way, and against the **by-document benchmark**: each question "
        "answered by the arm that did better on the other questions of its kind in its document (leave one out). "
        "It is a benchmark, not an upper bound: a router that reads what the benchmark cannot (a document's "
        "length across documents) can beat it. The **per-question maximum** (the better of the two answers to each "
        "question) is an upper bound, but inflated by luck: two equal arms that each answer 60% right make 84%. "
        "The interval resamples documents and refits everything in each "
        "resample, over several splits of the documents (averaged), as a t interval. The benchmark gap closed "
        "is (router − best arm) / (benchmark − better arm), shown only with its interval, which holds at least 95% "
        "(each difference's 97.5% interval, their ratio's extremes) and only when the benchmark's gain is real. "
        "Costs are per answer, router / best arm; a router "
        "that reads retrieval scores retrieves for every question, so its latency and cost include RAG's retrieval "
        "and index for the questions it sends to long context. The row decides **route** when the router beats "
        f"the best arm by more than +{tolerance:g} points, a one-sided test (the claim has one direction) at the "
        "level the report's tests leave it: the routers form "
        f"their own family beside the arm decisions ({outline.ref('verdict')} says with which guarantee), so a "
        "router is tested even when the arms tie; its interval is shown at that adjusted level (\"adj.\": two-sided, "
        "its lower end the one-sided bound the test reads; a row "
        "that decides nothing leaves its router untested, with its 95% interval). Each router is "
        "written as a JSON file (no pickle) that `python -m experiments.run arm=router router.path=FILE` runs live; "
        "the file is the fit on all the row's questions. Routing arms that were run (Self-Route, a live router) "
        "follow their row, on the same questions against the same best arm per question (a paired cluster "
        "bootstrap over documents; nothing was chosen on these questions), with their own costs per answer. A live "
        "router run on the documents its file was fitted on is an in-sample figure: the learned router's row is "
        "the estimate for documents it has not seen (perf/router_live_check.py reproduces it with the live arm).")
