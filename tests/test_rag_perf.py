"""The RAG perf scripts keep their contract (the BM25 side of retrieval_scale: the dense side takes minutes)."""

import json
import subprocess
import sys

from tests.conftest import ROOT


def test_retrieval_scale_bm25_prints_json_figures():
    res = subprocess.run([sys.executable, "perf/retrieval_scale.py", "--no-dense"], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    figures = json.loads(res.stdout.strip().splitlines()[-1])
    assert figures["context_tokens"] >= 256_000
    assert 0 < figures["bm25_seconds"] < 10, figures  # target < 2 s; generous for a loaded CI machine
