"""A saved fast tokenizer read from its files with the `tokenizers` library alone, for processes that only count
and cut tokens (retrieval-only runs, `generator=none`).

Importing transformers imports torch (and, through `AutoTokenizer`, scikit-learn, scipy and pandas): 4-7 s of CPU
before a retrieval-only run has read a document, where `tokenizers` takes milliseconds. A folder saved by
transformers holds everything a tokenizer does to text: `tokenizer.json` (the Rust tokenizer: normaliser,
pre-tokenizer, model, added tokens, post-processor), `tokenizer_config.json` (special tokens, the context length)
and the chat template (`chat_template.jinja`, or a key of the config). `TokenizerFiles` reads them and answers what
this project asks a Hugging Face tokenizer: token ids with or without special tokens, the backend (offsets), the
vocabulary, `model_max_length`, and the chat template rendered as transformers renders it (jinja2's sandbox,
`trim_blocks`, `lstrip_blocks`, loop controls, the `tojson` filter without HTML escaping, `raise_exception`,
`strftime_now`, the special tokens as variables).

It is used only where it gives what transformers would (`readable`): a generic fast tokenizer
(`PreTrainedTokenizerFast`), or a Llama one whose saved post-processor is the one transformers rebuilds from its
`add_bos_token` / `add_eos_token`, and whose loading leaves the saved backend as it is (no truncation or padding in
the file, special tokens not split, the pre-tokenizer's `add_prefix_space` as the config says, every added and
special token already in the file); a template with `{% generation %}` blocks, any other class or setting, or a
folder without `tokenizer.json` is loaded by transformers (`llm.hf_tokenizer.load_hf_tokenizer`).
tests/test_tokenizer_files.py checks both ways agree on SmolLM2's tokenizer.
"""

from __future__ import annotations

import json
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

SPECIAL_KEYS = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")
PLAIN = ("PreTrainedTokenizerFast",)
LLAMA = ("LlamaTokenizer", "LlamaTokenizerFast")


def _content(token: Any) -> str | None:
    """A special token as a string (configs write it as text or as {"content": text, ...})."""
    if isinstance(token, dict):
        return token.get("content")
    return token if isinstance(token, str) else None


def _config(folder: Path) -> dict[str, Any]:
    config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    special = folder / "special_tokens_map.json"
    if special.is_file():  # transformers lets the map fill what the config does not say
        for key, value in json.loads(special.read_text(encoding="utf-8")).items():
            config.setdefault(key, value)
    template = folder / "chat_template.jinja"
    if template.is_file():
        config["chat_template"] = template.read_text(encoding="utf-8")
    return config


def _post_processor_items(tokenizer_json: dict[str, Any]) -> list[str] | None:
    """The single-sequence template of a TemplateProcessing post-processor: "A" for the text, else the special
    token's text; None for any other post-processor."""
    post = tokenizer_json.get("post_processor") or {}
    if post.get("type") != "TemplateProcessing":
        return None
    return [item["Sequence"]["id"] if "Sequence" in item else item["SpecialToken"]["id"] for item in post["single"]]


def _loaded_as_saved(config: dict[str, Any], saved: dict[str, Any]) -> bool:
    """Whether transformers' fast tokenizer keeps the saved backend as it is: no truncation or padding set in the
    file, special tokens not split, the pre-tokenizer's `add_prefix_space` what the config asks (transformers
    rewrites it otherwise), and every added or special token of the config already in the file."""
    if saved.get("truncation") or saved.get("padding") or config.get("split_special_tokens"):
        return False
    have, want = (saved.get("pre_tokenizer") or {}).get("add_prefix_space"), config.get("add_prefix_space", False)
    if not (have is None or have == want or (want is None and have is False)):
        return False
    added = {t["content"]: t["id"] for t in saved.get("added_tokens") or []}
    declared = config.get("added_tokens_decoder") or {}
    if any(added.get(_content(t)) != int(i) for i, t in declared.items()):
        return False
    vocab = saved.get("model", {}).get("vocab") or {}
    specials = [_content(config.get(k)) for k in SPECIAL_KEYS] + list(map(_content, config.get(
        "additional_special_tokens") or []))
    return all(t in added or (isinstance(vocab, dict) and t in vocab) for t in specials if t)


def readable(folder: Path) -> bool:
    """Whether `folder` holds a tokenizer this module reads exactly as transformers would."""
    if not ((folder / "tokenizer.json").is_file() and (folder / "tokenizer_config.json").is_file()):
        return False
    config = _config(folder)
    if "{% generation" in str(config.get("chat_template") or "") or not isinstance(config.get("chat_template"),
                                                                                      (str, type(None))):
        return False  # assistant-mask blocks, or a template chosen by name: transformers' own machinery
    saved = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    kind = config.get("tokenizer_class")
    if kind not in (*PLAIN, *LLAMA) or not _loaded_as_saved(config, saved):
        return False
    if kind in PLAIN:
        return True
    if config.get("add_prefix_space") is not None:
        return False  # transformers rebuilds such a Llama backend from the slow tokenizer
    expected = ([_content(config.get("bos_token"))] if config.get("add_bos_token", True) else []) + ["A"] + (
        [_content(config.get("eos_token"))] if config.get("add_eos_token", False) else [])
    return _post_processor_items(saved) == expected


class TokenizerFiles:
    """The parts of a Hugging Face fast tokenizer this project uses, from a saved folder, without transformers."""

    def __init__(self, folder: Path):
        from tokenizers import Tokenizer

        self.name_or_path = str(folder)
        self.backend_tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.backend_tokenizer.no_truncation()  # as transformers: nothing cut or padded unless asked
        self.backend_tokenizer.no_padding()
        config = _config(folder)
        self.chat_template: str | None = config.get("chat_template")
        self.model_max_length = int(config.get("model_max_length") or int(1e30))
        self.special_tokens_map: dict[str, str | list[str] | None] = {
            k: _content(config[k]) for k in SPECIAL_KEYS if _content(config.get(k))}
        extra = [t for t in map(_content, config.get("additional_special_tokens") or []) if t]
        if extra:
            self.special_tokens_map["additional_special_tokens"] = extra

    def __call__(self, text: str, add_special_tokens: bool = True) -> dict[str, list[int]]:
        return {"input_ids": self.backend_tokenizer.encode(text, add_special_tokens=add_special_tokens).ids}

    def get_vocab(self) -> dict[str, int]:
        return self.backend_tokenizer.get_vocab(with_added_tokens=True)

    def get_added_vocab(self) -> dict[str, int]:
        added = self.backend_tokenizer.get_added_tokens_decoder()
        return {token.content: i for i, token in sorted(added.items())}

    def apply_chat_template(self, messages: list[dict[str, Any]], add_generation_prompt: bool = False,
                            tokenize: bool = False) -> str | list[int]:
        if not self.chat_template:
            raise ValueError(f"{self.name_or_path}: the tokenizer has no chat template")
        text = _compiled(self.chat_template).render(messages=messages, tools=None, documents=None,
                                                    add_generation_prompt=add_generation_prompt,
                                                    **self.special_tokens_map)
        return self(text, add_special_tokens=False)["input_ids"] if tokenize else text


def _raise(message: str):
    from jinja2.exceptions import TemplateError

    raise TemplateError(message)


def _tojson(x: Any, ensure_ascii: bool = False, indent: int | None = None, separators=None,
            sort_keys: bool = False) -> str:
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


@lru_cache(maxsize=8)
def _compiled(template: str):
    """A chat template compiled in the environment transformers renders templates in."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    return env.from_string(template)


__all__ = ["TokenizerFiles", "readable"]
