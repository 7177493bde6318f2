"""The arm protocol and registry (experiments/arms/): every arm builds from the composed config and
answers, knobs, labels and config hashes stay what older run folders recorded, and an arm defined
here (not in the project) is run-hashed, labelled and priced by its spec with no report change."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from eval.benchmarks.synthetic import make_haystack
from experiments.arms import (
    ARMS,
    ROLE_OTHER,
    ROLE_RAG,
    ArmSpec,
    Curve,
    IndexShape,
    arm_spec,
    build_arm,
    register,
    spec_of_run,
)
from experiments.report.export import detail_rows
from experiments.report.page.build import build_report
from experiments.report.pricing import Pricing, index_cost_of
from experiments.report.questions.reasons import BUDGET_CUT, RETRIEVAL_MISS, TRUNCATED, loss_row
from experiments.report.questions.rows import question_rows
from experiments.report.runs import Run, find_runs
from experiments.report.settings import load_settings
from experiments.run import arm_knobs, config_hash
from experiments.simulate.sweeps import write_run
from llm.cost import INDEX_LEXICAL
from tests.conftest import compose

ROOT = Path(__file__).resolve().parents[1]

# Computed on the code before the arm registry existed (branch start, d05a367): old run folders must keep
# resuming, so these must never change. (overrides, config_hash, knobs, label, label when retrieval-only)
PINNED = [
    ([], "31fe117bf658",
     {"arm": "longctx", "benchmark": "synthetic", "generator": "bundled:smollm2", "truncation": "benchmark"},
     "longctx", "longctx"),
    (["arm=rag"], "a327f53955e2",
     {"arm": "rag", "benchmark": "synthetic", "generator": "bundled:smollm2", "retriever": "bm25", "chunk_size": 128,
      "chunk_overlap": 16, "top_k": 4, "order": "document"},
     "rag bm25 c128 k4", "rag bm25 c128 k4 retrieval-only"),
    (["arm=selfroute"], "665fdce59f77",
     {"arm": "selfroute", "benchmark": "synthetic", "generator": "bundled:smollm2", "retriever": "bm25",
      "chunk_size": 128, "chunk_overlap": 16, "top_k": 4, "order": "document", "truncation": "benchmark"},
     "selfroute bm25 c128 k4", "selfroute bm25 c128 k4 retrieval-only"),
    (["arm=closedbook"], "d84d58088995",
     {"arm": "closedbook", "benchmark": "synthetic", "generator": "bundled:smollm2"},
     "closedbook", "closedbook"),
    (["arm=longctx", "longctx.budget_tokens=512"], "9880789d15d3",
     {"arm": "longctx", "benchmark": "synthetic", "generator": "bundled:smollm2", "truncation": "benchmark",
      "budget_tokens": 512},
     "longctx budget512", "longctx budget512"),
    (["arm=rag", "retriever=minilm", "rag.top_k=8", "reranker=cross_encoder", "rag.budget_tokens=300"], "08d152657a50",
     {"arm": "rag", "benchmark": "synthetic", "generator": "bundled:smollm2", "retriever": "minilm", "chunk_size": 128,
      "chunk_overlap": 16, "top_k": 8, "order": "document", "rag_budget_tokens": 300, "reranker": "cross_encoder"},
     "rag minilm c128 k8 cross_encoder b300", "rag minilm c128 k8 cross_encoder b300 retrieval-only"),
    (["arm=selfroute", "longctx.truncation=head", "chunker=sentence"], "56fb1be1a9cb",
     {"arm": "selfroute", "benchmark": "synthetic", "generator": "bundled:smollm2", "retriever": "bm25",
      "chunk_size": 128, "chunk_overlap": 16, "top_k": 4, "order": "document", "chunker": "sentence",
      "truncation": "head"},
     "selfroute bm25 c128 k4 sentence lc-head", "selfroute bm25 c128 k4 sentence lc-head retrieval-only"),
    (["arm=rag", "generator=none"], "a6050580a85a",
     {"arm": "rag", "benchmark": "synthetic", "generator": "none", "retriever": "bm25", "chunk_size": 128,
      "chunk_overlap": 16, "top_k": 4, "order": "document"},
     "rag bm25 c128 k4", "rag bm25 c128 k4 retrieval-only"),
]


@pytest.mark.parametrize("overrides,chash,knobs,label,label_retrieval_only", PINNED,
                         ids=[" ".join(p[0]) or "default" for p in PINNED])
def test_knobs_labels_and_config_hash_are_unchanged(overrides, chash, knobs, label, label_retrieval_only):
    cfg = compose(overrides)
    got = arm_knobs(cfg)
    assert got == knobs and list(got) == list(knobs)  # the same keys in the same order: metrics.json byte-identical
    assert config_hash(cfg) == chash
    spec = arm_spec(cfg.arm.name)
    assert spec.label(got, retrieval_only=False) == label
    assert spec.label(got, retrieval_only=True) == label_retrieval_only
    assert Run(Path("."), {"knobs": got}).config_label == label  # the report asks the same spec


@pytest.fixture(scope="module")
def tokenizer_only():
    from llm.factory import build_generator

    cfg = OmegaConf.to_container(compose(["generator=none"]).generator, resolve=True)
    return build_generator(cfg)


@pytest.mark.parametrize("name", ARMS.names())
def test_every_registered_arm_builds_from_the_composed_config_and_answers(name, tokenizer_only, tmp_path):
    extra = []
    if name == "router":  # the learned router needs its file: one with only an intercept (every question to RAG)
        from experiments.arms.router_model import RidgeModel, Router, save_router

        empty = RidgeModel(names=[], mean=[], sd=[], weights=[], intercept=0.1)
        extra = [f"router.path={save_router(Router(empty), tmp_path / 'router.json')}"]
    cfg = OmegaConf.to_container(compose([f"arm={name}", "generator=none", f"run.cache_dir={tmp_path}", *extra]),
                                 resolve=True)
    spec = arm_spec(name)
    assert spec.name == name and spec.role in ("longctx", "rag", "other")
    assert set(spec.sections) <= set(cfg), f"{name} reads config sections the config does not have"
    arm = build_arm(name, tokenizer_only, cfg)
    assert arm.name == name  # the runner's `answer_group` finds the spec by the built arm's name
    samples = make_haystack(seed=1, language="en", tokens=400, n_questions=2)
    answers = spec.answer(arm, tokenizer_only, samples)
    assert [a.sample.id for a in answers] == [s.id for s in samples]
    for a in answers:  # retrieval only: a context, no generation
        assert a.skipped is None and a.text is None
        assert a.meta["context_tokens"] == 0 if not spec.context else a.meta["context_tokens"] > 0
        # the tokens a generator would have received (the report's prompt-token column for retrieval-only runs)
        assert a.meta["prompt_tokens"] > a.meta["context_tokens"]
        if spec.indexed:
            assert a.meta["evidence_recall"] and a.meta["n_chunks"] >= 1
    if spec.indexed:
        assert spec.index_builds(arm) >= 1 and isinstance(spec.cache_stats(arm), dict)
    else:
        assert spec.index_builds(arm) is None


def test_unknown_arms_fail_with_the_registered_names_and_bad_roles_are_refused():
    with pytest.raises(ValueError, match=r"arm.name='oracle'; allowed: longctx, rag, closedbook, selfroute"):
        arm_spec("oracle")

    class Odd(ArmSpec):
        name = "odd_role"
        role = "router"

    with pytest.raises(ValueError, match="role='router'; allowed: longctx, rag, other"):
        register(Odd)
    assert "odd_role" not in ARMS
    assert spec_of_run("an_old_arm") is ArmSpec  # the report still reads runs of an arm nobody registers
    assert Run(Path("."), {"knobs": {"arm": "an_old_arm", "truncation": "head"}}).config_label == "an_old_arm head"


# A toy arm defined only here: a RAG variant that reranks with a second retriever. Nothing in the project
# knows its name; registering it is all the runner and the report need.
class ToyRerankSpec(ArmSpec):
    name = "toy_rerank"
    title = "toy reranked RAG"
    sections = ("rag", "retriever")
    indexed = True
    role = ROLE_RAG

    @classmethod
    def knobs(cls, cfg):
        return {"retriever": cfg["retriever"]["name"], "chunk_size": cfg["rag"]["chunk_size"],
                "top_k": cfg["rag"]["top_k"]}

    @classmethod
    def label(cls, knobs, retrieval_only=False):
        return f"toy {knobs['retriever']}/k{knobs['top_k']}" + (" (no answers)" if retrieval_only else "")

    @classmethod
    def index_shape(cls, knobs):  # what the report prices its index by
        return IndexShape(knobs["retriever"], int(knobs["chunk_size"]))


class ToyFloorSpec(ArmSpec):
    name = "toy_floor"
    title = "toy floor"
    pick = "toy floor (a control)"
    role = ROLE_OTHER


for _spec in (ToyRerankSpec, ToyFloorSpec):
    if _spec.name not in ARMS:
        register(_spec)


def test_a_new_arm_hashes_only_the_sections_it_declares():
    base = compose(["arm.name=toy_rerank"])
    assert arm_knobs(base) == {"arm": "toy_rerank", "benchmark": "synthetic", "generator": "bundled:smollm2",
                               "retriever": "bm25", "chunk_size": 128, "top_k": 4}
    assert config_hash(compose(["arm.name=toy_rerank", "rag.separator=|"])) != config_hash(base)  # a section it reads
    assert config_hash(compose(["arm.name=toy_rerank",
                                "longctx.truncation=head"])) == config_hash(base)  # one it does not
    assert config_hash(compose(["arm.name=toy_floor", "rag.top_k=9"])) == config_hash(compose(["arm.name=toy_floor"]))


def test_the_report_labels_and_prices_a_new_arm_by_its_spec(tmp_path):
    base = {"task": "t", "language": "en", "length_level": "1k", "status": "ok", "score": 1.0, "prompt_tokens": 100,
            "completion_tokens": 5, "latency_s": 1.0}

    def recs(arm, score, **extra):
        return [{**base, "id": f"s{i}", "group": f"d{i}", "arm": arm, "score": score, **extra} for i in range(4)]

    write_run(tmp_path / "runs" / "lc", {"arm": "longctx", "benchmark": "b", "generator": "g"}, recs("longctx", 0.5))
    toy = {"arm": "toy_rerank", "benchmark": "b", "generator": "g", "retriever": "minilm",
           "chunk_size": 100, "top_k": 2}
    write_run(tmp_path / "runs" / "toy", toy, recs("toy_rerank", 1.0, n_chunks=50))
    floor = {"arm": "toy_floor", "benchmark": "b", "generator": "g"}
    write_run(tmp_path / "runs" / "floor", floor, recs("toy_floor", 0.25, n_chunks=50))

    runs = {r.arm: r for r in find_runs([tmp_path / "runs"], with_records=True)}
    assert runs["toy_rerank"].label == "toy minilm/k2" and runs["toy_floor"].label == "toy_floor"

    settings = load_settings(queries_per_doc=1)
    files = build_report([str(tmp_path / "runs")], tmp_path / "out", settings)
    with open(files["whatif.csv"], newline="", encoding="utf-8") as f:
        rows = {r["arm"]: r for r in csv.DictReader(f)}
    # indexed: 50 chunks x 100 tokens embedded per document at the dense embedding price
    assert (float(rows["toy_rerank"]["index_cost_per_doc"])
            == pytest.approx(5000 * settings.indexing.embed_usd_per_million / 1e6))
    assert float(rows["toy_rerank"]["index_cost_per_doc"]) > 0
    assert float(rows["toy_floor"]["index_cost_per_doc"]) == 0.0  # not indexed, though its records count chunks
    assert rows["toy_floor"]["role"] == "toy floor (a control)"
    with open(files["verdict.csv"], newline="", encoding="utf-8") as f:
        verdict = next(csv.DictReader(f))
    assert verdict["best_rag_config"] == "toy minilm/k2"  # the verdict compares it as RAG: its declared role
    md = files["report.md"].read_text(encoding="utf-8")
    assert "toy floor" in md  # the "other arms" table has a column for it, named by its title


def test_the_report_reads_arm_specs_without_importing_the_runners_heavy_packages():
    code = ("import sys, experiments.report.page.build, experiments.arms as a\n"
            "[a.arm_spec(n) for n in a.ARMS.names()]\n"
            "heavy = sorted(m for m in ('torch', 'faiss', 'rag', 'longctx', 'sentence_transformers') "
            "if m in sys.modules)\n"
            "print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


# A toy indexed arm whose knobs share no name with RAG's: what prices, plots and budget-matches it can only
# come from its spec's hooks (index_shape, curve, token_budget), never from the report reading RAG's knobs.
class ToyPassagesSpec(ArmSpec):
    name = "toy_passages"
    title = "toy passages"
    sections = ("rag", "retriever")
    indexed = True
    role = ROLE_RAG

    @classmethod
    def knobs(cls, cfg):
        return {"encoder": cfg["retriever"]["name"], "passage_tokens": cfg["rag"]["chunk_size"],
                "k": cfg["rag"]["top_k"]}

    @classmethod
    def label(cls, knobs, retrieval_only=False):
        return f"toy {knobs['encoder']} p{knobs['passage_tokens']} k{knobs['k']}"

    @classmethod
    def token_budget(cls, knobs):
        return int(knobs["k"]) * int(knobs["passage_tokens"])

    @classmethod
    def index_shape(cls, knobs):
        return IndexShape(knobs["encoder"], int(knobs["passage_tokens"]))

    @classmethod
    def curve(cls, knobs):
        return Curve(f"{knobs['encoder']} p{knobs['passage_tokens']}", "document", int(knobs["k"]))

    @classmethod
    def retrieval_depth(cls, knobs):  # where the report reads recall@k for a loss reason and the upper bound
        return int(knobs["k"])

    @classmethod
    def upper_bound(cls, knobs):
        return knobs["encoder"] == "gold"

    @classmethod
    def index_cost_from_config(cls, config):  # a run from before runs recorded `index_cost`: its encoder's section
        return INDEX_LEXICAL if (config.get("encoder") or {}).get("lexical") else None


if ToyPassagesSpec.name not in ARMS:
    register(ToyPassagesSpec)


def test_a_new_indexed_arm_is_priced_plotted_and_budget_matched_through_its_spec_hooks(tmp_path):
    from experiments.report.plots import figures as plots

    base = {"task": "t", "language": "en", "length_level": "1k", "status": "ok", "prompt_tokens": 100,
            "completion_tokens": 5, "latency_s": 1.0}

    def recs(arm, scores, **extra):
        return [{**base, "id": f"s{i}", "group": f"d{i // 2}", "arm": arm, "score": float(s), **extra}
                for i, s in enumerate(scores)]

    n = 40
    lc_scores = [i % 2 for i in range(n)]
    runs_dir = tmp_path / "runs"
    write_run(runs_dir / "lc", {"arm": "longctx", "benchmark": "b", "generator": "g", "truncation": "benchmark"},
              recs("longctx", lc_scores))
    write_run(runs_dir / "lc300", {"arm": "longctx", "benchmark": "b", "generator": "g", "truncation": "benchmark",
                                   "budget_tokens": 300}, recs("longctx", [0] * n))
    for k in (1, 3):
        toy = {"arm": "toy_passages", "benchmark": "b", "generator": "g", "encoder": "minilm",
               "passage_tokens": 100, "k": k}
        write_run(runs_dir / f"toy{k}", toy, recs("toy_passages", [1] * n, n_chunks=50,
                                                  evidence_recall={"1": 0.5, "4": 1.0},
                                                  evidence_in_prompt=0.5 + k / 10))

    runs = find_runs([runs_dir], with_records=True)
    toys = [r for r in runs if r.arm == "toy_passages"]
    assert sorted(r.token_budget for r in toys) == [100, 300]
    # plotted: one line over k on the top-k plot, one series on the recall@n plot
    assert plots.topk_tradeoff(toys, tmp_path / "topk.png") is not None
    assert plots.recall_curves(toys, tmp_path / "recall.png") is not None

    settings = load_settings(queries_per_doc=1)
    files = build_report([str(runs_dir)], tmp_path / "out", settings)
    with open(files["whatif.csv"], newline="", encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r["arm"] == "toy_passages"]
    # priced: 50 passages x 100 tokens embedded per document at the dense embedding price
    assert rows and (float(rows[0]["index_cost_per_doc"])
                     == pytest.approx(5000 * settings.indexing.embed_usd_per_million / 1e6))
    md = files["report.md"].read_text(encoding="utf-8")
    # compared at the same budget: long context cut to 300 tokens against the toy config of budget 300 (k=3)
    section = md.split("Same token budget", 1)[1].split("\n#", 1)[0]
    assert "toy minilm p100 k3" in section and "| 300 |" in section.replace("  ", " ")
    assert "toy minilm p100 k1" not in section
    assert (tmp_path / "out" / "score_and_recall_vs_top_k.png").exists() or any(
        p.name.startswith("score_and_recall_vs_top_k") for p in (tmp_path / "out").rglob("*.png"))


def _toy_run(runs_dir: Path, encoder: str, k: int, scores: list[int], config: dict | None = None, **extra) -> None:
    knobs = {"arm": "toy_passages", "benchmark": "b", "generator": "g", "encoder": encoder, "passage_tokens": 100,
             "k": k}
    recs = [{"task": "t", "language": "en", "length_level": "1k", "status": "ok", "prompt_tokens": 300,
             "completion_tokens": 5, "latency_s": 1.0, "id": f"s{i}", "group": f"d{i // 2}", "arm": "toy_passages",
             "score": float(s), "n_chunks": 50, "retrieved": [], **extra} for i, s in enumerate(scores)]
    write_run(runs_dir / f"{encoder}{k}", knobs, recs, config)


def test_an_arm_without_top_k_gets_its_loss_reasons_upper_bound_and_index_price_from_its_spec(tmp_path):
    """The toy arm names its depth `k` and its model `encoder` (no top_k, no retriever): the report reads recall@k
    at the depth its spec gives, for why an answer was lost (lost answers, the viewer, the export) and for the
    oracle's recall@k, and prices a run from before index costs were recorded by what the spec reads from its
    config; long context, with no depth, still gets its own reason."""
    n, runs_dir = 40, tmp_path / "runs"
    lc = [{"task": "t", "language": "en", "length_level": "1k", "status": "ok", "prompt_tokens": 2000,
           "completion_tokens": 5, "latency_s": 2.0, "id": f"s{i}", "group": f"d{i // 2}", "arm": "longctx",
           "score": float(i % 2), "truncated": True, "evidence_retained": 0.0} for i in range(n)]
    write_run(runs_dir / "lc", {"arm": "longctx", "benchmark": "b", "generator": "g", "truncation": "benchmark"}, lc)
    recall = {"evidence_recall": {"1": 0.0, "3": 1.0}}
    # the evidence in the top 3 but packed out of the prompt: cut by the budget at depth 3, missed at depth 1
    lexical = {"benchmark": {"name": "b"}, "generator": {"model": "g"}, "arm": {"name": "toy_passages"},
               "encoder": {"name": "tok", "lexical": True}}
    _toy_run(runs_dir, "minilm", 3, [0] * n, lexical, evidence_in_prompt=0.0, **recall)
    _toy_run(runs_dir, "minilm", 1, [0] * n, evidence_in_prompt=0.0, **recall)
    _toy_run(runs_dir, "gold", 3, [1] * n, evidence_in_prompt=1.0, **recall)

    runs = {r.label: r for r in find_runs([runs_dir], with_records=True)}
    lc_run, k3, k1 = runs["longctx"], runs["toy minilm p100 k3"], runs["toy minilm p100 k1"]
    assert (lc_run.retrieval_depth, k3.retrieval_depth, k1.retrieval_depth) == (None, 3, 1)
    assert loss_row(k3, None, 0.5, 1.0).reasons == {BUDGET_CUT: n}
    assert loss_row(k1, None, 0.5, 1.0).reasons == {RETRIEVAL_MISS: n}
    assert loss_row(lc_run, None, 0.5, 1.0).reasons == {TRUNCATED: n // 2}
    assert {row["loss_reason"] for row in detail_rows(k3, 0.5, 1.0)} == {BUDGET_CUT}
    viewer = question_rows(list(runs.values()), [], 0.5, 1.0)
    mine = [c for c, run in enumerate(runs.values()) if run is k3]
    assert {a.get("r") for q in viewer["questions"] for a in q["a"] if a["c"] in mine} == {BUDGET_CUT}

    settings = load_settings(queries_per_doc=1)
    assert (index_cost_of(k3), index_cost_of(k1)) == (INDEX_LEXICAL, None)  # its config: lexical; k1's: unknown
    pricing = Pricing(settings, list(runs.values()))
    assert pricing.index_cost_per_doc(k3) == 50 * 100 * settings.indexing.lexical_usd_per_million / 1e6
    assert pricing.index_cost_per_doc(k1) == pytest.approx(50 * 100 * settings.indexing.embed_usd_per_million / 1e6)

    md = build_report([str(runs_dir)], tmp_path / "out", settings)["report.md"].read_text(encoding="utf-8")
    section = md.split("Retrieval's upper bound", 1)[1].split("\n#", 1)[0]
    oracle_row = next(line for line in section.splitlines() if "toy gold p100 k3" in line)
    assert "| 1.00 |" in oracle_row  # the gold config's recall@k at its depth 3
