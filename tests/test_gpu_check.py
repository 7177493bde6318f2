"""perf/gpu_check.py keeps its contract on a CPU: a tiny random-weight model, both arms with and without prefix
reuse, a raw prefill, one JSON line last (the same script times a GPU: README "Running on a GPU")."""

import json
import subprocess
import sys

from tests.conftest import ROOT


def test_gpu_check_runs_the_tiny_shape_on_a_cpu_and_prints_its_figures(tmp_path):
    res = subprocess.run([sys.executable, "perf/gpu_check.py", "--shape", "tiny", "--device", "cpu", "--levels", "1k",
                          "--haystacks", "1", "--questions", "3", "--new-tokens", "8", "--threads", "1",
                          "--work", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    figures = json.loads(res.stdout.strip().splitlines()[-1])
    assert figures["shape"] == "tiny" and figures["device"] == "cpu" and figures["params"] > 3_000_000
    level = figures["levels"]["1k"]
    for arm in ("longctx_reuse", "longctx_no_reuse", "rag"):
        assert level[arm]["n"] == 3 and level[arm]["charged_s_per_question"] > 0, arm
        assert level[arm]["user_s_p50"] <= level[arm]["user_s_p90"]
    assert level["longctx_reuse"]["prompt_tokens"] == level["longctx_no_reuse"]["prompt_tokens"] > 1000
    assert level["rag"]["prompt_tokens"] < level["longctx_reuse"]["prompt_tokens"]
    assert level["longctx_reuse"]["prefill_s"] > 0 and "prefill_s" not in level["longctx_no_reuse"]
    # reading the document once for three questions costs less than three reads (2.7x measured here)
    assert level["reuse_speedup"] > 1.0 and figures["reuse_not_slower"] is True
    (prefill,) = figures["prefill"]
    assert prefill["tokens"] == level["longctx_reuse"]["prompt_tokens"] and prefill["seconds"] > 0
    assert 0 < prefill["share_of_peak"] and figures["matmul_tflops"] > 0
    # no reuse and RAG decode their questions as one padded batch (run.decode_batch, the same for every arm),
    # long context with reuse over the shared prefix's tree: one untimed warm-up of each path, no other
    assert sorted(w["path"] for w in figures["warmups"]) == ["padded", "tree"]
    assert (tmp_path / "model_tiny" / "tokenizer.json").exists()
