"""`arm=router router.path=FILE`: the learned router the report trains, run live.

The report fits a ridge model of each question's score gain of RAG over long context on features
known before either path answers, and writes it as `router_<benchmark>_<level>.json`
(experiments/arms/router_model.py). This arm deploys that file: per question it builds both prompts (the
RAG prompt retrieves; long context cuts the document once for the whole group, as the plain arm
does), reads the features from the two prompts' metadata, the question's type (`task`) and its text with the
very function the report trained on (`feature_row`, which reads the same keys from the two records),
lets the router choose, and generates only the chosen path, RAG-routed questions together and
long-context-routed ones together (so the latter still share one prefix). A run whose RAG or long-
context config differs from the ones the file was trained on (`trained_on`) is warned about.

Each record says which path answered (`route`, the path's role), what the router predicted
(`router_utility`: gain in score units plus the cost term, RAG when > 0) and from what
(`router_features`). RAG always retrieves, so every record keeps the retrieval figures and its
latency includes `retrieval_s`. A question one path cannot serve (its prompt cannot fit) is
answered by the other path, and `router_forced` says why.

With a router trained with a cost weight, the cost of each path is its prompt's tokens
(`cost_unit: prompt_tokens`) or those tokens priced by the run's `price` section as the runner prices
`cost_usd` (`cost_unit: usd`). The answer's tokens are unknown before answering and would count
alike on both paths, so they cancel in the difference the router weighs; a price that charges
measured time only (`kind: hourly`, `basis: latency`) cannot price a path beforehand and is refused
when the arm is built.

With a generator that cannot generate (`generator=none`) it routes and retrieves only: records get
status `retrieved` with the route, the features and the chosen prompt's token counts.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval.sample import Sample
from experiments.arms import router_model
from experiments.arms.base import ROLE_LONGCTX, ROLE_OTHER, ROLE_RAG, Answer, answer_with_prompts
from experiments.arms.longctx import LongContextSpec
from experiments.arms.rag import RagSpec, RetrievesFirstSpec
from experiments.arms.selfroute import RAG_FIGURES
from llm.prompt import Prompt, PromptTooLong

log = logging.getLogger(__name__)

# the `route` of a record: the role of the path that answered (experiments.arms.base)
ROUTE_RAG, ROUTE_LONGCTX = ROLE_RAG, ROLE_LONGCTX
_ROLE_OF_CHOICE = {router_model.RAG: ROUTE_RAG, router_model.LONGCTX: ROUTE_LONGCTX}

PathCost = Callable[[int], float]  # a path's prompt tokens -> its cost in the router's cost_unit


# ---------------------------------------------------------------- the router file
def router_file(cfg: Mapping[str, Any]) -> Path:
    """`router.path` of the composed config, checked to name a file (the error names the key)."""
    section = cfg.get("router")
    path = section.get("path") if section is not None else None
    if not path:
        raise ValueError("router.path is not set: arm=router needs a router file the report writes, e.g. "
                         "router.path=outputs/report/router_synthetic_all.json")
    if not Path(str(path)).is_file():
        raise ValueError(f"router.path={path}: no such file (the report writes router_<benchmark>_<level>.json "
                         "beside report.md for each verdict row it can train a router on)")
    return Path(str(path))


def file_sha256(path: Path) -> str:
    """The file's content hash: what identifies a router in the knobs and the config hash (not its path)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_configured_router(cfg: Mapping[str, Any]) -> router_model.Router:
    path = router_file(cfg)
    try:
        return router_model.load_router(path)
    except (OSError, ValueError) as err:
        raise ValueError(f"router.path={path}: {err}") from err


def trained_elsewhere(router: router_model.Router, cfg: Mapping[str, Any]) -> str | None:
    """What differs between the configs the router was trained on (its file's `trained_on` labels) and
    this run's: the features (retrieval scores, the cut) then need not mean what they meant in training."""
    mine = {"rag": RagSpec.label({**RagSpec.knobs(cfg), "arm": "rag"}),
            "longctx": LongContextSpec.label({**LongContextSpec.knobs(cfg), "arm": "longctx"})}
    differ = [f"{path} {router.trained_on[path]!r}, this run {label!r}" for path, label in mine.items()
              if router.trained_on.get(path) not in (None, label)]
    return "; ".join(differ) or None


def path_cost(router: router_model.Router, price: Mapping[str, Any] | None, where: str) -> PathCost | None:
    """How to cost a path before answering, in the router's `cost_unit` (None: the router weighs no cost)."""
    if not router.cost_weight:
        return None
    if router.cost_unit == "prompt_tokens":
        return float
    from llm.cost import build_cost_model

    model = build_cost_model(price)
    if model.kind is None or not model.needs_tokens():
        raise ValueError(
            f"router.path={where}: the router trades score for cost in usd (cost_weight {router.cost_weight}), "
            f"but price {dict(price or {})} cannot price a prompt before it is answered (it charges measured "
            "time, or nothing): use a per_token price, or price.basis=throughput with "
            "+price.prefill_tokens_per_s / +price.decode_tokens_per_s")

    def usd(prompt_tokens: int) -> float:
        cost = model.cost(prompt_tokens, 0, 0.0)  # the answer's tokens cancel between the paths
        if cost is None:  # (a price that reads tokens prices every prompt: checked above)
            raise ValueError(f"router.path={where}: price {dict(price or {})} gave no cost for a prompt")
        return cost

    return usd


# ---------------------------------------------------------------- one question routed
@dataclass
class Routed:
    """One question's prompts (by route, those that could be built), why a path could not serve it,
    and where it goes (None: neither path can)."""

    sample: Sample
    prompts: dict[str, Prompt]
    errors: dict[str, str]
    features: dict[str, float | None] = field(default_factory=dict)
    route: str | None = None
    utility: float | None = None

    def prompt(self) -> Prompt:
        """The chosen path's prompt, its metadata completed with the route and (RAG always retrieved)
        the retrieval figures, so the record and its latency carry both."""
        if self.route is None:
            raise RuntimeError(f"{self.sample.id}: no path can serve this question (Routed.route is None)")
        chosen = self.prompts[self.route]
        meta: dict[str, Any] = {}
        rag = self.prompts.get(ROUTE_RAG)
        if self.route == ROUTE_LONGCTX and rag is not None:
            meta.update({k: rag.meta.get(k) for k in RAG_FIGURES})
            meta["rag_context_tokens"] = rag.meta.get("context_tokens")
        meta.update(chosen.meta)
        meta.update(route=self.route, router_utility=self.utility, router_features=self.features)
        if self.errors:
            failed = ", ".join(self.errors)
            meta["router_forced"] = f"{failed} cannot serve it: {'; '.join(self.errors.values())}"
        chosen.meta = meta
        return chosen


class _Built:
    """Prompts already built and routed, handed to `answer_with_prompts` as an arm that builds them."""

    def __init__(self, routed: list[Routed]):
        self.prompts = {r.sample.id: r.prompt() for r in routed}

    def build(self, sample: Sample) -> Prompt:
        return self.prompts[sample.id]


class RouterArm:
    name = "router"

    def __init__(self, rag_arm, longctx_arm, generator, router: router_model.Router, cost: PathCost | None = None,
                 source: str = "router"):
        self.rag, self.longctx, self.gen = rag_arm, longctx_arm, generator
        self.router, self.cost, self.source = router, cost, source

    @property
    def index_builds(self) -> int | None:
        return getattr(self.rag, "index_builds", None)

    def prepare(self, samples: list[Sample]) -> None:
        """One long-context cut for the group (the runner calls it with a resumed group's every question)."""
        prepare = getattr(self.longctx, "prepare", None)
        if prepare is not None:
            prepare(samples)

    def route(self, sample: Sample) -> Routed:
        """Both prompts, the features from their metadata, and the router's choice."""
        prompts, errors = {}, {}
        for route, build in ((ROUTE_RAG, self.rag.build), (ROUTE_LONGCTX, self.longctx.build)):
            try:
                prompts[route] = build(sample)
            except PromptTooLong as err:
                errors[route] = str(err)
        tokens = {r: self.gen.prompt_tokens(p) for r, p in prompts.items()}
        # what the report reads from the two records: each prompt's metadata, its tokens, the question's type
        # and its text
        metas = {r: {**p.meta, "prompt_tokens": tokens[r], "task": sample.task, "question": sample.question}
                 for r, p in prompts.items()}
        features = router_model.feature_row(metas.get(ROUTE_LONGCTX, {}), metas.get(ROUTE_RAG, {}))
        if len(prompts) < 2:  # one path cannot serve it: the other answers (or neither can)
            return Routed(sample, prompts, errors, features, next(iter(prompts), None))
        costs = (self.cost(tokens[ROUTE_LONGCTX]), self.cost(tokens[ROUTE_RAG])) if self.cost else (None, None)
        try:
            choice, utility = self.router.choose(features, *costs)
        except ValueError as err:
            raise ValueError(f"router.path={self.source}, question {sample.id}: {err}") from err
        return Routed(sample, prompts, errors, features, _ROLE_OF_CHOICE[choice], utility)

    def answer(self, samples: list[Sample]) -> list[Answer]:
        self.prepare(samples)
        routed = [self.route(s) for s in samples]  # every prompt built after one prepare: one cut
        answers = [Answer(r.sample, skipped="neither path can serve it: " + "; ".join(
            f"{path}: {why}" for path, why in r.errors.items())) for r in routed if r.route is None]
        for path in (ROUTE_RAG, ROUTE_LONGCTX):
            mine = [r for r in routed if r.route == path]
            if mine:
                answers += answer_with_prompts(_Built(mine), self.gen, [r.sample for r in mine], prepare=False)
        order = {s.id: i for i, s in enumerate(samples)}
        return sorted(answers, key=lambda a: order[a.sample.id])


# ---------------------------------------------------------------- the spec
class RouterSpec(RetrievesFirstSpec):
    name = "router"
    title = "Learned router"
    colour = "tab:green"
    pick = "best learned router"
    role = ROLE_OTHER
    sections = RagSpec.sections + LongContextSpec.sections + ("router",)

    @classmethod
    def knobs(cls, cfg: Mapping[str, Any]) -> dict[str, Any]:
        """RAG's and long context's knobs, and the router file's content hash (its identity, not its path)."""
        sha = file_sha256(router_file(cfg))
        return {**RagSpec.knobs(cfg), **LongContextSpec.knobs(cfg), "router_sha256": sha[:12]}

    @classmethod
    def label(cls, knobs: Mapping[str, Any], retrieval_only: bool = False) -> str:
        text = RagSpec.rag_label(knobs)
        if knobs.get("truncation") not in (None, "benchmark"):
            text += f" lc-{knobs['truncation']}"
        if knobs.get("router_sha256"):
            text += f" r{str(knobs['router_sha256'])[:8]}"
        return text + (" retrieval-only" if retrieval_only else "")

    @classmethod
    def hashed(cls, sections: dict[str, Any], multi_document: bool) -> dict[str, Any]:
        """RAG's view of its sections, and the router section as the file's whole content hash: a
        retrained file is another configuration, the same file moved elsewhere is not."""
        out = RagSpec.hashed(sections, multi_document)
        return {**out, "router": {"sha256": file_sha256(router_file(sections))}}

    @classmethod
    def build(cls, generator, cfg: dict[str, Any]) -> RouterArm:
        router = load_configured_router(cfg)  # before any index is built: a bad file fails at once
        where = str(router_file(cfg))
        differ = trained_elsewhere(router, cfg)
        if differ:
            log.warning("router.path=%s was trained on other configs (%s): its features may not mean here what "
                        "they meant in training", where, differ)
        cost = path_cost(router, cfg.get("price"), where)
        return RouterArm(RagSpec.build(generator, cfg), LongContextSpec.build(generator, cfg), generator, router,
                         cost, where)
