"""A retrieval-only run reads its tokenizer from the saved files without importing transformers (and torch), and
counts, cuts and renders prompts exactly as transformers' tokenizer does: checked on SmolLM2's tokenizer, from the
tiny Llama's folder and from the copy converted from the bundled GGUF file."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from llm.base import HFTokenizer
from llm.hf_tokenizer import (
    count_prompt_tokens,
    load_counting_tokenizer,
    load_hf_tokenizer,
    render_prompt,
    saved_folder,
)
from llm.prompt import Prompt
from llm.tokenizer_files import TokenizerFiles, readable
from tests.conftest import ROOT

TEXTS = ["", "The warranty lasts 24 months.", "  leading and trailing spaces  \n\n", "naïve café Ελλάδα Москва",
         "公司总部位于杭州，年度会议在十月举行。",
         "emoji 🙂🚀 and tabs\tand\r\nreturns", "control \x04: bytes \x01\x7f",
         "<|im_start|>user\nspecial tokens in text<|im_end|>", "x" * 3000 + " " + "word " * 500]


def _prompts():
    yield Prompt(user="Read this.\n\nQuestion: what?\nAnswer:")
    yield Prompt(user="Context {with braces} and <|im_end|>", system="You answer briefly.")
    yield Prompt(user="raw prompt, no template", system="sys", chat=False)
    yield Prompt(user="中文的问题？", system=None)


@pytest.fixture(scope="module", params=["tiny", "bundled"])
def both(request, tiny_llm):
    spec = str(tiny_llm) if request.param == "tiny" else "bundled:smollm2"
    load_hf_tokenizer(spec)  # the GGUF file's copy is converted on a first load
    folder = saved_folder(spec)
    assert folder is not None and readable(folder)
    return TokenizerFiles(folder), load_hf_tokenizer(spec)


def test_counts_offsets_and_vocabulary_match_transformers(both):
    files, hf = both
    seen_files, seen_hf = HFTokenizer(files), HFTokenizer(hf)  # as the arms see them (byte table and all)
    for text in TEXTS:
        for special in (True, False):
            assert files(text, add_special_tokens=special)["input_ids"] == \
                hf(text, add_special_tokens=special)["input_ids"], (text[:40], special)
        assert seen_files.offsets(text) == seen_hf.offsets(text) and seen_files.count(text) == seen_hf.count(text)
    assert files.get_vocab() == hf.get_vocab() and files.get_added_vocab() == hf.get_added_vocab()
    assert files.model_max_length == hf.model_max_length and files.special_tokens_map == hf.special_tokens_map


def test_prompts_render_and_count_as_transformers_renders_them(both):
    files, hf = both
    for prompt in _prompts():
        assert render_prompt(files, prompt) == render_prompt(hf, prompt)
        assert count_prompt_tokens(files, prompt) == count_prompt_tokens(hf, prompt)


def test_a_retrieval_only_tokenizer_loads_without_transformers(tiny_llm):
    code = ("import sys; from llm.factory import TokenizerOnlyGenerator as T; g = T(sys.argv[1], 8192); "
            "print(g.tokenizer.count('two words'), g.context_window, 'transformers' in sys.modules, "
            "'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(tiny_llm)], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["2", "8192", "False", "False"]


def test_a_tokenizer_whose_loading_changes_it_goes_through_transformers(tiny_llm, tmp_path):
    def copy(name, **config):
        folder = tmp_path / name
        shutil.copytree(tiny_llm, folder)
        path = folder / "tokenizer_config.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), **config}))
        return folder

    llama_bos = copy("llama_bos", tokenizer_class="LlamaTokenizerFast", add_bos_token=True)  # BOS not in the file
    changed = [llama_bos, copy("gpt2", tokenizer_class="GPT2Tokenizer"), copy("split", split_special_tokens=True),
               copy("prefix", add_prefix_space=True),  # transformers rewrites the pre-tokenizer
               copy("added", added_tokens_decoder={"49152": {"content": "<extra>", "special": True}}),
               copy("special", pad_token="<pad-not-in-vocab>")]
    assert not any(map(readable, changed)) and not readable(tmp_path)
    prefix, added, special = (load_counting_tokenizer(str(f)) for f in changed[3:])  # each changed by its loading:
    assert prefix("word")["input_ids"] != TokenizerFiles(changed[3])("word")["input_ids"]  # a space put before
    assert len(added.get_vocab()) == len(special.get_vocab()) == len(TokenizerFiles(tiny_llm).get_vocab()) + 1
    assert readable(copy("llama_plain", tokenizer_class="LlamaTokenizerFast", add_bos_token=False))
    loaded = load_counting_tokenizer(str(llama_bos))
    assert not isinstance(loaded, TokenizerFiles)
    assert loaded("text")["input_ids"][0] == loaded.bos_token_id  # transformers rebuilt the BOS the file lacks
    assert isinstance(load_counting_tokenizer(str(tiny_llm)), TokenizerFiles)
