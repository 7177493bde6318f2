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
from functools import lru_cache

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


# ---------------------------------------------------------------- scenarios beside the model above
DOC_SD_LOGIT = 0.6  # document difficulty, logits (about the model above's 0.15 at accuracy 0.6)
CONFIG_DOC_SD_LOGIT = 0.35  # a config's luck on a document, logits (about 0.08 at 0.6)


@dataclass(frozen=True)
class Scenario:
    """A data model on the logit scale: each document's difficulty (normal, or Student's t with 3 degrees of
    freedom scaled to the same sd: `doc_tails`="t3") shared by every config, each (config, document) its own
    luck, long context at accuracy `base`, RAG shifted so that its mean accuracy is `base + truth`; on a share
    `fail_share` of the documents every RAG config misses the evidence (`fail_logits`) and is slightly better
    on the rest; `questions`: (fewest, most) questions per document, drawn uniformly."""
    base: float = 0.6
    fail_share: float = 0.0
    fail_logits: float = -2.5
    doc_tails: str = "normal"
    questions: tuple[int, int] = (3, 3)


SCENARIOS: dict[str, Scenario | None] = {  # None: the probability-scale model of `simulated_scores`
    "own": None,
    "skewed": Scenario(fail_share=0.15),  # 15% of documents a retrieval failure, the rest slightly better
    "common": Scenario(base=0.9),
    "rare": Scenario(base=0.1),
    "hetero": Scenario(doc_tails="t3"),
    "unequal": Scenario(questions=(2, 10)),
}


def _expit(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def _doc_effects(rng: np.random.Generator, model: Scenario, n: int) -> np.ndarray:
    if model.doc_tails == "t3":
        return DOC_SD_LOGIT * rng.standard_t(3, n) / np.sqrt(3.0)
    return rng.normal(0.0, DOC_SD_LOGIT, n)


@lru_cache(maxsize=64)
def rag_shift(model: Scenario, truth: float) -> float:
    """The logit shift of RAG that makes its mean accuracy over documents `base + truth` (points), by
    bisection on 200,000 simulated documents (a fixed seed: the same shift every time)."""
    rng = np.random.default_rng(20_260_041)
    n = 200_000
    doc = _doc_effects(rng, model, n)
    lc = float(_expit(np.log(model.base / (1 - model.base)) + doc + rng.normal(0, CONFIG_DOC_SD_LOGIT, n)).mean())
    rag_base = np.log(model.base / (1 - model.base)) + doc + rng.normal(0, CONFIG_DOC_SD_LOGIT, n)
    rag_base = rag_base + model.fail_logits * (rng.random(n) < model.fail_share)
    lo, hi = -8.0, 8.0
    for _ in range(40):
        mid = (lo + hi) / 2
        if float(_expit(rag_base + mid).mean()) - lc < truth / 100:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def scenario_scores(rng: np.random.Generator, scenario: str, n_docs: int, truth: float, n_rag: int = 1,
                    samples: int = 1) -> SimulatedSweep:
    """A sweep of `n_docs` documents under a named scenario (SCENARIOS); "own" is `simulated_scores` with 3
    questions per document."""
    if scenario not in SCENARIOS:
        raise ValueError(f"scenario {scenario!r}: one of {', '.join(SCENARIOS)}")
    model = SCENARIOS[scenario]
    if model is None:
        return simulated_scores(rng, n_docs, 3, truth, n_rag, samples=samples)
    per_doc = rng.integers(model.questions[0], model.questions[1] + 1, n_docs)
    ids = [f"d{d:03d}-q{q}" for d in range(n_docs) for q in range(per_doc[d])]
    groups = {i: i.split("-")[0] for i in ids}
    owner = np.repeat(np.arange(n_docs), per_doc)
    base = np.log(model.base / (1 - model.base)) + _doc_effects(rng, model, n_docs)
    failed = rng.random(n_docs) < model.fail_share

    def config(logits: np.ndarray) -> dict[str, float]:
        p = _expit(logits + rng.normal(0.0, CONFIG_DOC_SD_LOGIT, n_docs))
        right = rng.random((owner.size, samples)) < p[owner][:, None]
        return dict(zip(ids, right.mean(axis=1).tolist()))

    lc = config(base)
    rag_logits = base + rag_shift(model, truth) + model.fail_logits * failed
    rags = [config(rag_logits) for _ in range(n_rag)]
    return SimulatedSweep(lc, rags, groups, truth, [228.0 + 330 * c for c in range(n_rag)])


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
    from experiments.report.verdict.compare import row_decision

    threshold = settings.correct_threshold - 1e-12
    docs = sorted(set(sweep.groups.values()))

    def pair(rag: dict[str, float]):
        ids = sorted(set(rag) & set(sweep.lc))
        est = cluster_t([100 * (rag[i] - sweep.lc[i]) for i in ids], [sweep.groups[i] for i in ids], unit=100.0)
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
