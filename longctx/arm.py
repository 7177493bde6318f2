"""Build the long-context prompt for a sample: the benchmark template with the whole context,
truncated by the benchmark's policy when prompt + generation would exceed the model window."""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from eval.evidence import Region, present_fraction, split_kinds
from eval.evidence_text import answer_in_text, window_around
from eval.per_context import PerContext
from eval.replay import replayed_shuffle
from eval.sample import Document, Sample
from llm.base import Generator
from llm.prompt import Prompt, PromptTooLong
from longctx import truncation
from longctx.context_tokens import ContextTokens


@dataclass
class LongContextConfig:
    truncation: str | None = None  # None: the benchmark's own policy
    margin_tokens: int = 16  # slack for tokens merging across the context's edges
    min_coverage: float = 0.6  # share of an evidence span that must survive to count as retained
    budget_tokens: int | None = None  # cap the context at this many tokens (budget-matched with a RAG config)
    # `prompt_middle` (LV-Eval): the whole prompt is cut to window - reserve_tokens tokens (the released
    # CLI's --model-max-length 15500 for a 16k window)
    reserve_tokens: int = 500

    def __post_init__(self) -> None:
        if self.budget_tokens is not None and self.budget_tokens <= 0:
            raise ValueError(f"longctx.budget_tokens must be positive or null, got {self.budget_tokens}")
        if self.reserve_tokens < 0:
            raise ValueError(f"longctx.reserve_tokens must be 0 or more, got {self.reserve_tokens}")


@dataclass(frozen=True)
class _Limits:
    """What a sample (or the group of questions over its document) allows the context."""

    budget: int  # context tokens, for the context-level policies
    max_len: int  # tokens of the whole raw prompt, for `prompt_middle`
    head: int  # raw tokens of the template before the context (question filled)
    tail: int  # ... and after it

    @staticmethod
    def of_group(limits: list[_Limits]) -> _Limits:
        """The cut every question of a group can take: the tightest budget, the longest question."""
        return _Limits(min(x.budget for x in limits), min(x.max_len for x in limits),
                       max(x.head for x in limits), max(x.tail for x in limits))


class LongContextArm:
    """Questions over one document get one cut of it (so they share a prefix): `prepare(samples)`,
    called with the group before its prompts are built, sizes the cut for the group's longest
    question and tightest budget; `build` without it sizes the cut for the sample alone."""

    name = "longctx"

    def __init__(self, generator: Generator, cfg: LongContextConfig):
        self.gen, self.cfg = generator, cfg
        if cfg.truncation is not None and cfg.truncation not in truncation.POLICIES:
            raise ValueError(f"longctx.truncation={cfg.truncation!r}; allowed: null, {', '.join(truncation.POLICIES)}")
        self._group: tuple[str, frozenset[str], _Limits] | None = None  # the prepared group
        self.tokens = ContextTokens(generator.tokenizer)  # each context tokenized once, whatever its questions
        self._documents: PerContext[_DocumentIndex] = PerContext()

    def _limits(self, sample: Sample) -> _Limits:
        tpl = sample.template
        overhead = self.gen.prompt_tokens(Prompt.from_template(tpl, "", sample.question))
        window = self.gen.context_window
        budget = window - tpl.max_new_tokens - overhead - self.cfg.margin_tokens
        if budget <= 0:
            raise PromptTooLong(
                f"the prompt without any context takes {overhead} tokens; with {tpl.max_new_tokens} new "
                f"tokens it does not fit the {window}-token window"
            )
        head, tail = tpl.parts()
        n_head = self.gen.tokenizer.count(head.replace("{question}", sample.question))
        n_tail = self.gen.tokenizer.count(tail.replace("{question}", sample.question))
        # the raw prompt's cap; never more than what fits with the chat template and the answer
        max_len = min(window - self.cfg.reserve_tokens, budget + n_head + n_tail)
        return _Limits(budget, max_len, n_head, n_tail)

    def prepare(self, samples: list[Sample]) -> None:
        """Size one cut for each group of `samples` (the runner passes one group at a time). Part of a
        group already prepared whole (a resumed run answering the rest) keeps the whole group's cut."""
        groups = {s.group for s in samples}
        ids = frozenset(s.id for s in samples)
        if self._group and len(groups) == 1 and self._group[0] == samples[0].group and ids <= self._group[1]:
            return
        self._group = None
        if len(groups) != 1 or not samples[0].group:
            return
        limits = []
        for s in samples:
            try:
                limits.append(self._limits(s))
            except PromptTooLong:
                continue  # skipped on its own in build
        if limits:
            self._group = (samples[0].group, frozenset(s.id for s in samples), _Limits.of_group(limits))

    def build(self, sample: Sample) -> Prompt:
        tpl = sample.template
        own = self._limits(sample)  # raises PromptTooLong when nothing fits
        prepared = self._group
        lim = prepared[2] if prepared and prepared[0] == sample.group and sample.id in prepared[1] else own
        offsets = self.tokens.of(sample.context)
        policy = self.cfg.truncation or tpl.truncation
        budget = lim.budget
        if policy == "prompt_middle" and self.cfg.budget_tokens is not None:
            policy = "middle"  # a budget-matched control cuts the context itself
        if self.cfg.budget_tokens is not None:
            budget = min(budget, self.cfg.budget_tokens)
        documents = [(d.start, d.end) for d in sample.documents]
        if policy == "prompt_middle":
            kept, context_tokens = self._prompt_middle(offsets, len(sample.context), lim)
        elif policy == "drop_documents" and sample.metadata.get("drop_order") and sample.documents:
            kept = truncation.released_documents(
                offsets, len(sample.context), budget, [(d.doc_id, d.start, d.end) for d in sample.documents],
                sample.metadata["drop_order"], _second_shuffle(sample))
            context_tokens = min(len(offsets), budget)
        else:
            kept = truncation.keep_regions(offsets, len(sample.context), budget, policy, documents)
            context_tokens = min(len(offsets), budget)
        context = truncation.apply(sample.context, kept)
        head, _ = tpl.parts()
        prefix_chars = len(head.replace("{question}", sample.question)) + len(context)
        documents_index = self._documents.get(sample.context, lambda: _DocumentIndex(sample.documents),
                                              sample.documents)
        regions = documents_index.regions(kept)
        spans, docs = split_kinds(sample.evidence)
        return Prompt.from_template(
            tpl, context, sample.question, prefix_chars=prefix_chars,
            meta={
                "context_tokens": context_tokens,
                "context_tokens_full": len(offsets),
                "truncated": kept != [(0, len(sample.context))],
                "kept_spans": kept,
                "evidence_retained": present_fraction(spans, regions, self.cfg.min_coverage),
                "docs_retained": present_fraction(docs, regions, self.cfg.min_coverage),
                "distractors_retained": present_fraction(sample.distractors, regions, self.cfg.min_coverage),
                "evidence_window": window_around(sample.context, spans),
                "answer_in_context": answer_in_text(sample.answers, context, sample.language),
            },
        )

    def _prompt_middle(self, offsets, text_len: int, lim: _Limits) -> tuple[list[tuple[int, int]], int]:
        """LV-Eval's `truncate_prompt`: when the raw prompt is over `max_len` tokens, keep its first
        and last int(max_len / 2); the template's text is not cut, so the context loses its middle."""
        n = len(offsets)
        if lim.head + n + lim.tail <= lim.max_len:
            return [(0, text_len)], n
        half = lim.max_len // 2
        keep_head, keep_tail = half - lim.head, half - lim.tail
        if keep_head < 0 or keep_tail < 0 or keep_head + keep_tail <= 0:
            raise PromptTooLong(f"the template takes {lim.head} + {lim.tail} tokens: more than half of the "
                                f"{lim.max_len}-token prompt the window allows on one side")
        return truncation.keep_ends(offsets, text_len, keep_head, keep_tail), keep_head + keep_tail


def _second_shuffle(sample: Sample):
    """Loong's released second shuffle, from the RNG state the loader recorded (None: no shuffle)."""
    return replayed_shuffle(sample.metadata.get("second_shuffle"))


class _DocumentIndex:
    """A context's documents by position (built once per context): the kept char regions split at document
    borders, so document-level evidence can be checked, finding the documents a region overlaps by bisection."""

    def __init__(self, documents: list[Document]):
        self.documents = sorted(documents, key=lambda d: (d.start, d.end))
        self.ends = [d.end for d in self.documents]
        # documents that do not overlap: ordered by start, their ends are ordered too (else every one is looked at)
        self.searchable = all(a.end <= b.start for a, b in zip(self.documents, self.documents[1:], strict=False))

    def regions(self, kept: list[tuple[int, int]]) -> list[Region]:
        if not self.documents:
            return [Region(a, b) for a, b in kept]
        regions = []
        for a, b in kept:
            first = bisect_right(self.ends, a) if self.searchable else 0
            for d in self.documents[first:]:
                if self.searchable and d.start >= b:
                    break
                lo, hi = max(a, d.start), min(b, d.end)
                if hi > lo:
                    regions.append(Region(lo, hi, d.doc_id))
            regions.append(Region(a, b))
        return regions
