"""A GGUF model's weights are converted once and kept (llm/gguf_weights.py): the kept copy holds the same tensors,
a later load reads it instead of converting, a copy that cannot be read is converted again, and `off` keeps
nothing. The mechanics run on the tiny random-weight Llama (its folder standing in for a conversion); the real
SmolLM2 copy is compared with a fresh GGUF conversion in the integration tier."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
import torch

from llm.gguf_weights import kept_copy, load_kept


def _same_tensors(a, b) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


@pytest.fixture
def stand_in(tiny_llm, tmp_path, monkeypatch):
    """(a file the copy is named by, a conversion that counts its calls, a reader of kept copies)."""
    from transformers import AutoModelForCausalLM

    monkeypatch.setenv("RAGLC_WEIGHTS_CACHE", str(tmp_path / "kept"))
    source = tmp_path / "model.gguf"
    source.write_bytes(b"GGUF stand-in")
    calls = []

    def convert():
        calls.append(1)
        return AutoModelForCausalLM.from_pretrained(tiny_llm, dtype=torch.float32)

    return source, convert, calls, lambda where: AutoModelForCausalLM.from_pretrained(where, dtype=torch.float32)


def test_the_first_load_converts_and_keeps_then_later_loads_read_the_copy(stand_in, tmp_path):
    source, convert, calls, read = stand_in
    first = load_kept(source, "float32", convert, read)
    kept = kept_copy(source, "float32")
    assert calls == [1] and kept.is_dir() and kept.parent == tmp_path / "kept"
    assert [p.name for p in kept.parent.iterdir()] == [kept.name]  # no half-written folder left beside it
    again = load_kept(source, "float32", convert, read)
    assert calls == [1] and _same_tensors(first, again)
    assert kept_copy(source, "bfloat16") != kept  # another dtype is another copy
    os.utime(source, ns=(0, 0))
    assert kept_copy(source, "float32") != kept  # a changed file is converted anew


def test_an_unreadable_copy_is_converted_again(stand_in, caplog):
    source, convert, calls, read = stand_in
    reference = load_kept(source, "float32", convert, read)
    kept = kept_copy(source, "float32")
    (kept / "model.safetensors").write_bytes(b"not a safetensors file")
    with caplog.at_level(logging.WARNING, logger="llm.gguf_weights"):
        model = load_kept(source, "float32", convert, read)
    assert "unreadable converted weights" in caplog.text and calls == [1, 1]
    assert _same_tensors(model, reference)
    assert _same_tensors(read(kept), reference)  # the damaged copy was replaced by a whole one


def test_a_half_written_copy_left_by_a_killed_save_is_removed_by_the_next_save(stand_in, tmp_path):
    source, convert, calls, read = stand_in
    folder = tmp_path / "kept"
    stale, fresh = folder / "model-float32-0.1.2.tmp", folder / "model-float32-0.3.4.tmp"
    for part in (stale, fresh):
        part.mkdir(parents=True)
        (part / "model.safetensors").write_bytes(b"half")
    os.utime(stale, (0, 0))  # untouched for decades; `fresh` may be another process's save under way
    load_kept(source, "float32", convert, read)
    assert not stale.exists() and fresh.exists() and kept_copy(source, "float32").is_dir()


def test_off_keeps_nothing(stand_in, tmp_path, monkeypatch):
    source, convert, calls, read = stand_in
    monkeypatch.setenv("RAGLC_WEIGHTS_CACHE", "off")
    load_kept(source, "float32", convert, read)
    load_kept(source, "float32", convert, read)
    assert calls == [1, 1] and kept_copy(source, "float32") is None and not (tmp_path / "kept").exists()


@pytest.mark.integration
def test_smollm2s_kept_weights_are_its_gguf_conversion(tmp_path, monkeypatch, caplog):
    """The real model through the backend: with no copy yet it is converted from its GGUF file and kept; the kept
    copy holds the same tensors and gives the same logits; the next load reads it instead of converting."""
    import gc
    import weakref

    from transformers import AutoModelForCausalLM

    import llm.transformers_backend as backend
    from llm.bundled import resolve_model
    from llm.transformers_backend import load_weights

    path, gguf_file = resolve_model("bundled:smollm2")
    monkeypatch.setenv("RAGLC_WEIGHTS_CACHE", str(tmp_path / "kept"))
    # this process's models (the session's generator holds SmolLM2) set aside: these loads are loads
    monkeypatch.setattr(backend, "_WEIGHTS", weakref.WeakValueDictionary())
    with caplog.at_level(logging.INFO, logger="llm.transformers_backend"):
        converted = load_weights(path, gguf_file, "float32", "cpu")
    said = [r.getMessage() for r in caplog.records]  # the slow step is announced before it starts
    assert said[0].startswith("loading ") and "converting its GGUF tensors" in said[1] and "loaded" in said[-1]
    kept = kept_copy(Path(path) / gguf_file, "float32")
    from_copy = AutoModelForCausalLM.from_pretrained(kept, dtype=torch.float32).eval()
    assert _same_tensors(from_copy, converted)
    ids = torch.tensor([[1, 504, 3458, 282, 4649, 314]])
    with torch.no_grad():
        assert torch.equal(from_copy(ids).logits, converted(ids).logits)
    del converted, from_copy
    gc.collect()  # no generator holds the model: the next load is a load, not this process's copy
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="llm.transformers_backend"):
        assert load_weights(path, gguf_file, "float32", "cpu") is not None
    assert "loaded" in caplog.text and "converting its GGUF tensors" not in caplog.text
