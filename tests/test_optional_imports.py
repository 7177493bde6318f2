"""An optional library that is installed but fails at import gives one line: the package and its version, the
error, the package it tripped on with its version, and the fix. A real package on disk, broken the way
FlagEmbedding 1.4.2 is under transformers 5 (it imports a transformers module that is not there)."""

import importlib.metadata
import subprocess
import sys

import pytest

from eval.lockfile import locked_version
from eval.registry import MissingExtra, require


@pytest.fixture()
def broken_package(tmp_path, monkeypatch):
    pkg = tmp_path / "brokenflag"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from transformers.modeling_attn_mask_utils_gone import mask\n")
    info = tmp_path / "brokenflag-1.4.2.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: brokenflag\nVersion: 1.4.2\n")
    (info / "top_level.txt").write_text("brokenflag\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    yield "brokenflag"
    sys.modules.pop("brokenflag", None)


def test_installed_but_broken_gives_one_line_with_versions_and_fix(broken_package):
    with pytest.raises(MissingExtra) as err:
        require(broken_package, "retriever.backend=flag_m3", "pip install '.[bge]'")
    line = str(err.value)
    transformers = importlib.metadata.version("transformers")
    assert "\n" not in line
    assert line.startswith("retriever.backend=flag_m3 needs brokenflag 1.4.2, which is installed but fails to import")
    assert "ModuleNotFoundError: No module named 'transformers.modeling_attn_mask_utils_gone'" in line
    assert f"it trips on transformers {transformers}" in line
    locked = locked_version("transformers")  # the fix names the lock's pin, whatever this venv holds
    assert f"fix: `make install` (the locked set: transformers=={locked})" in line
    assert "or `pip install 'transformers<5,>=4.46'`" in line  # the [bge] extra's declared bound


def test_not_installed_still_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "FlagEmbedding", None)
    with pytest.raises(MissingExtra, match=r"needs the package 'FlagEmbedding', which is not installed; "
                                           r"install it with: pip install '\.\[bge\]'"):
        require("FlagEmbedding", "retriever.backend=flag_m3", "pip install '.[bge]'")
    with pytest.raises(MissingExtra, match="not installed"):
        require("no_such_package_anywhere", "x=y")


def test_an_import_that_raises_something_else_is_one_line_too(tmp_path, monkeypatch):
    (tmp_path / "crashy.py").write_text("raise RuntimeError('compiled against numpy 1.x\\nsecond line')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(MissingExtra) as err:
        require("crashy", "retriever.index=flat")
    assert str(err.value).startswith("retriever.index=flat needs crashy")
    assert "RuntimeError: compiled against numpy 1.x" in str(err.value) and "second line" not in str(err.value)


def test_the_runner_prints_the_one_line_not_a_traceback(tmp_path, tiny_llm):
    """`retriever=bge_m3` where FlagEmbedding is installed but cannot be imported: one `error:` line."""
    code = ("import runpy, sys; sys.path.insert(0, sys.argv.pop(1)); "
            "sys.argv[0] = 'experiments.run'; runpy.run_module('experiments.run', run_name='__main__')")
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "FlagEmbedding").mkdir()
    (shim / "FlagEmbedding" / "__init__.py").write_text("import transformers.modeling_attn_mask_utils_gone\n")
    proc = subprocess.run(
        [sys.executable, "-c", code, str(shim), "arm=rag", "retriever=bge_m3", "generator=none",
         f"generator.tokenizer={tiny_llm}",  # SmolLM2's, from a folder: no GGUF to read first
         "benchmark.levels=[1k]", "benchmark.questions_per_haystack=1", "benchmark.haystacks_per_level=1",
         f"hydra.run.dir={tmp_path / 'run'}", f"run.cache_dir={tmp_path / 'cache'}"],
        capture_output=True, text=True, timeout=300)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert len(errors) == 1 and "FlagEmbedding" in errors[0] and "fails to import" in errors[0], proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "HYDRA_FULL_ERROR" not in proc.stderr
