"""Shared by perf scripts: print what was measured, then one JSON line with the figures."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `python perf/NAME.py` from the repository root
    sys.path.insert(0, str(ROOT))


SMOLLM2 = "bundled:smollm2"
MODEL_HELP = ("the generator's model: bundled:smollm2 (the default) or a model folder, e.g. a tiny random-weight one "
              "for a smoke run (python -m testsupport.tiny_llama DIR)")


def generator_config(model: str = SMOLLM2) -> dict:
    """The transformers backend over `model` with SmolLM2's 8k window (scripts that only budget tokens never
    load its weights)."""
    return {"backend": "transformers", "model": model, "context_window": 8192}


def emit(figures: dict) -> None:
    for key, value in figures.items():
        print(f"{key:>32}: {value}")
    print(json.dumps(figures, sort_keys=True))
