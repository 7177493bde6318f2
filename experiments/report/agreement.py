"""Long context against the best RAG config, question by question: both right, only one right, both wrong, and
whether the two answers are the same once normalised. The report's diagnostics show it, the agreement figure draws it
and the question viewer opens each count's questions, so it is computed once (build.facts).

"Correct" means score >= `correct_threshold` (0..1, conf/report.yaml, default 0.5): for exact-match
style metrics that is right/wrong, for graded metrics (F1, ROUGE) a majority of the answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from eval.metrics.text import normalize_en
from eval.sample import level_sort_key
from experiments.report.runs import Run
from experiments.report.verdict.selection import longctx_candidates, rag_candidates


@dataclass
class Agreement:
    benchmark: str
    lc: Run
    rag: Run
    n: int
    both_right: int
    only_lc: int
    only_rag: int
    both_wrong: int
    level: str = "all"
    same_answer: int | None = None  # questions whose two answers are the same once normalised

    def as_csv(self) -> dict[str, Any]:
        """A row of agreement.csv (counts; shares of the shared questions)."""
        n = max(self.n, 1)
        counts = {"both_right": self.both_right, "only_longctx_right": self.only_lc, "only_rag_right": self.only_rag,
                  "both_wrong": self.both_wrong, "same_answer": self.same_answer}
        return {"benchmark": self.benchmark, "level": self.level, "longctx_config": self.lc.label,
                "rag_config": self.rag.label, "n_shared": self.n, **counts,
                **{f"{k}_share": None if v is None else round(v / n, 4) for k, v in counts.items()}}


def _answers(run: Run, level: str | None) -> dict[str, str]:
    return {str(r["id"]): normalize_en(str(r.get("prediction") or "")) for r in run.answered(level)}


def agreement(benchmark: str, lc: Run, rag: Run, threshold: float, level: str | None = None) -> Agreement | None:
    """Per question of one length level (None: all): right/wrong on both arms, and the same answer or not."""
    a, b = lc.scores(level), rag.scores(level)
    shared = sorted(set(a) & set(b))
    if not shared:
        return None
    lc_ok = {i: a[i] >= threshold for i in shared}
    rag_ok = {i: b[i] >= threshold for i in shared}
    said_lc, said_rag = _answers(lc, level), _answers(rag, level)
    return Agreement(benchmark, lc, rag, len(shared),
                     both_right=sum(lc_ok[i] and rag_ok[i] for i in shared),
                     only_lc=sum(lc_ok[i] and not rag_ok[i] for i in shared),
                     only_rag=sum(rag_ok[i] and not lc_ok[i] for i in shared),
                     both_wrong=sum(not lc_ok[i] and not rag_ok[i] for i in shared),
                     level=level or "all",
                     same_answer=sum(i in said_lc and said_lc[i] == said_rag.get(i) for i in shared))


def agreements(runs: list[Run], correct_threshold: float) -> list[Agreement]:
    """Per benchmark with both arms: the best long-context config against the best RAG config, over all questions
    and, where there are several length levels, per level."""
    out = []
    for bench in sorted({r.scope for r in runs}):
        mine = [r for r in runs if r.scope == bench]
        lcs, rags = longctx_candidates(mine), rag_candidates(mine)
        if lcs and rags:
            lc = max(lcs, key=lambda r: r.score_at() or 0)  # (candidates are scored)
            rag = max(rags, key=lambda r: r.score_at() or 0)
            levels = sorted({str(r.get("length_level")) for r in lc.records}, key=level_sort_key)
            for level in [None, *(levels if len(levels) > 1 else [])]:
                a = agreement(bench, lc, rag, correct_threshold, level)
                if a:
                    out.append(a)
    return out
