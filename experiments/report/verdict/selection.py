"""Which configs a verdict row compares: each arm's candidates, the best and the cheapest-within-tolerance
config, the paired difference of two configs over their shared samples, and the cross-fit's table of
candidates (whose cost gaps count only beyond their measurement's noise)."""

from __future__ import annotations

import numpy as np

from eval.metrics.confidence import Estimate, cluster_t
from experiments.arms import ROLE_LONGCTX, ROLE_RAG
from experiments.report.pricing import Pricing, deployment_cost
from experiments.report.runs import Run
from experiments.report.settings import ReportSettings
from experiments.report.verdict.crossfit import Candidates, document_weights

NOISE_FLOOR = 0.10  # measured (time-priced) costs closer than this share are ties: a shared machine drifts more


def longctx_candidates(runs: list[Run]) -> list[Run]:
    return [r for r in runs if r.spec.role == ROLE_LONGCTX and not r.budget_matched and r.scores()]



def rag_candidates(runs: list[Run]) -> list[Run]:
    return [r for r in runs if r.spec.role == ROLE_RAG and not r.upper_bound and r.scores()]



def oracle_runs(runs: list[Run]) -> list[Run]:
    """RAG runs that read the gold evidence (retriever=oracle): retrieval's upper bound."""
    return [r for r in runs if r.spec.role == ROLE_RAG and r.upper_bound and r.scores()]



def groups_of(runs: list[Run], level: str | None) -> dict[str, str]:
    """Sample id -> its document (`group`; the id itself when the record has none)."""
    out: dict[str, str] = {}
    for run in runs:
        for r in run.records_at(level):
            out.setdefault(str(r["id"]), str(r.get("group") or f"sample:{r['id']}"))
    return out



def mean_score(run: Run, level: str | None, ids: set[str] | None) -> float | None:
    s = run.scores(level)
    vals = [v for i, v in s.items() if ids is None or i in ids]
    return 100 * sum(vals) / len(vals) if vals else None



def best_config(runs: list[Run], level: str | None, ids: set[str] | None = None) -> tuple[Run | None, float | None]:
    scored = [(s, r) for r in runs if (s := mean_score(r, level, ids)) is not None]
    if not scored:
        return None, None
    s, r = max(scored, key=lambda sr: (round(sr[0], 9), -(sr[1].mean_of("prompt_tokens", level) or 0)))
    return r, s



def choose_pair(lcs: list[Run], rags: list[Run], table: Candidates | None,
            level: str | None) -> tuple[Run | None, Run | None, bool]:
    """(long context, RAG, RAG within tolerance) chosen on all samples, by the cross-fit's own rule
    (`Candidates.choose`): the best long context, and the cheapest RAG config within the tolerance of the best RAG
    config (costs inside their measurement's noise count as equal: the better score wins); the third value: the
    RAG config is within the tolerance of long context."""
    if table is None:
        return best_config(lcs, level)[0], best_config(rags, level)[0], False
    n = len(table.documents)
    lc, rag, within = (int(x[0]) for x in table.choose(np.arange(n), np.ones((1, n))))
    return (lcs[lc] if lc >= 0 else None), (rags[rag] if rag >= 0 else None), bool(within)



def paired_difference(a_run: Run, b_run: Run, level: str | None, ids: set[str] | None,
            groups: dict[str, str], per_document: bool = False) -> tuple[list[str], Estimate | None]:
    """The shared sample ids of two runs and the estimate of mean(a) - mean(b) in points over them
    (eval.metrics.confidence.cluster_t over documents; None with fewer than 2 documents); `per_document`: the
    mean of the documents' means."""
    a, b = a_run.scores(level), b_run.scores(level)
    shared = sorted(i for i in set(a) & set(b) if ids is None or i in ids)
    if not shared:
        return shared, None
    docs = [groups.get(i, i) for i in shared]
    return shared, cluster_t([100 * (a[i] - b[i]) for i in shared], docs, unit=100.0,
                             weights=document_weights(docs) if per_document else None)



def share_correct(run: Run, level: str | None, ids: list[str], threshold: float) -> float | None:
    s = run.scores(level)
    vals = [s[i] >= threshold - 1e-12 for i in ids if i in s]
    return sum(vals) / len(vals) if vals else None



def candidate_table(lcs: list[Run], rags: list[Run], level: str | None, groups: dict[str, str], pricing: Pricing,
                settings: ReportSettings) -> Candidates:
    """The selection's inputs: each config's scores, prompt tokens, (RAG) cost key and which RAG configs are
    dearer than others beyond the cost's noise (`costlier`)."""
    tokens = lambda r: r.mean_of("prompt_tokens", level) or 0.0  # noqa: E731

    def cost_key(r: Run) -> tuple[float, float]:
        c = deployment_cost(r, pricing, settings, level)
        return (c if c is not None else tokens(r), tokens(r))

    keys = [cost_key(r) for r in rags]
    return Candidates([r.scores(level) for r in lcs], [r.scores(level) for r in rags], [tokens(r) for r in lcs],
                      [tokens(r) for r in rags], keys, groups, sorted(set(groups.values())), settings.tolerance,
                      costlier=_costlier(rags, keys, level, groups, pricing), per_document=settings.per_document)



def _costlier(rags: list[Run], keys: list[tuple[float, float]], level: str | None, groups: dict[str, str],
              pricing: Pricing) -> np.ndarray:
    """costlier[i, j]: RAG config i costs more than config j beyond the measurement's noise.

    A price per token is exact: any gap counts. A cost from measured time (an hourly price) is noisy on a
    shared machine: the gap counts only when the paired per-question costs (same questions) differ by more
    than twice their cluster-robust standard error and by more than NOISE_FLOOR of the cheaper one; closer
    configs are equally cheap, and the choice takes the better-scoring of them."""
    n = len(rags)
    costlier = np.array([[keys[i] > keys[j] for j in range(n)] for i in range(n)], dtype=bool).reshape(n, n)
    if not pricing.time_priced():
        return costlier
    costs = [{str(r["id"]): c for r in run.answered(level) if (c := pricing.answer_cost(r)) is not None}
             for run in rags]
    for i in range(n):
        for j in range(n):
            if not costlier[i, j]:
                continue
            shared = sorted(set(costs[i]) & set(costs[j]))
            est = cluster_t([costs[i][q] - costs[j][q] for q in shared], [groups.get(q, q) for q in shared])
            cheaper = keys[j][0]
            costlier[i, j] = est is not None and est.value > max(2 * est.se, NOISE_FLOOR * abs(cheaper))
    return costlier
