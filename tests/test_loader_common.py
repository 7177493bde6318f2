"""What every benchmark loader does alike: its conf/benchmark file is accepted as it is, and asking
the Hub on an offline machine fails fast with an error that points to `benchmark.path`."""

from __future__ import annotations

import time

import pytest
import yaml

from eval.benchmarks import load_benchmark
from tests.conftest import CONF

HUB = [  # name, a small selection, what the error names
    ("lveval", {"tasks": ["cmrc_mixup"], "levels": ["16k"]}, r"Infinigence/LVEval.*benchmark.path"),
    ("clongeval", {"tasks": ["table_querying"], "levels": ["small"]}, r"zexuanqiu22/CLongEval.*benchmark.path"),
    ("loogle", {"tasks": ["shortdep_qa"]}, r"hub:bigai-nlco/LooGLE\[shortdep_qa\]/test.*benchmark\.path"),
]


@pytest.mark.parametrize("name, selection, message", HUB, ids=[h[0] for h in HUB])
def test_hub_path_fails_clearly_offline(monkeypatch, name, selection, message):
    import huggingface_hub.constants as hc

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setattr(hc, "HF_HUB_OFFLINE", True)
    t0 = time.monotonic()
    with pytest.raises((FileNotFoundError, ValueError), match=message):
        load_benchmark({"name": name, "path": None, **selection})
    assert time.monotonic() - t0 < 30, "offline must fail at once, not after network time-outs"


@pytest.mark.parametrize("name", ["lveval", "clongeval", "loogle", "loong"])
def test_conf_file_keys_are_accepted(tmp_path, name):
    conf = yaml.safe_load((CONF / "benchmark" / f"{name}.yaml").read_text())
    assert conf["name"] == name and conf["skip_bad"] is False
    with pytest.raises((FileNotFoundError, ValueError)) as err:  # every key known: it gets as far as the files
        load_benchmark({**conf, "path": str(tmp_path / "missing")})
    assert "unknown keys" not in str(err.value) and "missing" in str(err.value), str(err.value)
