"""Every perf script still runs: each is started as a user starts it (`python perf/NAME.py`, from the repository
root), with the smallest arguments it has, and must end with one JSON line of figures holding what it measures.
A refactor that breaks a script (an import that moved, a loader that became a class) fails here.

Where a script needs a generator, it gets the tiny random-weight Llama's folder (conftest's `tiny_llm`: SmolLM2's
tokenizer, so the same chunks and token counts; the real transformers backend); scripts that only budget
tokens read that folder's copy of SmolLM2's tokenizer instead of its GGUF file. Scripts that take more than
seconds even so are in the integration tier. Some scripts are run by other test files (named in `ELSEWHERE`);
`test_every_perf_script_has_a_smoke_run` keeps the list whole.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest

from tests import house_rules
from tests.conftest import ROOT, SHARED_DATA

# perf scripts smoke-run by another test file (script -> that file)
ELSEWHERE = {
    "metric_speed.py": "test_metrics_confidence.py",
    "plan_check.py": "test_plan.py",
    "first_screen.py": "test_first_screen.py",
    "gpu_check.py": "test_gpu_check.py",
    "first_run.py": "test_docs_commands.py",
}
NOT_A_SCRIPT = {"common.py"}  # what the scripts share


def run_script(name: str, *args: str, timeout: int = 600) -> dict:
    res = subprocess.run([sys.executable, f"perf/{name}", *map(str, args)], cwd=ROOT, capture_output=True, text=True,
                         timeout=timeout)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-4000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_every_perf_script_has_a_smoke_run():
    scripts = {p.name for p in (ROOT / "perf").glob("*.py")} - NOT_A_SCRIPT
    here = (ROOT / "tests" / "test_perf_scripts.py").read_text(encoding="utf-8")
    ran_here = set(re.findall(r'run_script\(\s*"([a-z_]+\.py)"', here))
    for script, test_file in ELSEWHERE.items():
        assert script in (ROOT / "tests" / test_file).read_text(encoding="utf-8"), (script, test_file)
    assert scripts <= ran_here | set(ELSEWHERE), f"perf scripts without a smoke run: {sorted(scripts - ran_here)}"


# -- seconds: the fast tier ------------------------------------------------------------------------------------


def test_house_counts():
    figures = run_script("house_counts.py")
    assert figures["lines"]["total"] == sum(v for k, v in figures["lines"].items() if k != "total") > 10000
    assert figures["present_arguments"] >= 1 and figures["functions_over_50"] >= figures["functions_over_60"]
    assert figures["rooms"] == len(house_rules.PACKAGES) and figures["floors"] >= 4  # eval, llm, the arms, experiments
    assert figures["experiments_rooms"] > 40 and figures["experiments_named_floors"] == len(house_rules.FLOORS)
    assert figures["experiments_floors"] <= figures["experiments_named_floors"]


def test_viewer_open():
    if not any(shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome")):
        pytest.skip("chromium not installed: `apt-get install -y chromium` to time the viewer in a browser")
    figures = run_script("viewer_open.py", "--questions", "40", "--repeats", "1")
    assert figures["questions"] == 40 and figures["configs"] == 5 and figures["answers"] == 200
    assert 0 < figures["open_ms_median"] and 0 < figures["only_rag_questions"] < 40


def test_synthetic_speed():
    figures = run_script("synthetic_speed.py", "--tokens", "4000")
    assert figures["seconds"] > 0 and {"en_4k_seconds", "zh_4k_seconds"} <= set(figures)


def test_small_sample_verdict():
    figures = run_script("small_sample_verdict.py", "--sweeps", "30", "--sweeps-12", "2", "--sizes", "4,8",
                         "--router-sweeps", "1", "--router-sizes", "8", "--samples-sweeps", "5",
                         "--through-report", "1", "--resamples", "200", "--scenario", "own,skewed,unequal,lc_fails",
                         "--identical-sweeps", "3", "--identical-sizes", "8", "--power-sweeps", "3",
                         "--power-sizes", "8")
    cells = figures["cells"]
    assert figures["min_documents"] == 6 and set(cells) == {"own", "skewed", "unequal", "lc_fails"}
    assert cells["lc_fails"]["8"]["1"]["claim"] == "longctx" and cells["own"]["8"]["1"]["claim"] == "rag"
    assert figures["identical_decided"] == {"8": 0.0} and set(figures["power"]) == {
        "+10/8/1", "+10/8/12", "-10/8/1", "-10/8/12"}
    assert all(cells[s]["4"]["1"]["false_at_b"] == 0 for s in cells)  # nothing below 6, in every scenario
    assert 0 <= cells["skewed"]["8"]["12"]["coverage"] <= 1 and figures["router_null"]["8"]["sweeps"] == 1
    assert cells["own"]["8"]["1"]["sweeps"] == 30 and cells["unequal"]["8"]["12"]["sweeps"] == 2
    assert [r["documents"] for r in figures["through_report"]] == [2, 4, 6]
    assert [r["rag"] for r in figures["through_report"]][:2] == [0, 0] and set(figures["samples"]) == {"1", "4"}


@pytest.mark.integration  # end to end, 20-40 s: the fast tier stays under 10 minutes on 2 cores
def test_report_speed():
    figures = run_script("report_speed.py", "--runs", "7", "--per-level", "4")
    assert figures["run_dirs"] == 7 and figures["records"] == 7 * 3 * 4 and figures["plots"] > 0
    assert figures["html_bytes"] > 0 and figures["seconds"] > 0


def test_corpus_parse(tmp_path):
    def run():
        return run_script("corpus_parse.py", "--files", "10", "--mb", "0.05", "--dir", tmp_path / "docs")

    figures = run()
    assert figures["build_seconds"] > 0 and run()["build_seconds"] == 0  # the folder is reused
    assert figures["documents"] == 10 and figures["bad_files"] == 0
    assert figures["first_misses"] == 10 and figures["cached_hits"] == 10
    assert figures["first_seconds"] > 0 and figures["cached_seconds"] <= figures["first_seconds"]  # rounded: may be 0.0
    assert sorted(p.suffix for p in (tmp_path / "docs").rglob("doc0*")) == sorted([".docx", ".html", ".md", ".pdf",
                                                                                  ".txt"] * 2)


def test_router_simulation():
    figures = run_script("router_simulation.py", "--sweeps", "1", "--docs", "10", "--per-doc", "2",
                         "--resamples", "100")["router_simulation"]
    for scenario in ("length", "null", "split", "flat"):
        assert figures[scenario]["sweeps"] == 1 and 0 <= figures[scenario]["route_decided"] <= 1
    assert figures["docs"] == 10 and figures["resamples"] == 100


def test_verdict_simulation():
    figures = run_script("verdict_simulation.py", "--sweeps", "1", "--rag-configs", "2", "--resamples", "100",
                         "--scenarios", "all_equal", "--family-rows", "2", "--family-sweeps", "2")
    rates = figures["rates"]
    assert figures["sweeps_per_scenario"] == 1 and rates["all_equal"]["right"] in ("rag", "longctx")
    assert {"holm", "per_row"} <= set(rates["family"])


def test_soak_writer_and_bad_input_phases():
    figures = run_script("soak.py", "--phases", "writer,bad", "--writer-records", "20")
    assert figures["records_lost"] == 0 and figures["bad_inputs"] > 100 and figures["bad_inputs_not_clear"] == 0
    assert figures["phases"]["writer"]["records"] == 20


def test_truncation(tiny_llm):
    figures = run_script("truncation.py", "--tokens", "10000", "--model", tiny_llm)
    assert figures["context_tokens"] > 8192 >= figures["kept_tokens"] > 0 and figures["seconds"] > 0


def test_scale_bm25(tiny_llm):
    """Retrieval-only BM25 over generated folders: one process per size, CPU, peak memory and the ratio per step."""
    figures = run_script("scale.py", "--quick", "--stages", "bm25", "--bm25-docs", "2,8", "--model", tiny_llm)
    curve = figures["bm25"]
    assert [p["size"] for p in curve["points"]] == [2, 8] and curve["fixed"]["size"] == 1
    assert all(p["cpu_s"] > 0 and p["peak_mb"] > 50 for p in [curve["fixed"], *curve["points"]])
    assert curve["per_step"][0]["size_ratio"] == 4.0 and curve["per_step"][0]["cpu_ratio"] > 0


def test_retrieval_scale_bm25(tiny_llm):
    figures = run_script("retrieval_scale.py", "--no-dense", "--tokens", "3000", "--model", tiny_llm)
    assert figures["chunks"] > 10 and figures["context_tokens"] > 3000 and figures["bm25_seconds"] > 0


def test_retrieval_sweep(tiny_llm):
    figures = run_script("retrieval_sweep.py", "--level", "1k", "--haystacks", "1", "--questions", "2",
                         "--model", tiny_llm)
    assert figures["points"] == 12 and figures["samples"] == 2
    assert figures["embeddings_computed"] == 3 and figures["ratio"] > 0  # one embedding per chunk size


def test_retrieval_recall(tiny_llm):
    figures = run_script("retrieval_recall.py", "--languages", "en", "--levels", "1k", "--questions", "2",
                         "--no-loogle", "--model", tiny_llm)
    for retriever in ("bm25", "minilm", "hybrid"):
        key = f"synthetic_en_1k/{retriever}"
        assert 0 <= figures[f"{key}/recall@1"] <= figures[f"{key}/recall@10"]


def test_prefix_reuse(tiny_llm):
    figures = run_script("prefix_reuse.py", "--questions", "2", "--tokens", "300", "--model", tiny_llm)
    assert figures["questions"] == 2 and figures["answers_identical"] is True and figures["speedup"] > 0


def test_pricing_checks():
    figures = run_script("pricing_checks.py")
    assert figures["server_q_rescale_error"] < 1e-6 and figures["discounted_twice_error"] < 1e-6


def test_cost_fairness(tiny_llm):
    """Both arms under one batching policy; the what-if's no-cache cost near a measured no-reuse run's (a loose band:
    one small document); part B's pricing checks at zero."""
    figures = run_script("cost_fairness.py", "--quick", "--docs", "1", "--questions", "3", "--tokens", "400",
                         "--model", tiny_llm, "--rounds", "1")
    batches = ("rag_decode_batch", "longctx_decode_batch", "longctx_no_reuse_decode_batch", "probe_decode_batch")
    assert [figures[k] for k in batches] == [3, 3, 3, 3], "one batching policy for every arm, and the probe"
    # the probe's charge of the answers over their CPU seconds (a loose band: one round on a machine others share)
    assert 0.5 < figures["priced_over_measured_cpu"] < 2.0 and len(figures["priced_over_measured_cpu_each_round"]) == 1
    assert 0.6 < figures["whatif_no_cache_over_measured"] < 1.6
    assert figures["whatif_no_cache_over_measured_work"] == pytest.approx(1.0, abs=0.02)  # at the probe's rates
    assert figures["server_q_rescale_error"] < 0.05 and figures["discounted_twice_error"] < 0.05


def test_probe_spread(tiny_llm):
    """Two probes back to back price a demo-like pair: each ratio inside its own interval, the agreement figures."""
    from llm.work_model import FEATURES

    figures = run_script("probe_spread.py", "--quick", "--probes", "2", "--model", tiny_llm, "--threads", "1")
    assert [p["probe"] for p in figures["probes"]] == [1, 2] and all(p["ratios"] for p in figures["probes"])
    for probe in figures["probes"]:
        for point, low, high in probe["ratios"].values():
            assert 0 < low <= point <= high
    assert 0.0 <= figures["each_holds_the_others_points"] <= 1.0 and set(figures["rate_spread"]) == set(FEATURES)


def test_response_cache(tiny_llm):
    figures = run_script("response_cache.py", "--haystacks", "1", "--questions", "2", "--model", tiny_llm)
    assert figures["samples"] == 2 and figures["generation_calls_first_run"] == 2
    assert figures["generation_calls_on_rerun"] == 0


def test_question_generation(tiny_llm, tmp_path):
    import yaml

    from tests.conftest import SMOLLM2

    conf = tmp_path / "tiny.yaml"
    conf.write_text(yaml.safe_dump({**SMOLLM2, "model": str(tiny_llm)}))
    figures = run_script("question_generation.py", "--n", "1", "--max-new-tokens", "8", "--generator", conf)
    assert figures["items"] == 1 and figures["generator"] == str(tiny_llm) and figures["seconds"] > 0
    dropped = sum(v for k, v in figures.items() if k.startswith("share_dropped_"))
    assert abs(figures["share_kept"] + dropped - 1) < 1e-9


def test_corpus_parity(tiny_llm):
    if not (SHARED_DATA / "loogle").is_dir():
        pytest.skip("../shared/data/loogle is absent")
    figures = run_script("corpus_parity.py", "--types", "md", "--documents", "1", "--tokenizer", tiny_llm)
    assert figures["md/differing"] == 0 and figures["md/max_diff"] == 0.0  # the same recall through both doors
    assert 0 < figures["md/recall@1/loogle"] <= figures["md/recall@10/loogle"]


# -- minutes: the integration tier ----------------------------------------------------------------------------


@pytest.mark.integration
def test_scale_every_stage_quick(tiny_llm):
    """perf/scale.py --quick, as CI's smoke run: every stage's curve at its small sizes, the start costs."""
    figures = run_script("scale.py", "--quick", "--model", tiny_llm, timeout=1800)
    for stage in ("bm25", "minilm", "longctx", "report", "export"):
        curve = figures[stage]
        assert len(curve["points"]) == 2 and all(p["cpu_s"] > 0 for p in curve["points"]), stage
    assert figures["report"]["points"][0]["size"] == 2 * 9 * 3 * 2  # 2 benchmarks x 9 configs x 3 levels x 2
    assert "questions.html" in figures["report"]["points"][-1]["files_mb"]
    assert figures["start"]["run_help"]["cpu_s"] > 0 and figures["start"]["report_help"]["cpu_s"] > 0


@pytest.mark.integration
def test_loader_speed():
    if not (SHARED_DATA / "loong" / "loong.jsonl").exists():
        pytest.skip("../shared/data/loong is absent")
    figures = run_script("loader_speed.py")
    assert 0 < figures["seconds"] < 60 and figures["loong_samples"] > 0


@pytest.mark.integration
def test_retrieval_scale_dense(tiny_llm):
    figures = run_script("retrieval_scale.py", "--tokens", "3000", "--model", tiny_llm)
    assert figures["encode_seconds"] > 0 and figures["dense_overhead"] > 0


@pytest.mark.integration
def test_soak_kill_and_endpoint_phases(tiny_llm):
    # faults the client gets past at once (hangs and drips cost a 20 s timeout each: test_openai_backend has them)
    figures = run_script("soak.py", "--phases", "kill,endpoint", "--samples", "3", "--kills", "2", "--faults", "3",
                         "--fault-kinds", "429,500,503,malformed,drop,no_usage", "--model", tiny_llm,
                         "--max-new-tokens", "160")
    assert figures["records_lost"] == 0 and figures["mismatched_predictions"] == 0 and figures["kills"] == 2
    assert figures["phases"]["endpoint"]["faults_injected"] == 3


@pytest.mark.integration
def test_router_live_check(tiny_llm, tmp_path):
    """A real sweep (long context and RAG over 8 documents, the tiny Llama), then the script's live router runs
    over the same benchmark: each half's model routes the questions it was not trained on."""
    bench = ["benchmark.languages=[en]", "benchmark.levels=[100]", "benchmark.haystacks_per_level=8",
             "benchmark.questions_per_haystack=1", f"generator.model={tiny_llm}", f"run.cache_dir={tmp_path / 'cache'}"]
    res = subprocess.run([sys.executable, "-m", "experiments.run", "-m", "arm=longctx,rag", *bench,
                          f"hydra.sweep.dir={tmp_path / 'sweep'}", "run.progress=false"], cwd=ROOT, capture_output=True,
                         text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    figures = run_script("router_live_check.py", tmp_path / "sweep", "--level", "100", "--out", tmp_path / "live",
                         "--", *bench)["router_live_check"]
    assert figures["row"] == "synthetic 100" and figures["questions"] == figures["of"] == 8
    assert figures["routes_agree"] == 1.0  # the live arm routes as the report's cross-fitted models did


@pytest.mark.integration
def test_default_sizes_of_the_quick_scripts():
    """The sizes the scripts' figures are stated for (256k-token haystacks, 100 run folders), not the smoke sizes."""
    figures = run_script("synthetic_speed.py")
    assert figures["seconds"] > 0 and "zh_256k_seconds" in figures
    figures = run_script("report_speed.py")
    assert figures["run_dirs"] == 100 and figures["seconds"] > 0


@pytest.mark.integration
def test_question_generation_with_smollm2():
    figures = run_script("question_generation.py", "--n", "1", "--max-new-tokens", "8", "--set", "threads=1",
                         timeout=900)
    assert figures["items"] == 1 and figures["generator"] == "bundled:smollm2" and figures["seconds"] > 0
