"""Optional second stage: a cross-encoder re-scores the first-stage candidates (the `reranker` group).

- `none`: keep the retriever's ranking.
- `cross_encoder`: sentence-transformers `CrossEncoder`, any model by name or local path
  (e.g. cross-encoder/ms-marco-MiniLM-L-6-v2).
- `bge_reranker`: FlagEmbedding's `FlagReranker` (BAAI/bge-reranker-v2-m3); optional extra `[bge]`.

Only the top `candidates` chunks are re-scored; they come first in their new order, the rest of
the ranking follows unchanged (so recall@n beyond `candidates` still has a ranking to read).
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence

from llm.bundled import resolve_model

KINDS = ("none", "cross_encoder", "bge_reranker")


class Scorer(Protocol):
    def score(self, query: str, passages: Sequence[str]) -> list[float]: ...


class CrossEncoderScorer:
    def __init__(self, model: str, batch_size: int = 32, device: str = "cpu", max_length: int | None = 512):
        from sentence_transformers import CrossEncoder

        path, _ = resolve_model(model)
        try:
            self.model = CrossEncoder(path, device=device, max_length=max_length)
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
        try:
            from FlagEmbedding import FlagReranker
        except ImportError as err:
            raise ImportError(
                "reranker.kind=bge_reranker needs FlagEmbedding, an optional extra: pip install 'rag-or-longctx[bge]' "
                "(or use reranker=cross_encoder with a sentence-transformers model)"
            ) from err
        path, _ = resolve_model(model)
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


def build_reranker(cfg: dict[str, Any] | None) -> Reranker | None:
    cfg = dict(cfg or {})
    kind = cfg.get("kind", "none")
    if kind in ("none", None):
        return None
    if not cfg.get("model"):
        raise ValueError(f"reranker.model is required for reranker.kind={kind}")
    if kind == "cross_encoder":
        scorer: Scorer = CrossEncoderScorer(cfg["model"], int(cfg.get("batch_size", 32)), cfg.get("device", "cpu"),
                                            cfg.get("max_length", 512))
    elif kind == "bge_reranker":
        scorer = FlagRerankerScorer(cfg["model"], int(cfg.get("batch_size", 32)), cfg.get("device", "cpu"),
                                    bool(cfg.get("fp16", True)))
    else:
        raise ValueError(f"reranker.kind={kind!r}; allowed: {', '.join(KINDS)}")
    return Reranker(scorer, int(cfg.get("candidates", 20)), cfg.get("name", kind))
