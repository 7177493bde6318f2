"""A GGUF file's tokenizer is converted once and kept (llm/hf_tokenizer.py `_gguf_tokenizer`): the copy reads every
text as the conversion does, carries the file's BOS rule, and a copy that cannot be read is converted again."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

from llm.bundled import resolve_model
from llm.hf_tokenizer import _gguf_tokenizer, converted_copy, load_hf_tokenizer, tokenizer_cache_dir

TEXTS = ["Hello world", "In which village was the mayor of Vithnaesk born?", "中文 测试 ünï", " lead\n\n trail "]


def _gguf() -> Path:
    path, gguf_file = resolve_model("bundled:smollm2")
    return Path(path) / gguf_file


def _kept_copy() -> Path:
    """This environment's kept copy (another checkout's GGUF path keeps its own beside it)."""
    load_hf_tokenizer("bundled:smollm2")  # the session's tokenizer: converted once, or read from the kept copy
    kept = converted_copy(_gguf())
    assert kept.is_dir() and kept.parent == tokenizer_cache_dir()
    return kept


def test_the_kept_copy_tokenizes_as_the_conversion(tmp_path, monkeypatch):
    reference = load_hf_tokenizer("bundled:smollm2")  # this process's tokenizer (lru-cached)
    kept = _kept_copy()
    shutil.copytree(kept, tmp_path / kept.name)
    monkeypatch.setenv("RAGLC_TOKENIZER_CACHE", str(tmp_path))
    tok = _gguf_tokenizer(_gguf())
    for text in TEXTS:
        assert tok(text)["input_ids"] == reference(text)["input_ids"], text
    chat = [{"role": "user", "content": "hi"}]
    assert (tok.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
            == reference.apply_chat_template(chat, tokenize=False, add_generation_prompt=True))
    assert tok.add_bos_token is False  # SmolLM2's GGUF says: no BOS on raw text (`tokenizer.ggml.add_bos_token`)


@pytest.mark.integration
def test_an_unreadable_copy_is_converted_again(tmp_path, monkeypatch, caplog):
    kept = _kept_copy()
    shutil.copytree(kept, tmp_path / kept.name)
    (tmp_path / kept.name / "tokenizer.json").write_text("{not json", encoding="utf-8")
    monkeypatch.setenv("RAGLC_TOKENIZER_CACHE", str(tmp_path))
    with caplog.at_level(logging.INFO, logger="llm.hf_tokenizer"):
        tok = _gguf_tokenizer(_gguf())
    assert "unreadable converted tokenizer" in caplog.text
    said = [r.getMessage() for r in caplog.records]  # the conversion (15-80 s) is announced before it starts
    assert any(line.startswith("converting the tokenizer of ") for line in said), said
    assert tok("Hello world")["input_ids"] == load_hf_tokenizer("bundled:smollm2")("Hello world")["input_ids"]
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        _gguf_tokenizer(_gguf())  # the converted copy replaced the unreadable one
    assert "unreadable" not in caplog.text
