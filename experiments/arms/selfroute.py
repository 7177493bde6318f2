"""`arm=selfroute`: Self-Route (Li et al., 2024, "Retrieval Augmented Generation or Long-Context
LLMs? A Comprehensive Study and Hybrid Approach"). RAG first, with the instruction to write
"unanswerable" when the retrieved text does not answer the question; those samples go to long
context. Its record says which path answered (`route`) and counts the tokens of both. It reads the
`rag:`/`retriever` settings for its first path and the `longctx:` settings for its fallback.

With a generator that cannot generate (`generator=none`), it only retrieves: records get status
`retrieved` with evidence recall and token counts, and no score.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from eval.sample import Sample
from experiments.arms.base import ROLE_LONGCTX, ROLE_RAG, Answer, answer_with_prompts, usage_of
from experiments.arms.longctx import LongContextSpec
from experiments.arms.rag import RagSpec, RetrievesFirstSpec
from llm.prompt import Generation, PromptTooLong

# the `route` a Self-Route record answered by: the role of that path (experiments.arms.base)
ROUTE_RAG, ROUTE_LONGCTX = ROLE_RAG, ROLE_LONGCTX

# The paper's instruction (Li et al. 2024, Sec. 5 / Appendix): it goes with the query, before the answer cue.
SELF_ROUTE_INSTRUCTION = "Write unanswerable if the query can not be answered based on the provided text."
_DECLINE = re.compile(r"unanswerable|not answerable|cannot be answered|无法回答|不能回答", re.IGNORECASE)


def declined(text: str) -> bool:
    return bool(_DECLINE.search(text or ""))


# what the RAG step measured, kept on an answer that fell back to long context
RAG_FIGURES = ("evidence_recall", "evidence_in_prompt", "doc_recall", "docs_in_prompt", "distractors_retrieved",
               "retrieved", "n_chunks", "retrieval_s", "retrieved_overlap")


class SelfRouteArm:
    name = "selfroute"

    def __init__(self, rag_arm, longctx_arm, generator):
        self.rag, self.longctx, self.gen = rag_arm, longctx_arm, generator

    @property
    def index_builds(self) -> int | None:
        return getattr(self.rag, "index_builds", None)

    def rag_prompt(self, sample: Sample):
        """The plain RAG arm's prompt with the instruction right after the question (so before the
        template's answer cue, as in the paper); retrieval still searches with the question alone.
        A template without `{question}` (summaries) gets the instruction at its end."""
        prompt = self.rag.build(sample)
        prompt.user = with_instruction(prompt.user, sample)
        return prompt

    def prepare(self, samples: list[Sample]) -> None:
        """The fallback's one long-context cut for the group (the runner calls it with a resumed group's
        every question, so a resumed run cuts as an uninterrupted one)."""
        prepare = getattr(self.longctx, "prepare", None)
        if prepare is not None:
            prepare(samples)

    def answer(self, samples: list[Sample]) -> list[Answer]:
        first: list[Answer] = []
        ready = []
        # the fallback's truncation is decided once for the whole group, not for the declined subset
        self.prepare(samples)
        for sample in samples:
            try:
                prompt = self.rag_prompt(sample)
            except PromptTooLong as err:
                first.append(Answer(sample, skipped=str(err)))
                continue
            ready.append((sample, prompt))
        if not getattr(self.gen, "generates", True):
            return first + [Answer(s, meta={**p.meta, "route": ROUTE_RAG, "prompt_tokens": self.gen.prompt_tokens(p)})
                            for s, p in ready]
        gens = self.gen.generate([p for _, p in ready]) if ready else []
        to_longctx = []
        for (sample, prompt), gen in zip(ready, gens, strict=True):
            if declined(gen.text):
                to_longctx.append((sample, prompt, gen))
            else:
                first.append(Answer(sample, meta={**prompt.meta, "route": ROUTE_RAG, "selfroute_declined": False},
                                    text=gen.text, usage=usage_of([gen], prompt.meta.get("retrieval_s"),
                                                                   prompt.meta.get("retrieval_cpu_s"))))
        fallback = answer_with_prompts(self.longctx, self.gen, [s for s, _, _ in to_longctx], prepare=False)
        for (_, rag_prompt, rag_gen), ans in zip(to_longctx, fallback, strict=True):
            rag_meta = {k: rag_prompt.meta.get(k) for k in RAG_FIGURES}
            ans.meta = {**rag_meta, **ans.meta, "route": ROUTE_LONGCTX, "selfroute_declined": True,
                        "rag_context_tokens": rag_prompt.meta.get("context_tokens")}
            if ans.skipped is None:
                ans.usage = usage_of([rag_gen, _generation_of(ans)], rag_prompt.meta.get("retrieval_s"),
                                     rag_prompt.meta.get("retrieval_cpu_s"))
            else:  # long context could not serve it: the RAG answer stands
                ans.text, ans.skipped = rag_gen.text, None
                ans.usage = usage_of([rag_gen], rag_prompt.meta.get("retrieval_s"),
                                     rag_prompt.meta.get("retrieval_cpu_s"))
                ans.meta["route"] = ROUTE_RAG
            first.append(ans)
        order = {s.id: i for i, s in enumerate(samples)}
        return sorted(first, key=lambda a: order[a.sample.id])


def with_instruction(user: str, sample: Sample) -> str:
    """`user` (the filled template) with SELF_ROUTE_INSTRUCTION on the line after the question."""
    head, tail = sample.template.parts()
    asked = sample.question + "\n" + SELF_ROUTE_INSTRUCTION
    if "{question}" in tail:
        filled = tail.replace("{question}", sample.question)
        if user.endswith(filled):
            return user[: len(user) - len(filled)] + tail.replace("{question}", asked)
    elif "{question}" in head:
        filled = head.replace("{question}", sample.question)
        if user.startswith(filled):
            return head.replace("{question}", asked) + user[len(filled):]
    return user.rstrip() + "\n\n" + SELF_ROUTE_INSTRUCTION


def _generation_of(ans: Answer) -> Generation:
    u = ans.usage
    return Generation(text=ans.text or "", prompt_tokens=u["prompt_tokens"], completion_tokens=u["completion_tokens"],
                      latency_s=u["generation_s"], cached=u["cached"], ttft_s=None, prefill_s=u["prefill_s"],
                      prefix_group_size=u["prefix_group_size"], user_latency_s=u["latency_s"],
                      cpu_s=u.get("cpu_s"), prefill_cpu_s=u.get("prefill_cpu_s"), decode_batch=u.get("decode_batch"),
                      decode_policy=u.get("decode_policy"))


class SelfRouteSpec(RetrievesFirstSpec):
    name = "selfroute"
    title = "Self-Route"
    colour = "tab:purple"
    sections = RagSpec.sections + LongContextSpec.sections

    @classmethod
    def knobs(cls, cfg: Mapping[str, Any]) -> dict[str, Any]:
        return {**RagSpec.knobs(cfg), **LongContextSpec.knobs(cfg)}

    @classmethod
    def label(cls, knobs: Mapping[str, Any], retrieval_only: bool = False) -> str:
        text = RagSpec.rag_label(knobs)
        if knobs.get("truncation") not in (None, "benchmark"):
            text += f" lc-{knobs['truncation']}"
        return text + (" retrieval-only" if retrieval_only else "")

    @classmethod
    def hashed(cls, sections: dict[str, Any], multi_document: bool) -> dict[str, Any]:
        return RagSpec.hashed(sections, multi_document)

    @classmethod
    def build(cls, generator, cfg: dict[str, Any]) -> SelfRouteArm:
        return SelfRouteArm(RagSpec.build(generator, cfg), LongContextSpec.build(generator, cfg), generator)
