"""Pairwise judgments (`python -m experiments.pairwise`) read into the report.

`apply_pairwise(runs)` turns each RAG run's `pairwise.jsonl` into preference scores on its records
(win 1, tie 0.5, loss 0 for RAG) and gives the long-context run it was compared with 0.5 on the same
questions: the verdict's paired difference RAG − long context is then (wins − losses) / 2 in points, so
its selection, cluster interval and decision rule apply unchanged. A question judged against another
long-context run, by another prompt, or not at all keeps no score.

`pairwise_rows(runs)` gives, per RAG run with judgments, the win / tie / loss shares, the share of
preferences that flipped with the order, the answer lengths of both arms (judges favour longer
answers: read the win rate beside them) and a 95% interval of wins − losses that resamples whole
documents (`eval.metrics.confidence.bootstrap_ci` over the question's group).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from eval.metrics.confidence import bootstrap_ci, n_clusters
from eval.metrics.reference_free import LOSS, OUTCOME_SCORE, TIE, WIN, prompt_hash
from experiments import records as schema
from experiments.report.runs import Run

log = logging.getLogger(__name__)


def read_judgments(run: Run) -> dict[str, dict[str, Any]]:
    """The run's pairwise judgments with an outcome, by question id (the current prompt's only)."""
    path = run.path / schema.PAIRWISE_FILE
    if not path.exists():
        return {}
    lines = schema.read_records(path)
    stale = [i for i, line in lines.items() if line.get("prompt_hash") != prompt_hash()]
    if stale:
        log.warning("%s: %d judgment(s) of another pairwise prompt left out (rerun experiments.pairwise)", path,
                    len(stale))
    return {i: line for i, line in lines.items() if line.get("outcome") in OUTCOME_SCORE and i not in stale}


def apply_pairwise(runs: list[Run]) -> list[Run]:
    """Set preference scores from the judgments (see the module docstring); the runs judged, RAG side."""
    by_hash = {r.metrics.get("config_hash"): r for r in runs}
    judged = []
    for run in runs:
        lines = read_judgments(run)
        if not lines:
            continue
        judged.append(run)
        for rec in run.records:
            line = lines.get(str(rec["id"]))
            if line and rec.get("scoring") == schema.PAIRWISE:
                rec["score"] = OUTCOME_SCORE[line["outcome"]]
                other = by_hash.get(line.get("against"))
                if other is not None:
                    _tie_score(other, str(rec["id"]))
    for run in runs:
        run.reset_scores()
    return judged


def _tie_score(run: Run, qid: str) -> None:
    for rec in run.records:
        if str(rec["id"]) == qid and rec.get("scoring") == schema.PAIRWISE:
            rec["score"] = OUTCOME_SCORE[TIE]


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


def pairwise_row(run: Run, resamples: int = 2000, seed: int = 0) -> PairwiseRow | None:
    path = run.path / schema.PAIRWISE_FILE
    lines = list(schema.read_records(path).values()) if path.exists() else []
    lines = [j for j in lines if j.get("prompt_hash") == prompt_hash()]
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


def pairwise_rows(runs: list[Run], resamples: int = 2000, seed: int = 0) -> list[PairwiseRow]:
    rows = [pairwise_row(r, resamples, seed) for r in runs]
    return [r for r in rows if r is not None]


def waiting(runs: list[Run]) -> int:
    """Answers recorded for a pairwise judgment that has not been made (the report says so)."""
    return sum(1 for r in runs for rec in r.records if rec.get("scoring") == schema.PAIRWISE
               and schema.is_answered(rec) and rec.get("score") is None)


__all__ = ["PairwiseRow", "apply_pairwise", "pairwise_row", "pairwise_rows", "read_judgments", "waiting"]
