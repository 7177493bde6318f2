"""Build the long-context prompt for a sample: the benchmark template with the whole context,
truncated by the benchmark's policy when prompt + generation would exceed the model window."""

from __future__ import annotations

from dataclasses import dataclass

from eval.evidence import Region, present_fraction
from eval.sample import Sample
from llm.base import Generator
from llm.prompt import Prompt, PromptTooLong
from longctx import truncation


@dataclass
class LongContextConfig:
    truncation: str | None = None  # None: the benchmark's own policy
    margin_tokens: int = 16  # slack for tokens merging across the context's edges
    min_coverage: float = 0.6  # share of an evidence span that must survive to count as retained
    budget_tokens: int | None = None  # cap the context at this many tokens (budget-matched with a RAG config)

    def __post_init__(self) -> None:
        if self.budget_tokens is not None and self.budget_tokens <= 0:
            raise ValueError(f"longctx.budget_tokens must be positive or null, got {self.budget_tokens}")


class LongContextArm:
    name = "longctx"

    def __init__(self, generator: Generator, cfg: LongContextConfig):
        self.gen, self.cfg = generator, cfg
        self._group_budget: dict[tuple[int, int], int] = {}
        if cfg.truncation is not None and cfg.truncation not in truncation.POLICIES:
            raise ValueError(f"longctx.truncation={cfg.truncation!r}; allowed: null, {', '.join(truncation.POLICIES)}")

    def prepare(self, samples: list[Sample]) -> None:
        """Before building a group's prompts: questions over one context get one context budget (the
        smallest any of them allows), so a truncated context is cut the same way for all of them and
        stays a shared prefix (one prefill per document, not one per question length)."""
        self._group_budget: dict[tuple[int, str], int] = {}
        for sample in samples:
            key = _context_key(sample)
            budget = self._budget(sample)
            if budget > 0:
                self._group_budget[key] = min(budget, self._group_budget.get(key, budget))

    def _budget(self, sample: Sample) -> int:
        tpl = sample.template
        empty = Prompt(user=tpl.render("", sample.question), system=tpl.system, max_new_tokens=tpl.max_new_tokens)
        return self.gen.context_window - tpl.max_new_tokens - self.gen.prompt_tokens(empty) - self.cfg.margin_tokens

    def build(self, sample: Sample) -> Prompt:
        tpl = sample.template
        budget = self._budget(sample)
        overhead = self.gen.context_window - tpl.max_new_tokens - self.cfg.margin_tokens - budget
        if budget > 0:
            budget = min(budget, self._group_budget.get(_context_key(sample), budget))
        if budget <= 0:
            raise PromptTooLong(
                f"the prompt without any context takes {overhead} tokens; with {tpl.max_new_tokens} new "
                f"tokens it does not fit the {self.gen.context_window}-token window"
            )
        if self.cfg.budget_tokens is not None:
            budget = min(budget, self.cfg.budget_tokens)
        offsets = self.gen.tokenizer.offsets(sample.context)
        policy = self.cfg.truncation or tpl.truncation
        documents = [(d.start, d.end) for d in sample.documents]
        kept = truncation.keep_regions(offsets, len(sample.context), budget, policy, documents)
        context = truncation.apply(sample.context, kept)
        head, _ = tpl.parts()
        user = tpl.render(context, sample.question)
        prefix_chars = len(head.replace("{question}", sample.question)) + len(context)
        regions = _regions_with_documents(kept, sample)
        retained = present_fraction(sample.evidence, regions, self.cfg.min_coverage)
        return Prompt(
            user=user, system=tpl.system, max_new_tokens=tpl.max_new_tokens, prefix_chars=prefix_chars,
            meta={
                "context_tokens": min(len(offsets), budget),
                "context_tokens_full": len(offsets),
                "truncated": len(offsets) > budget,
                "kept_spans": kept,
                "evidence_retained": retained,
                "distractors_retained": present_fraction(sample.distractors, regions, self.cfg.min_coverage),
            },
        )


def _regions_with_documents(kept: list[tuple[int, int]], sample: Sample) -> list[Region]:
    """Kept char regions, split at document borders so document-level evidence can be checked."""
    if not sample.documents:
        return [Region(a, b) for a, b in kept]
    regions = []
    for a, b in kept:
        for d in sample.documents:
            lo, hi = max(a, d.start), min(b, d.end)
            if hi > lo:
                regions.append(Region(lo, hi, d.doc_id))
        regions.append(Region(a, b))
    return regions


def _context_key(sample: Sample) -> tuple[int, int]:
    return len(sample.context), hash(sample.context)
