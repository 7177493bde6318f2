"""Why an arm wins: per-sample agreement, correctness given evidence, distractors, truncation.

"Correct" means score >= `correct_threshold` (0..1, conf/report.yaml, default 0.5): for exact-match
style metrics that is right/wrong, for graded metrics (F1, ROUGE) a majority of the answer.
"Evidence in the prompt" means at least `evidence_threshold` (default 1.0: all) of the gold evidence
reached the model: RAG's `evidence_in_prompt`, long context's `evidence_retained` (after truncation);
for benchmarks whose evidence is whole documents (Loong), `docs_in_prompt` and `docs_retained`.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import mean
from typing import Any

from experiments.arms import ROLE_LONGCTX, ROLE_RAG
from experiments.report.runs import Run


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
    with_ev = [(r, _evidence_of(r)) for r in answered]
    with_ev = [(r, e) for r, e in with_ev if e is not None]
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
