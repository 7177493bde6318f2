"""Build the RAG prompt for a sample: chunk, retrieve, assemble top-k into the benchmark template.

Indexes are kept per context (samples of one haystack share theirs). The ranking is taken deep
enough to report evidence recall@n for every n in `recall_at`, whatever top_k is.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass, field

from eval.evidence import Region, present_fraction, recall_at
from eval.sample import Sample
from llm.base import Generator
from llm.prompt import Prompt, PromptTooLong
from rag.chunking import Chunk, chunk_by_tokens
from rag.retrievers import Index, Retriever

ORDERS = ("document", "score")


@dataclass
class RagConfig:
    chunk_size: int = 128
    chunk_overlap: int = 16
    top_k: int = 4
    order: str = "document"  # document: retrieved chunks in their original order (OP-RAG); score: best first
    separator: str = "\n\n"
    recall_at: list[int] = field(default_factory=lambda: [1, 3, 5, 10])
    min_coverage: float = 0.6  # share of an evidence span's chars a chunk must cover to count as retrieved
    margin_tokens: int = 16

    def __post_init__(self) -> None:
        if self.order not in ORDERS:
            raise ValueError(f"rag.order={self.order!r}; allowed: {', '.join(ORDERS)}")
        if self.top_k <= 0:
            raise ValueError(f"rag.top_k must be positive, got {self.top_k}")


class RagArm:
    name = "rag"

    def __init__(self, generator: Generator, retriever: Retriever, cfg: RagConfig, max_indexes: int = 8):
        self.gen, self.retriever, self.cfg = generator, retriever, cfg
        self._indexes: OrderedDict[str, tuple[list[Chunk], Index]] = OrderedDict()
        self.max_indexes = max_indexes
        self.index_builds = 0

    def _index_for(self, sample: Sample) -> tuple[list[Chunk], Index]:
        key = hashlib.sha256(sample.context.encode()).hexdigest()
        if key in self._indexes:
            self._indexes.move_to_end(key)
            return self._indexes[key]
        chunks = chunk_by_tokens(sample.context, self.gen.tokenizer, self.cfg.chunk_size,
                                 self.cfg.chunk_overlap, sample.documents)
        index = self.retriever.index([c.text for c in chunks], sample.language)
        self.index_builds += 1
        self._indexes[key] = (chunks, index)
        while len(self._indexes) > self.max_indexes:
            self._indexes.popitem(last=False)
        return chunks, index

    def build(self, sample: Sample) -> Prompt:
        tpl = sample.template
        empty = Prompt(user=tpl.render("", sample.question), system=tpl.system, max_new_tokens=tpl.max_new_tokens)
        overhead = self.gen.prompt_tokens(empty)
        if overhead + tpl.max_new_tokens > self.gen.context_window:
            raise PromptTooLong(
                f"the prompt without any context takes {overhead} tokens; with {tpl.max_new_tokens} new "
                f"tokens it does not fit the {self.gen.context_window}-token window"
            )
        chunks, index = self._index_for(sample)
        depth = max([self.cfg.top_k, *self.cfg.recall_at])
        ranked = index.search(sample.question, depth)
        ranked_chunks = [chunks[i] for i, _ in ranked]
        budget = self.gen.context_window - tpl.max_new_tokens - overhead - self.cfg.margin_tokens
        sep_tokens = self.gen.tokenizer.count(self.cfg.separator)
        selected, used = [], 0
        for c in ranked_chunks[: self.cfg.top_k]:  # best first, until the window is full
            if used + c.n_tokens + sep_tokens > budget:
                break
            selected.append(c)
            used += c.n_tokens + sep_tokens
        top = [Region(c.start, c.end, c.doc_id) for c in selected]
        if self.cfg.order == "document":
            selected = sorted(selected, key=lambda c: c.index)
        context = self.cfg.separator.join(c.text for c in selected)
        prompt = Prompt(
            user=tpl.render(context, sample.question), system=tpl.system, max_new_tokens=tpl.max_new_tokens,
            prefix_chars=0,  # retrieved context differs per question: nothing reusable
        )
        regions = [Region(c.start, c.end, c.doc_id) for c in ranked_chunks]
        prompt.meta = {
            "n_chunks": len(chunks),
            "retrieved": [{"chunk": c.index, "start": c.start, "end": c.end, "score": round(s, 4), "doc_id": c.doc_id}
                          for c, (_, s) in zip(ranked_chunks, ranked) if c in selected],
            "context_tokens": used,
            "evidence_recall": recall_at(sample.evidence, regions, self.cfg.recall_at, self.cfg.min_coverage),
            "evidence_in_prompt": present_fraction(sample.evidence, top, self.cfg.min_coverage),
            "distractors_retrieved": present_fraction(sample.distractors, top, self.cfg.min_coverage),
        }
        return prompt
