import json
import subprocess
import sys

import pytest

from eval.benchmarks import load_benchmark
from eval.describe import benchmark_config, main
from tests.conftest import ROOT


def test_describe_synthetic_counts(capsys):
    assert main(["--benchmark", "synthetic", "--set", "levels=[1k,2k]", "--set", "languages=[en]"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["samples"] == 8 and out["by_length_level"] == {"1k": 4, "2k": 4}
    assert sum(out["by_task"].values()) == 8
    assert out["with_evidence"] == 8 and out["skipped"] == {}


def test_describe_bad_selection_is_one_clear_line():
    proc = subprocess.run([sys.executable, "-m", "eval.describe", "--benchmark", "synthetic", "--task", "nope"],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("error: benchmark.tasks: unknown ['nope']")


def test_generic_selection_and_metric_override():
    cfg = benchmark_config("synthetic", ["languages=[en]", "levels=[1k]"])
    full = load_benchmark(cfg).samples
    sel = load_benchmark({**cfg, "tasks": ["single_hop"], "limit": 2, "metric": "qa_f1"}).samples
    assert [s.id for s in sel] == [s.id for s in full if s.task == "single_hop"][:2]
    assert {s.metric for s in sel} == {"qa_f1"}
    with pytest.raises(KeyError, match="unknown metric"):
        load_benchmark({**cfg, "metric": "nope"})
    with pytest.raises(ValueError, match="limit"):
        load_benchmark({**cfg, "limit": -1})
