"""Per-question scores with a known truth, in memory (numpy only, no run folders): the data model of
experiments.simulate.sweeps.known_truth_sweep, fast enough for thousands of sweeps, and the verdict of
one such sweep computed by the report's own functions (experiments.report.verdict: cluster_t, the
repeated cross-fit, `row_decision`). perf/small_sample_verdict.py and the plan's simulation
(experiments.report.verdict.power) use it.

The model: each document has a difficulty shared by every config (sd `doc_sd`, probability scale), each
(config, document) pair its own luck (sd `config_doc_sd`: one config retrieving that document well), and
each question `samples` answers drawn right or wrong at that probability; a question's score is the mean
of its answers (`generator.samples=N` averaged before the document-level resampling). Long context's true
mean accuracy is `base`, every RAG config's `base + truth`: any RAG config that looks better got lucky.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class SimulatedSweep:
    """One long-context config and one or more RAG configs over the same questions."""
    lc: dict[str, float]
    rags: list[dict[str, float]]
    groups: dict[str, str]  # question id -> document
    truth: float  # RAG - long context, points
    rag_tokens: list[float] = field(default_factory=list)  # prompt tokens per RAG config (all cheaper than LC)
    lc_tokens: float = 8000.0


def simulated_scores(rng: np.random.Generator, n_docs: int, per_doc: int, truth: float, n_rag: int = 1,
                     base: float = 0.6, doc_sd: float = 0.15, config_doc_sd: float = 0.08,
                     samples: int = 1, truths: list[float] | None = None) -> SimulatedSweep:
    """A sweep of `n_docs` documents x `per_doc` questions; `truth` in points (RAG - long context), or one
    truth per RAG config (`truths`, cheapest config first)."""
    difficulty = rng.normal(0.0, doc_sd, n_docs)
    ids = [f"d{d:03d}-q{q}" for d in range(n_docs) for q in range(per_doc)]
    groups = {i: i.split("-")[0] for i in ids}

    def config(mean: float) -> dict[str, float]:
        p = np.clip(mean + difficulty + rng.normal(0.0, config_doc_sd, n_docs), 0.0, 1.0)
        right = rng.random((n_docs, per_doc, samples)) < p[:, None, None]
        return dict(zip(ids, right.mean(axis=2).ravel().tolist()))

    lc = config(base)
    rags = [config(base + t / 100) for t in (truths or [truth] * n_rag)]
    n_rag = len(rags)
    tokens = [228.0 + 330 * c for c in range(n_rag)]
    return SimulatedSweep(lc, rags, groups, truth, tokens)


def candidates(sweep: SimulatedSweep, tolerance: float):
    """The verdict's selection table of the sweep (experiments.report.verdict.crossfit.Candidates), costs
    by prompt tokens (exact: no noise ties)."""
    from experiments.report.verdict.crossfit import Candidates

    docs = sorted(set(sweep.groups.values()))
    return Candidates([sweep.lc], sweep.rags, [sweep.lc_tokens], sweep.rag_tokens,
                      [(t, t) for t in sweep.rag_tokens], sweep.groups, docs, tolerance)


def simulated_verdict(sweep: SimulatedSweep, settings, rag_cheaper: bool = True):
    """(decision, estimate, documents) of the sweep's one verdict row, as the report computes it: one
    config per arm through cluster_t, several through the repeated cross-fit (the naive fallback when the
    documents are too few to split), then `row_decision` (the MIN_DOCUMENTS rule included)."""
    from eval.metrics.confidence import cluster_t
    from experiments.report.verdict.crossfit import repeated_crossfit
    from experiments.report.verdict.rows import row_decision

    threshold = settings.correct_threshold - 1e-12
    docs = sorted(set(sweep.groups.values()))

    def pair(rag: dict[str, float]):
        ids = sorted(set(rag) & set(sweep.lc))
        est = cluster_t([100 * (rag[i] - sweep.lc[i]) for i in ids], [sweep.groups[i] for i in ids])
        shares = (float(np.mean([rag[i] >= threshold for i in ids])),
                  float(np.mean([sweep.lc[i] >= threshold for i in ids])))
        return est, shares

    naive = False
    if len(sweep.rags) == 1:
        est, shares = pair(sweep.rags[0])
    else:
        table = candidates(sweep, settings.tolerance)
        rep = repeated_crossfit(table, settings.splits, max(200, settings.resamples // settings.splits), settings.seed)
        if rep is None:
            naive = True
            _, rag, _ = table.choose(np.arange(len(docs)), np.ones((1, len(docs))))
            est, shares = pair(sweep.rags[int(rag[0])])
        else:
            est = rep.estimate
            pooled = rep.first.samples
            shares = (float(np.mean([s[2] >= threshold for s in pooled])),
                      float(np.mean([s[3] >= threshold for s in pooled])))
    n_groups = est.n_groups if est is not None else len(docs)
    decision, _ = row_decision(est, n_groups, naive, rag_cheaper, shares, settings)
    return decision, est, n_groups
