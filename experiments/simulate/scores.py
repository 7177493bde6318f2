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

from experiments.arms import ROLE_LONGCTX, ROLE_RAG


@dataclass
class SimulatedSweep:
    """One long-context config and one or more RAG configs over the same questions."""
    lc: dict[str, float]
    rags: list[dict[str, float]]
    groups: dict[str, str]  # question id -> document
    truth: float  # RAG - long context, points
    rag_tokens: list[float] = field(default_factory=list)  # prompt tokens per RAG config (all cheaper than LC)
    lc_tokens: float = 8000.0
    rag_cheaper: bool = True  # the arm the verdict takes for the cheaper (the scenario's, not the tokens')


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
        return dict(zip(ids, right.mean(axis=2).ravel().tolist(), strict=True))

    lc = config(base)
    rags = [config(base + t / 100) for t in (truths or [truth] * n_rag)]
    n_rag = len(rags)
    tokens = [228.0 + 330 * c for c in range(n_rag)]
    return SimulatedSweep(lc, rags, groups, truth, tokens)


# ---------------------------------------------------------------- scenarios beside the model above
DOC_SD_LOGIT = 0.6  # document difficulty, logits, shared by every config of both arms
QUESTION_SD_LOGIT = 0.8  # question difficulty, logits, shared by every config of both arms
ARM_DOC_SD_LOGIT = 0.28  # how well an arm does on a document (retrieval finding it, a cut keeping it), its configs'
CONFIG_DOC_SD_LOGIT = 0.2  # a config's own luck on a document (about 0.35 logits with the arm's: 0.08 at 0.6)
MISS_SHARED = 0.5  # near-identical arms: the share of a RAG config's misses that every RAG config shares


@dataclass(frozen=True)
class Scenario:
    """A data model on the logit scale, with what real configs share: each document's difficulty (normal, or
    Student's t with 3 degrees of freedom scaled to the same sd: `doc_tails`="t3") and each question's difficulty,
    shared by every config of both arms; each arm's effect on a document, shared by its configs (retrieval finding a
    document helps every RAG config); each config's own luck on a document. Long context at accuracy `base`, RAG
    shifted so that its mean accuracy over questions is `base + truth`.

    Failures: on a share `fail_share` of the documents every RAG config misses the evidence (`fail_logits`), and
    RAG is slightly better on the rest; `lc_fail_share`: the same for long context (a cut or a lost middle on a
    minority of documents). `questions`: (fewest, most) questions per document, drawn uniformly, or `heavy_tailed`:
    lognormal with median 3 and mean 6, so that about 5% of the documents hold 30% of the questions (a team writes
    30 questions about one manual and 2 about another). `size_link`: RAG does worse (`size_link_logits`) on the
    documents with the most questions (the top `size_link` share of documents by questions). `near_identical`: RAG
    answers every question as long context does, except that retrieval misses a share of questions (the misses
    alone set the truth: RAG - long context = -miss x long context's accuracy). `rag_cheaper`: which arm the verdict
    takes for the cheaper; `claim`: the claim a truth at its boundary makes false (`rag` or `longctx`)."""
    base: float = 0.6
    fail_share: float = 0.0
    fail_logits: float = -2.5
    lc_fail_share: float = 0.0
    doc_tails: str = "normal"
    questions: tuple[int, int] = (3, 3)
    heavy_tailed: bool = False
    size_link: float = 0.0
    size_link_logits: float = -1.0
    near_identical: bool = False
    rag_cheaper: bool = True
    claim: str = ROLE_RAG


SCENARIOS: dict[str, Scenario | None] = {  # None: the probability-scale model of `simulated_scores`
    "own": None,
    "skewed": Scenario(fail_share=0.15),  # 15% of documents a retrieval failure, the rest slightly better
    "common": Scenario(base=0.9),
    "rare": Scenario(base=0.1),
    "hetero": Scenario(doc_tails="t3"),
    "unequal": Scenario(questions=(2, 10)),
    "uneven": Scenario(heavy_tailed=True),  # median 3, mean 6 questions a document, no link with the effect
    "uneven_linked": Scenario(heavy_tailed=True, size_link=0.1),  # ... and RAG fails on the largest 10%
    "lc_fails": Scenario(lc_fail_share=0.15, claim=ROLE_LONGCTX),  # long context misses on 15% of documents
    "rag_dearer_skewed": Scenario(fail_share=0.15, rag_cheaper=False),  # "RAG better" where RAG fails on 15%
    "near_identical": Scenario(near_identical=True),  # RAG = long context but for retrieval's misses
}


def _expit(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def _doc_effects(rng: np.random.Generator, model: Scenario, n: int) -> np.ndarray:
    if model.doc_tails == "t3":
        return DOC_SD_LOGIT * rng.standard_t(3, n) / np.sqrt(3.0)
    return rng.normal(0.0, DOC_SD_LOGIT, n)


def questions_per_document(rng: np.random.Generator, model: Scenario, n: int) -> np.ndarray:
    """How many questions each of `n` documents has under `model`."""
    if model.heavy_tailed:  # lognormal, median 3, mean 6: exp(sigma^2 / 2) = 2
        return np.clip(np.rint(np.exp(rng.normal(np.log(3.0), np.sqrt(2 * np.log(2.0)), n))), 1, 200).astype(int)
    return rng.integers(model.questions[0], model.questions[1] + 1, n)


@lru_cache(maxsize=64)
def _size_cut(model: Scenario) -> float:
    """The questions a document needs to be among the top `size_link` share by questions (fixed seed)."""
    sizes = questions_per_document(np.random.default_rng(20_260_049), model, 200_000)
    return float(np.quantile(sizes, 1 - model.size_link)) if model.size_link else np.inf


def _fails(rng: np.random.Generator, model: Scenario, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(RAG's failure, long context's) per document, in logits (0 where the arm does not fail)."""
    rag = model.fail_logits * (rng.random(sizes.size) < model.fail_share)
    if model.size_link:
        rag = rag + model.size_link_logits * (sizes >= _size_cut(model))
    return rag, model.fail_logits * (rng.random(sizes.size) < model.lc_fail_share)


@dataclass(frozen=True)
class _Population:
    """200,000 simulated documents under a scenario (a fixed seed), weighted by their questions: what a truth is
    measured on."""
    lc: float  # long context's mean accuracy over questions
    rag_base: np.ndarray  # RAG's logits before the shift, per document
    weights: np.ndarray  # questions per document


@lru_cache(maxsize=64)
def _population(model: Scenario) -> _Population:
    rng = np.random.default_rng(20_260_041)
    n = 200_000
    sizes = questions_per_document(rng, model, n).astype(float)
    common = np.log(model.base / (1 - model.base)) + _doc_effects(rng, model, n) + rng.normal(0, QUESTION_SD_LOGIT, n)
    own = lambda: rng.normal(0, ARM_DOC_SD_LOGIT, n) + rng.normal(0, CONFIG_DOC_SD_LOGIT, n)  # noqa: E731
    rag_fails, lc_fails = _fails(rng, model, sizes)
    lc = float(np.average(_expit(common + own() + lc_fails), weights=sizes))
    return _Population(lc, common + own() + rag_fails, sizes)


@lru_cache(maxsize=64)
def rag_shift(model: Scenario, truth: float) -> float:
    """The logit shift of RAG that makes its mean accuracy over questions `base + truth` (points) above long
    context's, by bisection on 200,000 simulated documents (a fixed seed: the same shift every time)."""
    pop = _population(model)
    lo, hi = -8.0, 8.0
    for _ in range(40):
        mid = (lo + hi) / 2
        if float(np.average(_expit(pop.rag_base + mid), weights=pop.weights)) - pop.lc < truth / 100:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def miss_rate(model: Scenario, truth: float) -> float:
    """Near-identical arms: the share of questions retrieval misses so that RAG - long context is `truth` points
    (a miss costs a right answer where long context had one)."""
    if truth > 0:
        raise ValueError(f"near-identical arms differ by retrieval's misses alone: truth {truth} must be <= 0")
    return min(1.0, -truth / 100 / _population(model).lc)


def scenario_scores(rng: np.random.Generator, scenario: str, n_docs: int, truth: float, n_rag: int = 1,
                    samples: int = 1) -> SimulatedSweep:
    """A sweep of `n_docs` documents under a named scenario (SCENARIOS); "own" is `simulated_scores` with 3
    questions per document."""
    if scenario not in SCENARIOS:
        raise ValueError(f"scenario {scenario!r}: one of {', '.join(SCENARIOS)}")
    model = SCENARIOS[scenario]
    if model is None:
        return simulated_scores(rng, n_docs, 3, truth, n_rag, samples=samples)
    per_doc = questions_per_document(rng, model, n_docs)
    ids = [f"d{d:03d}-q{q}" for d in range(n_docs) for q in range(per_doc[d])]
    groups = {i: i.split("-")[0] for i in ids}
    owner = np.repeat(np.arange(n_docs), per_doc)
    common = (np.log(model.base / (1 - model.base)) + _doc_effects(rng, model, n_docs)[owner]
              + rng.normal(0.0, QUESTION_SD_LOGIT, owner.size))
    rag_fails, lc_fails = _fails(rng, model, per_doc)

    def answers(logits: np.ndarray) -> np.ndarray:  # per question, `samples` answers right or wrong
        p = _expit(logits + rng.normal(0.0, CONFIG_DOC_SD_LOGIT, n_docs)[owner])
        return rng.random((owner.size, samples)) < p[:, None]

    def scores(right: np.ndarray) -> dict[str, float]:
        return dict(zip(ids, right.mean(axis=1).tolist(), strict=True))

    lc_right = answers(common + rng.normal(0.0, ARM_DOC_SD_LOGIT, n_docs)[owner] + lc_fails[owner])
    if model.near_identical:
        miss, shared = miss_rate(model, truth), rng.random(owner.size)
        rags = []
        for _ in range(n_rag):  # a miss shared by every config with probability MISS_SHARED, else the config's own
            missed = np.where(rng.random(owner.size) < MISS_SHARED, shared, rng.random(owner.size)) < miss
            rags.append(scores(lc_right & ~missed[:, None]))
    else:
        rag_logits = (common + rng.normal(0.0, ARM_DOC_SD_LOGIT, n_docs)[owner] + rag_shift(model, truth)
                      + rag_fails[owner])
        rags = [scores(answers(rag_logits)) for _ in range(n_rag)]
    return SimulatedSweep(scores(lc_right), rags, groups, truth, [228.0 + 330 * c for c in range(n_rag)],
                          rag_cheaper=model.rag_cheaper)


def scenario_of(name: str) -> Scenario:
    """The scenario's model (the project's own, "own", reads as a logit scenario with RAG cheaper and claim `rag`)."""
    return SCENARIOS[name] or Scenario()


def candidates(sweep: SimulatedSweep, tolerance: float):
    """The verdict's selection table of the sweep (experiments.report.verdict.crossfit.Candidates), costs
    by prompt tokens (exact: no noise ties)."""
    from experiments.report.verdict.crossfit import Candidates

    docs = sorted(set(sweep.groups.values()))
    return Candidates([sweep.lc], sweep.rags, [sweep.lc_tokens], sweep.rag_tokens,
                      [(t, t) for t in sweep.rag_tokens], sweep.groups, docs, tolerance)


def simulated_verdict(sweep: SimulatedSweep, settings, rag_cheaper: bool | None = None):
    """(decision, estimate, documents) of the sweep's one verdict row, as the report computes it: one
    config per arm through cluster_t, several through the repeated cross-fit (the naive fallback when the
    documents are too few to split), then `row_decision` (the MIN_DOCUMENTS rule included). `rag_cheaper`: the
    sweep's own unless given."""
    from eval.metrics.confidence import cluster_t
    from experiments.report.verdict.compare import row_decision
    from experiments.report.verdict.crossfit import repeated_crossfit

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
    cheaper = sweep.rag_cheaper if rag_cheaper is None else rag_cheaper
    decision, _ = row_decision(est, n_groups, naive, cheaper, shares, settings)
    return decision, est, n_groups
