"""The oracle router: a virtual arm that, per sample, takes the better answer of two configs.

No real router can beat it (it peeks at the scores), so it bounds what any RAG-or-long-context
router (Self-Route included) could gain. Ties go to the cheaper config (`prefer_first`).

It also bounds too high: with one noisy 0/1 answer per arm, the per-question better of the two is
often luck (two equal arms that each answer 60% right make an oracle of 84%), so a perfect router
closed only 82-85% of the oracle's gap in simulations, and the gap was large where routing could gain
nothing. `corrected_oracle` takes the noise out: each question is answered by the arm that scored
better on the OTHER questions of its kind (task) in its document, else of its document, else of the
other documents (leave one out), so no question's own luck picks its arm. It is a benchmark a router can beat
(a router reading the question may do better than one reading its document), not a bound. What it gains over
the better single arm (`excess`, with a t interval over documents) is real only when that interval is above 0;
the report says so as an estimate, not as a claim of its family (only the learned routers' claims are tested
there).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from eval.metrics.confidence import Estimate, cluster_t
from experiments.report.runs import Run
from experiments.report.verdict.decision import ALPHA


@dataclass
class CorrectedOracle:
    """The noise-corrected oracle of two configs over their shared samples (points)."""
    score: float
    best_arm: float  # the better single arm's mean over the same samples
    excess: Estimate | None  # score - the better arm, per question, t over documents (None: one document)

    @property
    def real(self) -> bool:
        """Routing can gain something: the excess's 95% interval is above 0."""
        return self.excess is not None and self.excess.p_above(0.0) < ALPHA


def corrected_oracle(first: dict[str, float], second: dict[str, float], groups: dict[str, str],
                     kinds: dict[str, str] | None = None) -> CorrectedOracle | None:
    """Each shared sample answered by the config that scored better on the other samples of its kind in its
    document (`kinds[id]`, e.g. the task: a question-level signal such as "lookups favour RAG" shows there),
    else on the other samples of its document (`groups[id]`), else on the other documents; then `first`."""
    ids = sorted(set(first) & set(second))
    if not ids:
        return None
    a, b = np.array([first[i] for i in ids]), np.array([second[i] for i in ids])
    docs = [groups.get(i, i) for i in ids]
    cells = [f"{d}\x00{(kinds or {}).get(i, '')}" for d, i in zip(docs, ids, strict=True)]
    lean = np.zeros(len(ids))
    decided = np.zeros(len(ids), dtype=bool)
    for keys in (cells, docs):  # the finest level with other samples and a difference decides
        index = {k: j for j, k in enumerate(dict.fromkeys(keys))}
        col = np.array([index[k] for k in keys])
        n = np.bincount(col).astype(float)
        diff = np.bincount(col, weights=a - b)
        others = n[col] - 1
        with np.errstate(invalid="ignore", divide="ignore"):
            here = np.where(others > 0, (diff[col] - (a - b)) / others, 0.0)
        take = ~decided & (here != 0)
        lean[take], decided = here[take], decided | take
    doc_index = {d: j for j, d in enumerate(dict.fromkeys(docs))}
    dcol = np.array([doc_index[d] for d in docs])
    n_doc = np.bincount(dcol).astype(float)
    d_doc = np.bincount(dcol, weights=a - b)
    rest = len(ids) - n_doc[dcol]
    with np.errstate(invalid="ignore", divide="ignore"):
        away = np.where(rest > 0, ((a - b).sum() - d_doc[dcol]) / np.maximum(rest, 1), 0.0)
    pick_a = np.where(decided, lean > 0, away >= 0)
    chosen = np.where(pick_a, a, b)
    better = a if a.mean() >= b.mean() else b
    return CorrectedOracle(100 * float(chosen.mean()), 100 * float(better.mean()),
                           cluster_t(100 * (chosen - better), docs))


@dataclass
class OracleResult:
    score: float  # x100, over the shared samples
    n: int
    share_first: float  # share of samples where the first config scores strictly higher
    share_second: float  # ... the second config strictly higher
    share_tie: float  # both score the same
    choice: dict[str, str]  # sample id -> "first" | "second" | "tie" (a tie is answered by the first)
    corrected: CorrectedOracle | None = None  # the noise-corrected oracle (the module's docstring)


def oracle_router(first: Run, second: Run, level: str | None = None) -> OracleResult | None:
    """Per shared sample max(score of `first`, score of `second`); equal scores are ties."""
    a, b = first.scores(level), second.scores(level)
    shared = sorted(set(a) & set(b))
    if not shared:
        return None
    choice = {i: "first" if a[i] > b[i] else "second" if b[i] > a[i] else "tie" for i in shared}
    best = [max(a[i], b[i]) for i in shared]
    share = lambda kind: sum(c == kind for c in choice.values()) / len(shared)  # noqa: E731
    recs = first.records_at(level)
    groups = {str(r["id"]): str(r.get("group") or f"sample:{r['id']}") for r in recs}
    kinds = {str(r["id"]): str(r.get("task") or "") for r in recs}
    return OracleResult(score=100 * sum(best) / len(best), n=len(shared), share_first=share("first"),
                        share_second=share("second"), share_tie=share("tie"), choice=choice,
                        corrected=corrected_oracle(a, b, groups, kinds))


def mean_prompt_tokens(result: OracleResult, first: Run, second: Run) -> float | None:
    """Mean prompt tokens of the oracle's answers: each sample is answered by one of its two configs
    (`first` on ties), with that config's prompt tokens."""
    by_first = {str(r["id"]): r for r in first.records}
    by_second = {str(r["id"]): r for r in second.records}
    chosen = [(by_first if c in ("first", "tie") else by_second)[i].get("prompt_tokens")
              for i, c in result.choice.items()]
    toks = [t for t in chosen if t is not None]
    return sum(toks) / len(toks) if toks else None
