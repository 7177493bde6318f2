"""The RAG perf scripts keep their contract (the BM25 side of retrieval_scale: the dense side takes minutes), at the
size their targets are stated for (a 256k-token context): integration tier (tests/test_perf_scripts.py smoke-runs
every script at its smallest size in the fast tier)."""

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT


@pytest.mark.integration
def test_retrieval_scale_bm25_prints_json_figures():
    res = subprocess.run([sys.executable, "perf/retrieval_scale.py", "--no-dense"], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    figures = json.loads(res.stdout.strip().splitlines()[-1])
    assert figures["context_tokens"] >= 256_000
    assert 0 < figures["bm25_seconds"] < 10, figures  # target < 2 s; generous for a loaded CI machine
