"""The benchmark contract (eval/benchmarks/base.py): a class declared inside this test, registered, and run
by the real runner (Hydra config, long-context arm on SmolLM2, RAG arm retrieval-only), with no change to
the project. Also: the built-in benchmarks declare what they are through the same class attributes."""

from __future__ import annotations

import json

import pytest
from omegaconf import OmegaConf

from eval.benchmarks import BENCHMARKS, Benchmark, LoadResult, benchmark_class, load_benchmark, register
from eval.sample import PromptTemplate, Sample, Span
from tests.conftest import compose

FACTS = ["The lighthouse keeper of Varnholm is called Edda Strom.", "The ferry to Varnholm leaves at dawn.",
         "Varnholm exports smoked eel and tar.", "The old mill burned down in the great fire."]
CONTEXT = " ".join(FACTS * 6)
TEMPLATE = PromptTemplate("Read the notes and answer.\n\n{context}\n\nQuestion: {question}\nAnswer:", max_new_tokens=8)


class ToyBenchmark(Benchmark):
    name = "toy_notes"
    tasks = ("lookup",)
    levels = ("tiny",)
    evidence = "spans"
    templates = {"lookup": TEMPLATE}

    def load(self, cfg):
        unknown = set(cfg) - {"name", "metric", "tasks", "levels", "limit", "skip_bad"}
        if unknown:
            raise ValueError(f"benchmark.{sorted(unknown)[0]}: not a setting of toy_notes")
        questions = [("Who keeps the lighthouse of Varnholm?", "Edda Strom", FACTS[0]),
                     ("What does Varnholm export?", "smoked eel", FACTS[2])]
        samples = []
        for i, (question, answer, fact) in enumerate(questions):
            start = CONTEXT.index(fact)
            samples.append(Sample(
                id=f"toy-{i}", benchmark=self.name, task="lookup", language="en", length_level="tiny",
                context=CONTEXT, question=question, answers=[answer], template=TEMPLATE, metric="contains_all",
                evidence=[Span(start, start + len(fact))], group="notes"))
        return LoadResult(samples)


@pytest.fixture(scope="module")
def toy():
    if "toy_notes" not in BENCHMARKS:
        register(ToyBenchmark)
    return ToyBenchmark


def _config(overrides: list[str], tmp_path):
    cfg = compose(overrides + ["run.progress=false", f"run.cache_dir={tmp_path / 'cache'}"])
    OmegaConf.update(cfg, "benchmark", {"name": "toy_notes"}, merge=False)
    return cfg


def _records(run_dir):
    return [json.loads(line) for line in (run_dir / "records.jsonl").read_text().splitlines()]


def test_a_benchmark_class_declared_here_loads_and_selects_like_the_built_in_ones(toy):
    assert benchmark_class("toy_notes") is toy
    assert [s.id for s in load_benchmark({"name": "toy_notes", "limit": 1}).samples] == ["toy-0"]
    with pytest.raises(ValueError,
                       match=r"benchmark.tasks: unknown \['summary'\] for toy_notes; available: \['lookup'\]"):
        load_benchmark({"name": "toy_notes", "tasks": ["summary"]})
    with pytest.raises(ValueError, match=r"benchmark.colour: not a setting of toy_notes"):
        load_benchmark({"name": "toy_notes", "colour": "red"})


def test_the_runner_answers_a_registered_benchmark_with_both_arms(toy, tmp_path, tiny_llm):
    from experiments.run import run

    lc_dir, rag_dir = tmp_path / "lc", tmp_path / "rag"
    lc_dir.mkdir()
    rag_dir.mkdir()
    # the answers of the tiny random-weight Llama (SmolLM2's tokenizer): the runner's plumbing is what is checked
    lc = run(_config(["arm=longctx", f"generator.model={tiny_llm}"], tmp_path), lc_dir)
    assert (lc["n"], lc["n_ok"]) == (2, 2)
    records = _records(lc_dir)
    assert {r["benchmark"] for r in records} == {"toy_notes"} and all(r["evidence_retained"] == 1.0 for r in records)
    assert all(r["prompt_tokens"] > 100 and r["prediction"] for r in records)
    rag = run(_config(["arm=rag", "generator=none", "rag.chunk_size=32", "rag.top_k=2"], tmp_path), rag_dir)
    assert rag["n"] == 2
    recall = [r["evidence_recall"] for r in _records(rag_dir)]
    assert all(0.0 <= r["1"] <= r["10"] <= 1.0 for r in recall) and any(r["10"] == 1.0 for r in recall)


def test_a_class_that_breaks_the_contract_fails_when_it_is_declared():
    with pytest.raises(TypeError, match="evidence='chunks'; allowed: spans, documents, none"):
        type("Bad", (ToyBenchmark,), {"name": "bad", "evidence": "chunks"})
    with pytest.raises(TypeError, match="tasks must be a tuple"):
        type("Bad", (ToyBenchmark,), {"name": "bad", "tasks": {1: "a"}})
    with pytest.raises(TypeError, match="is not a Benchmark subclass"):
        register(dict)


@pytest.mark.parametrize("name,evidence,multi,policy", [
    ("synthetic", "spans", False, "middle"), ("lveval", "spans", False, "prompt_middle"),
    ("loogle", "spans", False, "middle"), ("clongeval", "spans", False, "middle"),
    ("loong", "documents", True, "drop_documents"), ("lara", "documents", True, "prompt_middle"),
])
def test_the_built_in_benchmarks_declare_their_contract(name, evidence, multi, policy):
    cls = benchmark_class(name)
    assert (cls.name, cls.evidence, cls.multi_document, cls.truncation) == (name, evidence, multi, policy)
    assert cls.tasks and all(isinstance(t, str) for t in cls.tasks)
    assert all(t.truncation == policy for t in cls.templates.values())
