"""`arm=closedbook`: the benchmark's prompt with an empty context.

It measures what the model answers from memory alone, the floor both real arms must clear
(a long-context score barely above it says the model is not reading the document).
"""

from __future__ import annotations

from typing import Any

from eval.evidence import split_kinds
from eval.sample import Sample
from experiments.arms.base import ArmSpec
from llm.prompt import Prompt, PromptTooLong


class ClosedBookArm:
    name = "closedbook"

    def __init__(self, generator):
        self.gen = generator

    def build(self, sample: Sample) -> Prompt:
        tpl = sample.template
        prompt = Prompt.from_template(tpl, "", sample.question, prefix_chars=0)
        tokens = self.gen.prompt_tokens(prompt)
        if tokens + tpl.max_new_tokens > self.gen.context_window:
            raise PromptTooLong(f"the prompt takes {tokens} tokens; with {tpl.max_new_tokens} new tokens it does "
                                f"not fit the {self.gen.context_window}-token window")
        spans, docs = split_kinds(sample.evidence)
        prompt.meta = {"context_tokens": 0, "evidence_retained": 0.0 if spans else None,
                       "docs_retained": 0.0 if docs else None}
        return prompt


class ClosedBookSpec(ArmSpec):
    name = "closedbook"
    title = "closed book"
    colour = "tab:gray"
    pick = "closed book (no context)"
    context = False

    @classmethod
    def build(cls, generator, cfg: dict[str, Any]) -> ClosedBookArm:
        return ClosedBookArm(generator)
