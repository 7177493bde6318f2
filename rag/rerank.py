"""Optional second stage: a cross-encoder re-scores the first-stage candidates (the `reranker` group).

- `none`: keep the retriever's ranking.
- `cross_encoder`: sentence-transformers `CrossEncoder`, any model by name or local path
  (e.g. cross-encoder/ms-marco-MiniLM-L-6-v2).
- `bge_reranker`: FlagEmbedding's `FlagReranker` (BAAI/bge-reranker-v2-m3); optional extra `[bge]`.

`device` is cpu, cuda[:N] or auto (cuda when torch sees a GPU), as for the retriever.

Only the top `candidates` chunks are re-scored; they come first in their new order, the rest of
the ranking follows unchanged (so recall@n beyond `candidates` still has a ranking to read).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from eval.registry import Registry, require
from llm.bundled import resolve_model
from rag.embedders import resolve_device


class Scorer(Protocol):
    def score(self, query: str, passages: Sequence[str]) -> list[float]: ...


class CrossEncoderScorer:
    def __init__(self, model: str, batch_size: int = 32, device: str = "cpu", max_length: int | None = 512):
        CrossEncoder = require("sentence_transformers", "reranker.kind=cross_encoder", "make install").CrossEncoder

        path, _ = resolve_model(model)
        self.device = resolve_device(device)  # where it runs: rag/arm.py's timers wait for it (llm/timing.py)
        try:
            self.model = CrossEncoder(path, device=self.device, max_length=max_length)
        except (OSError, ValueError) as err:
            raise FileNotFoundError(
                f"cannot load reranker {model!r} (reranker.model): {err}. Give a local directory or a hub id already "
                "in the local Hugging Face cache."
            ) from err
        self.batch_size = batch_size

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        out = self.model.predict([(query, p) for p in passages], batch_size=self.batch_size, show_progress_bar=False)
        return [float(x) for x in out]


class FlagRerankerScorer:
    def __init__(self, model: str, batch_size: int = 32, device: str = "cpu", fp16: bool = True):
        FlagReranker = require("FlagEmbedding", "reranker.kind=bge_reranker",
                               "pip install '.[bge]'; or use reranker=cross_encoder with a sentence-transformers model"
                               ).FlagReranker
        path, _ = resolve_model(model)
        device = resolve_device(device)
        self.device = device  # where it runs: rag/arm.py's timers wait for it (llm/timing.py)
        try:
            self.model = FlagReranker(path, use_fp16=fp16 and device.startswith("cuda"), devices=device)
        except (OSError, ValueError) as err:
            raise FileNotFoundError(f"cannot load reranker {model!r} (reranker.model): {err}") from err
        self.batch_size = batch_size

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        out = self.model.compute_score([[query, p] for p in passages], batch_size=self.batch_size)
        return [float(x) for x in (out if isinstance(out, list) else [out])]


class Reranker:
    def __init__(self, scorer: Scorer, candidates: int = 20, name: str = "reranker"):
        if candidates <= 0:
            raise ValueError(f"reranker.candidates must be positive, got {candidates}")
        self.scorer, self.candidates, self.name = scorer, candidates, name

    def rerank(self, query: str, ranked: list[tuple[int, float]], texts: Sequence[str]) -> list[tuple[int, float]]:
        head, tail = ranked[: self.candidates], ranked[self.candidates:]
        scores = self.scorer.score(query, [texts[i] for i, _ in head])
        order = sorted(range(len(head)), key=lambda j: -scores[j])
        return [(head[j][0], scores[j]) for j in order] + tail


def no_reranker(name: str = "none") -> None:
    return None


def cross_encoder_reranker(model: str, candidates: int = 20, batch_size: int = 32, device: str = "cpu",
                           max_length: int | None = 512, name: str = "cross_encoder") -> Reranker:
    return Reranker(CrossEncoderScorer(model, int(batch_size), device, max_length), int(candidates), name)


def bge_reranker(model: str, candidates: int = 20, batch_size: int = 32, device: str = "cpu", fp16: bool = True,
                 name: str = "bge_reranker") -> Reranker:
    return Reranker(FlagRerankerScorer(model, int(batch_size), device, bool(fp16)), int(candidates), name)


RERANKERS = Registry("reranker.kind", {"none": no_reranker, "cross_encoder": cross_encoder_reranker,
                                       "bge_reranker": bge_reranker})
KINDS = tuple(RERANKERS.names())


def build_reranker(cfg: dict[str, Any] | None) -> Reranker | None:
    """The `reranker` group (plain dict) -> reranker, or None for `none`; a key its kind does not take
    fails naming it."""
    cfg = dict(cfg or {})
    kind = cfg.get("kind") or "none"
    RERANKERS.get(kind)  # an unknown kind fails first, naming the allowed ones
    if kind != "none" and not cfg.get("model"):
        raise ValueError(f"reranker.model is required for reranker.kind={kind}")
    return RERANKERS.build(kind, cfg, drop=("kind",), section="reranker")
