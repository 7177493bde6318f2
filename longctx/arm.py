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
        if cfg.truncation is not None and cfg.truncation not in truncation.POLICIES:
            raise ValueError(f"longctx.truncation={cfg.truncation!r}; allowed: null, {', '.join(truncation.POLICIES)}")

    def build(self, sample: Sample) -> Prompt:
        tpl = sample.template
        empty = Prompt.from_template(tpl, "", sample.question)
        overhead = self.gen.prompt_tokens(empty)
        budget = self.gen.context_window - tpl.max_new_tokens - overhead - self.cfg.margin_tokens
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
        if policy == "drop_documents" and sample.metadata.get("drop_order") and sample.documents:
            kept = truncation.released_documents(
                offsets, len(sample.context), budget, [(d.doc_id, d.start, d.end) for d in sample.documents],
                sample.metadata["drop_order"], _second_shuffle(sample))
        else:
            kept = truncation.keep_regions(offsets, len(sample.context), budget, policy, documents)
        context = truncation.apply(sample.context, kept)
        head, _ = tpl.parts()
        prefix_chars = len(head.replace("{question}", sample.question)) + len(context)
        regions = _regions_with_documents(kept, sample)
        retained = present_fraction(sample.evidence, regions, self.cfg.min_coverage)
        return Prompt.from_template(
            tpl, context, sample.question, prefix_chars=prefix_chars,
            meta={
                "context_tokens": min(len(offsets), budget),
                "context_tokens_full": len(offsets),
                "truncated": len(offsets) > budget,
                "kept_spans": kept,
                "evidence_retained": retained,
                "distractors_retained": present_fraction(sample.distractors, regions, self.cfg.min_coverage),
            },
        )


def _second_shuffle(sample: Sample):
    """Loong's released second shuffle, from the RNG state the loader recorded (None: no shuffle)."""
    state = sample.metadata.get("second_shuffle")
    if not state:
        return None
    from eval.benchmarks.loong import advanced

    return advanced(int(state["seed"]), int(state["words"])).shuffle


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
