"""The arms a config point can run, and how one group of samples gets its answers.

`rag` and `longctx` live in their packages and turn a sample into a prompt; `closedbook` sends the
template with no context. `selfroute` (Li et al., 2024, "Retrieval Augmented Generation or
Long-Context LLMs? A Comprehensive Study and Hybrid Approach") combines them: RAG first, with the
instruction to write "unanswerable" when the retrieved text does not answer the question; those
samples go to long context. Its record says which path answered and counts the tokens of both.

With a generator that cannot generate (`generator=none`), every arm only builds its context:
records get status `retrieved` with evidence recall, retention and token counts, and no score.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from eval.sample import Sample
from llm.prompt import Generation, PromptTooLong

ARMS = ("longctx", "rag", "closedbook", "selfroute")

SELF_ROUTE_INSTRUCTION = "Write unanswerable if the query can not be answered based on the provided text."
_DECLINE = re.compile(r"unanswerable|not answerable|cannot be answered|无法回答|不能回答", re.IGNORECASE)


@dataclass
class Answer:
    """What one sample got from an arm: a generation, or a reason it was skipped."""

    sample: Sample
    meta: dict[str, Any] = field(default_factory=dict)
    text: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)  # prompt/completion tokens, latency, ttft, cached
    skipped: str | None = None


def _usage(gens: list[Generation], retrieval_s: float | None = None) -> dict[str, Any]:
    """Tokens and times of one sample's generator calls (Self-Route: both).

    `generation_s`: generator time charged to this request (what a batch costs; with prefix
    reuse a share of one prefill plus a share of the batched decode). `latency_s`: what one user
    waits: `retrieval_s` (RAG) plus each call's time as served to that user (with prefix reuse
    the whole prefill and its batch's decode). `prefill_s` / `prefix_group_size`: the shared
    prefill of the long-context call and how many questions shared it (None without reuse)."""
    ttft = [g.ttft_s for g in gens if g.ttft_s is not None]
    user = sum(g.user_latency_s if g.user_latency_s is not None else g.latency_s for g in gens)
    shared = [g for g in gens if g.prefill_s is not None]
    return {
        "prompt_tokens": sum(g.prompt_tokens for g in gens),
        "completion_tokens": sum(g.completion_tokens for g in gens),
        "generation_s": round(sum(g.latency_s for g in gens), 4),
        "retrieval_s": None if retrieval_s is None else round(retrieval_s, 6),
        "latency_s": round(user + (retrieval_s or 0.0), 4),
        "prefill_s": shared[-1].prefill_s if shared else None,
        "prefix_group_size": shared[-1].prefix_group_size if shared else None,
        "ttft_s": round(ttft[0], 4) if ttft else None,
        "cached": all(g.cached for g in gens),
        "calls": len(gens),
    }


def answer_with_prompts(arm, generator, samples: list[Sample]) -> list[Answer]:
    """Build every sample's prompt, then generate them together (one context: one prefix)."""
    answers, ready = [], []
    if hasattr(arm, "prepare"):
        arm.prepare(samples)
    for sample in samples:
        try:
            prompt = arm.build(sample)
        except PromptTooLong as err:
            answers.append(Answer(sample, skipped=str(err)))
            continue
        ready.append((sample, prompt))
    if not getattr(generator, "generates", True):
        answers += [Answer(s, meta=dict(p.meta)) for s, p in ready]
    else:
        gens = generator.generate([p for _, p in ready]) if ready else []
        answers += [Answer(s, meta=dict(p.meta), text=g.text, usage=_usage([g], p.meta.get("retrieval_s")))
                    for (s, p), g in zip(ready, gens)]
    order = {s.id: i for i, s in enumerate(samples)}
    return sorted(answers, key=lambda a: order[a.sample.id])


def declined(text: str) -> bool:
    return bool(_DECLINE.search(text or ""))


class SelfRouteArm:
    name = "selfroute"

    def __init__(self, rag_arm, longctx_arm, generator):
        self.rag, self.longctx, self.gen = rag_arm, longctx_arm, generator

    @property
    def index_builds(self) -> int | None:
        return getattr(self.rag, "index_builds", None)

    @property
    def index_seconds(self) -> float | None:
        return getattr(self.rag, "index_seconds", None)

    def answer(self, samples: list[Sample]) -> list[Answer]:
        first: list[Answer] = []
        ready = []
        for sample in samples:
            try:
                prompt = self.rag.build(sample)
            except PromptTooLong as err:
                first.append(Answer(sample, skipped=str(err)))
                continue
            prompt.user = prompt.user.rstrip() + "\n\n" + SELF_ROUTE_INSTRUCTION
            ready.append((sample, prompt))
        if not getattr(self.gen, "generates", True):
            return first + [Answer(s, meta={**p.meta, "route": "rag"}) for s, p in ready]
        gens = self.gen.generate([p for _, p in ready]) if ready else []
        to_longctx = []
        for (sample, prompt), gen in zip(ready, gens):
            if declined(gen.text):
                to_longctx.append((sample, prompt, gen))
            else:
                first.append(Answer(sample, meta={**prompt.meta, "route": "rag", "selfroute_declined": False},
                                    text=gen.text, usage=_usage([gen], prompt.meta.get("retrieval_s"))))
        fallback = answer_with_prompts(self.longctx, self.gen, [s for s, _, _ in to_longctx])
        for (sample, rag_prompt, rag_gen), ans in zip(to_longctx, fallback):
            rag_meta = {k: rag_prompt.meta.get(k) for k in ("evidence_recall", "evidence_in_prompt", "distractors_retrieved",
                                                             "retrieved", "n_chunks", "retrieval_s")}
            ans.meta = {**rag_meta, **ans.meta, "route": "longctx", "selfroute_declined": True,
                        "rag_context_tokens": rag_prompt.meta.get("context_tokens")}
            if ans.skipped is None:
                ans.usage = _usage([rag_gen, _generation_of(ans)], rag_prompt.meta.get("retrieval_s"))
            else:  # long context could not serve it: the RAG answer stands
                ans.text, ans.usage, ans.skipped = rag_gen.text, _usage([rag_gen], rag_prompt.meta.get("retrieval_s")), None
                ans.meta["route"] = "rag"
            first.append(ans)
        order = {s.id: i for i, s in enumerate(samples)}
        return sorted(first, key=lambda a: order[a.sample.id])


def _generation_of(ans: Answer) -> Generation:
    u = ans.usage
    return Generation(text=ans.text or "", prompt_tokens=u["prompt_tokens"], completion_tokens=u["completion_tokens"],
                      latency_s=u["generation_s"], cached=u["cached"], ttft_s=None, prefill_s=u["prefill_s"],
                      prefix_group_size=u["prefix_group_size"], user_latency_s=u["latency_s"])


def answer_group(arm, generator, samples: list[Sample]) -> list[Answer]:
    if hasattr(arm, "answer"):
        return arm.answer(samples)
    return answer_with_prompts(arm, generator, samples)


def build_arm(name: str, generator, cfg: dict[str, Any]):
    """The arm `name` from the composed config (`cfg`: the whole config as plain containers)."""
    if name == "longctx":
        return _longctx(generator, cfg)
    if name == "rag":
        return _rag(generator, cfg)
    if name == "closedbook":
        from longctx.closedbook import ClosedBookArm

        return ClosedBookArm(generator)
    if name == "selfroute":
        return SelfRouteArm(_rag(generator, cfg), _longctx(generator, cfg), generator)
    raise ValueError(f"arm.name={name!r}; allowed: {', '.join(ARMS)}")


def _longctx(generator, cfg: dict[str, Any]):
    from longctx.arm import LongContextArm, LongContextConfig

    return LongContextArm(generator, LongContextConfig(**cfg["longctx"]))


def _rag(generator, cfg: dict[str, Any]):
    try:
        from rag.build import build_rag_arm
    except ImportError:
        build_rag_arm = None
    if build_rag_arm is not None:
        return build_rag_arm(generator, cfg["rag"], cfg["retriever"], cfg.get("chunker") or {}, cfg.get("reranker") or {},
                             cfg["run"]["cache_dir"])
    from rag.arm import RagArm, RagConfig
    from rag.retrievers import build_retriever

    return RagArm(generator, build_retriever(cfg["retriever"]), RagConfig(**cfg["rag"]))
