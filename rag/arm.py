"""The RAG arm: chunk the context, retrieve (and optionally rerank), assemble into the benchmark template.

Per context (samples of one haystack share it) the arm keeps the chunks and the search index in
memory; across processes and runs, chunks, embeddings and non-flat indexes come from the on-disk
cache (`rag.cache_keys`). The ranking is taken deep enough to report evidence recall@n for every n in
`recall_at`, whatever top_k is. `retrieve` gives the same figures as `build` without a prompt,
for retrieval-only runs.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from eval.evidence import Region, present_fraction, recall_at, split_kinds
from eval.evidence_text import answer_in_text
from eval.lexical_overlap import lexical_overlap
from eval.per_context import PerContext
from eval.sample import Sample
from eval.storage import DiskCache
from llm.prompt import Prompt, PromptTooLong
from llm.timing import DeviceClock
from rag.assembly import ORDERS, TITLES, join_chunks, order_chunks, select_chunks, titles_on, with_titles
from rag.cache_keys import content_key, dump_json, load_json, text_hash
from rag.chunking import Chunk, ChunkerConfig, make_chunks
from rag.rerank import Reranker
from rag.retrievers import Retriever, SearchIndex, charged_queries

WARMUP_QUERY = "Which part of the document does this warm-up question ask about?"


CHUNK_TEXT_CHARS = 2000  # a recorded chunk's text is cut here (the question viewer shows it)


@dataclass
class RagConfig:
    chunk_size: int = 128
    chunk_overlap: int = 16
    top_k: int | None = 4
    order: str = "document"  # document: retrieved chunks in their original order (OP-RAG); score: best first
    separator: str = "\n\n"
    recall_at: list[int] = field(default_factory=lambda: [1, 3, 5, 10])
    min_coverage: float = 0.6  # share of an evidence span's chars a chunk must cover to count as retrieved
    margin_tokens: int = 16
    budget_tokens: int | None = None  # set: fill the prompt best-first up to this many context tokens (top_k unused)
    cache: bool = True  # on-disk chunk/embedding/index cache under <run.cache_dir>/rag
    doc_titles: Any = "auto"  # head each chunk with its document's title: auto (several documents) | true | false

    def __post_init__(self) -> None:
        if self.order not in ORDERS:
            raise ValueError(f"rag.order={self.order!r}; allowed: {', '.join(ORDERS)}")
        if self.budget_tokens is None and (self.top_k is None or self.top_k <= 0):
            raise ValueError(f"rag.top_k must be positive (or set rag.budget_tokens), got {self.top_k}")
        if self.budget_tokens is not None and self.budget_tokens <= 0:
            raise ValueError(f"rag.budget_tokens must be positive or null, got {self.budget_tokens}")
        if any(int(n) <= 0 for n in self.recall_at):
            raise ValueError(f"rag.recall_at values must be positive, got {self.recall_at}")
        if self.doc_titles not in TITLES:
            raise ValueError(f"rag.doc_titles={self.doc_titles!r}; allowed: auto, true, false")


def devices_of(retriever, reranker) -> tuple:
    """The devices a retriever's embedder (each member's, for a hybrid retriever) and a reranker's scorer run on
    (those that say: `device`): the retrieval timer waits for every one of them."""
    parts = [(member, "embedder") for member in [retriever, *(getattr(retriever, "retrievers", None) or [])]]
    found = [getattr(getattr(part, attr, None), "device", None) for part, attr in [*parts, (reranker, "scorer")]]
    return tuple(dict.fromkeys(d for d in found if d is not None))


class RagArm:
    name = "rag"

    def __init__(self, generator, retriever: Retriever, cfg: RagConfig, chunker: ChunkerConfig | None = None,
                 reranker: Reranker | None = None, cache: DiskCache | None = None, max_indexes: int = 8):
        self.gen, self.retriever, self.cfg = generator, retriever, cfg
        self.chunker = chunker or ChunkerConfig("tokens", cfg.chunk_size, cfg.chunk_overlap)
        self.reranker = reranker
        self.cache = cache or DiskCache(None)
        self._indexes: OrderedDict[str, tuple[list[Chunk], SearchIndex]] = OrderedDict()
        self.max_indexes = max_indexes
        self.index_builds = 0
        self.index_seconds = 0.0  # chunk + embed + index build time of the documents indexed, total
        self.memory_hits = 0
        # embedding and reranking may run on a GPU: their timed regions wait for it (llm/timing.py)
        self.clock = DeviceClock(devices_of(retriever, reranker))
        self.warmups: list[float] = []  # seconds of the untimed warm-up (once per arm), outside the records
        # per context, not per question: its cache key (a hash of the whole text) and its documents by id
        self._keys: PerContext[str] = PerContext()
        self._documents: PerContext[dict] = PerContext()

    def _warm_up(self, index: SearchIndex, chunks: list[Chunk]) -> None:
        """Before the first timed retrieval, run it once untimed, as the generator warms up before its first timed
        answer: the embedder's and reranker's first call (loading, allocating, a GPU's kernels) stays out of the
        first record, for every retriever alike."""
        if self.warmups:
            return
        with self.clock.span() as warm:
            ranked = index.search(WARMUP_QUERY, 2)
            if self.reranker is not None and ranked:
                self.reranker.rerank(WARMUP_QUERY, ranked, [c.text for c in chunks])
        self.warmups.append(warm.seconds or 0.0)

    # ------------------------------------------------------------ chunks and index, cached
    def _tokenizer_id(self) -> str:
        hf = getattr(self.gen.tokenizer, "hf", None)
        return str(getattr(self.gen, "model_id", None) or getattr(hf, "name_or_path", "")
                   or type(self.gen.tokenizer).__name__)

    def chunk_key(self, sample: Sample) -> str:
        """The context's chunks' cache key: its text, its documents, the chunker and the tokenizer (hashed once per
        context)."""
        def key() -> str:
            docs = [(d.doc_id, d.start, d.end) for d in sample.documents]
            return content_key("chunks", text_hash(sample.context), docs, self.chunker.key(), self._tokenizer_id())

        return self._keys.get(sample.context, key, sample.documents)

    def chunks_for(self, sample: Sample, key: str | None = None) -> list[Chunk]:
        key = key or self.chunk_key(sample)
        ctx = sample.context

        def compute() -> list[Chunk]:
            return make_chunks(ctx, self.gen.tokenizer, self.chunker, sample.documents)

        def dump(chunks: list[Chunk]) -> bytes:
            return dump_json([[c.start, c.end, c.doc_id, c.n_tokens] for c in chunks])

        def load(b: bytes) -> list[Chunk]:
            rows = load_json(b)
            if any(not (0 <= s < e <= len(ctx)) for s, e, _, _ in rows):
                raise ValueError("chunk offsets outside the context")
            return [Chunk(i, s, e, ctx[s:e], d, n) for i, (s, e, d, n) in enumerate(rows)]

        return self.cache.get_or_compute("chunks", key, "json", compute, dump, load)

    def _index_for(self, sample: Sample) -> tuple[list[Chunk], SearchIndex]:
        key = self.chunk_key(sample)
        if key in self._indexes:
            self._indexes.move_to_end(key)
            self.memory_hits += 1
            return self._indexes[key]
        with self.clock.span() as build:
            chunks = self.chunks_for(sample, key)
            index = self.retriever.index([c.text for c in chunks], sample.language, self.cache, key)
        self.index_seconds += self._build_seconds(key, build.seconds or 0.0)
        self.index_builds += 1
        self._indexes[key] = (chunks, index)
        while len(self._indexes) > self.max_indexes:
            self._indexes.popitem(last=False)
        return chunks, index

    def chunks_over_limit(self, samples: list[Sample]) -> dict[str, Any] | None:
        """How many chunks of these samples' contexts the embedder would cut to its input limit, counted before
        anything is embedded (chunks are cached, so the run does not chunk them again); None: the retriever reads
        every token (BM25) or cannot tell."""
        count = getattr(self.retriever, "count_over_limit", None)
        if count is None:
            return None
        seen: set[str] = set()
        for sample in samples:
            key = self.chunk_key(sample)
            if key not in seen:
                seen.add(key)
                count([c.text for c in self.chunks_for(sample, key)], self.cache, key)
        truncation = getattr(self.retriever, "truncation", None)
        return truncation() if callable(truncation) else None

    def _build_seconds(self, key: str, measured: float) -> float:
        """The time this document's index took to build (chunk + embed + index): the first build's,
        kept in the disk cache next to the index, so a sweep point that loads a cached index still
        reports what building it costs (a deployment builds it once per document)."""
        tkey = content_key("build_s", key, type(self.retriever).__name__, getattr(self.retriever, "name", None),
                           _fingerprint(self.retriever))
        value = self.cache.get_or_compute("timings", tkey, "json", lambda: {"seconds": measured},
                                          dump_json, load_json)
        try:
            return float(value["seconds"])
        except (KeyError, TypeError, ValueError):
            return measured

    def cache_stats(self) -> dict[str, Any]:
        """Hits and misses of the on-disk cache per kind (chunks, embeddings, indexes), for metrics.json."""
        stats: dict[str, Any] = {k: {"hits": 0, "misses": 0, "corrupt": 0} for k in ("chunks", "embeddings", "indexes")}
        stats.update(self.cache.summary())
        stats["index_builds"] = self.index_builds
        stats["memory_hits"] = self.memory_hits
        stats["disk"] = self.cache.enabled
        return stats

    # ------------------------------------------------------------ ranking, selection, figures
    def _room(self, sample: Sample) -> int:
        tpl = sample.template
        empty = Prompt.from_template(tpl, "", sample.question)
        overhead = self.gen.prompt_tokens(empty)
        if overhead + tpl.max_new_tokens > self.gen.context_window:
            raise PromptTooLong(
                f"the prompt without any context takes {overhead} tokens; with {tpl.max_new_tokens} new "
                f"tokens it does not fit the {self.gen.context_window}-token window"
            )
        return self.gen.context_window - tpl.max_new_tokens - overhead - self.cfg.margin_tokens

    def _documents_by_id(self, sample: Sample) -> dict:
        """The context's documents by id, built once per context (a folder's thousand, for every question)."""
        return self._documents.get(sample.context, lambda: {d.doc_id: d for d in sample.documents}, sample.documents)

    def _depth(self, n_chunks: int) -> int:
        if self.cfg.budget_tokens is not None:
            return n_chunks  # fill by budget: the whole ranking may be needed
        # a reranker re-scores its `candidates` first-stage chunks: the search must reach that deep
        candidates = getattr(self.reranker, "candidates", 0) if self.reranker is not None else 0
        return max([self.cfg.top_k or 0, *map(int, self.cfg.recall_at), int(candidates)])

    def _retrieve(self, sample: Sample) -> tuple[list[Chunk], dict[str, Any]]:
        room = self._room(sample)
        chunks, index = self._index_for(sample)
        query = retrieval_query(sample)
        if not hasattr(self.retriever, "rank"):
            self._warm_up(index, chunks)
        # what this question adds to a user's wait: query embedding, search, rerank; a query embedding remembered
        # from an earlier config or run is charged what it took then (a deployment embeds every new question)
        with charged_queries() as remembered, self.clock.span() as retrieval:
            if hasattr(self.retriever, "rank"):  # the oracle ranks by the sample's gold evidence, not the query
                ranked = self.retriever.rank(sample, chunks, self._depth(len(chunks)))
            else:
                ranked = index.search(query, self._depth(len(chunks)))
            if self.reranker is not None:
                ranked = self.reranker.rerank(query, ranked, [c.text for c in chunks])
        retrieval_s = (retrieval.seconds or 0.0) + remembered.seconds
        ranked_chunks = [chunks[i] for i, _ in ranked]
        if titles_on(self.cfg.doc_titles, len(sample.documents)):
            ranked_chunks = with_titles(ranked_chunks, self._documents_by_id(sample), self.gen.tokenizer.count)
        sep_tokens = self.gen.tokenizer.count(self.cfg.separator)
        top_k = None if self.cfg.budget_tokens is not None else self.cfg.top_k
        selected, used = select_chunks(ranked_chunks, room, sep_tokens, top_k, self.cfg.budget_tokens)
        chosen = {c.index for c in selected}
        # the top-k the ranking offered but the window's room left out (by count; a budget fill drops none)
        dropped = [(r, c) for r, c in enumerate(ranked_chunks[:top_k] if top_k else [])
                   if c.index not in chosen]
        regions = [Region(c.start, c.end, c.doc_id) for c in ranked_chunks]
        top = [Region(c.start, c.end, c.doc_id) for c in selected]
        spans, docs = split_kinds(sample.evidence)
        ns, cover = self.cfg.recall_at, self.cfg.min_coverage
        meta = {
            "n_chunks": len(chunks),
            "retrieved": [{"chunk": c.index, "start": c.start, "end": c.end, "score": round(s, 4), "doc_id": c.doc_id,
                           "rank": r + 1, "text": c.text[:CHUNK_TEXT_CHARS]}
                          for r, (c, (_, s)) in enumerate(zip(ranked_chunks, ranked, strict=True))
                          if c.index in chosen],
            "dropped": [{"chunk": c.index, "start": c.start, "end": c.end, "rank": r + 1,
                         "text": c.text[:CHUNK_TEXT_CHARS]} for r, c in dropped],
            "context_tokens": used,
            "retrieved_tokens": sum(c.n_tokens for c in selected),
            "evidence_recall": recall_at(spans, regions, ns, cover),  # gold spans (char level)
            "evidence_in_prompt": present_fraction(spans, top, cover),
            "evidence_in_top_k": present_fraction(spans, regions[:top_k or len(selected)], cover),
            "answer_in_context": answer_in_text(sample.answers, "\n".join(c.text for c in selected), sample.language),
            "doc_recall": recall_at(docs, regions, ns, cover),  # gold documents: document coverage
            "docs_in_prompt": present_fraction(docs, top, cover),
            "distractors_retrieved": present_fraction(sample.distractors, top, self.cfg.min_coverage),
            "first_evidence_rank": first_hit_rank(sample, regions, self.cfg.min_coverage),
            "retrieval_s": round(retrieval_s, 6),
            "retrieval_cpu_s": round((retrieval.cpu_s or 0.0) + remembered.cpu_s, 6),  # the same in CPU seconds
            # share of the query's content words in the chunks put in the prompt (a router's feature)
            "retrieved_overlap": lexical_overlap(query, [c.text for c in selected], sample.language),
        }
        return order_chunks(selected, self.cfg.order), meta

    def check(self, samples: list[Sample]) -> None:
        """Before any answer: a retriever that needs something of the samples (the oracle: gold evidence) says
        so in one line (ValueError)."""
        check = getattr(self.retriever, "check", None)
        if callable(check):
            check(samples)

    def retrieve(self, sample: Sample) -> dict[str, Any]:
        """What `build` would record, without building the prompt (retrieval-only runs)."""
        return self._retrieve(sample)[1]

    def build(self, sample: Sample) -> Prompt:
        ordered, meta = self._retrieve(sample)
        tpl = sample.template
        prompt = Prompt.from_template(
            tpl, join_chunks(ordered, self.cfg.separator), sample.question,
            prefix_chars=0,  # retrieved context differs per question: nothing reusable
        )
        prompt.meta = meta
        return prompt


def _fingerprint(retriever) -> dict[str, Any] | None:
    """What the build time depends on: the retriever's whole fingerprint (a hybrid's parts and their
    models, the index kind, whether sparse weights are computed), not only a dense retriever's embedder."""
    fp = getattr(retriever, "fingerprint", None)
    if callable(fp):
        return fp()
    embedder = getattr(retriever, "embedder", None)
    fp = getattr(embedder, "fingerprint", None)
    return fp() if callable(fp) else None


def first_hit_rank(sample: Sample, ranked: list[Region], min_coverage: float) -> int | None:
    """1-based rank of the first ranked chunk holding any gold evidence (None: none within the ranking)."""
    if not sample.evidence:
        return None
    for r, region in enumerate(ranked, start=1):
        if (present_fraction(sample.evidence, [region], min_coverage) or 0) > 0:
            return r
    return None


def retrieval_query(sample: Sample) -> str:
    """What to search with: the question, or what the loader says asks it when the question is
    empty (Loong items whose instruction carries the question; summaries: the task itself)."""
    query = sample.metadata.get("retrieval_query") or sample.question
    if not query.strip():
        head, tail = sample.template.parts()
        query = (head + " " + tail).replace("{question}", " ").strip()
    return query
