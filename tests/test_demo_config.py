"""`make demo`'s sweep (conf/experiment/demo.yaml): every point composes as the config it is named after, and its
haystacks give the verdict what it needs: enough documents at 1k for a decision (and for a cross-fitted choice when
a RAG point is added), more than one document at 6k (issue 41: the demo's 6k row was one document), and a window
the 1k haystacks fit and the 6k ones do not (the demo caps SmolLM2's window at 4k tokens so that its long-context
prefill fits the time)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import yaml
from omegaconf import OmegaConf

from eval.benchmarks import load_benchmark
from experiments.report.halves import MIN_GROUPS
from experiments.report.verdict.decision import MIN_DOCUMENTS
from tests.conftest import compose


def _points() -> list[str]:
    """The demo's sweep, as conf/experiment/demo.yaml lists it."""
    demo = yaml.safe_load((Path(__file__).parents[1] / "conf/experiment/demo.yaml").read_text())
    return [p.strip() for p in demo["hydra"]["sweeper"]["params"]["demo_point"].split(",")]


def test_every_demo_point_composes_as_named():
    points = _points()
    assert points[0] == "lc" and {"rag_bm25_c128_k1"} <= set(points)
    for point in points:
        cfg = compose(["experiment=demo", f"demo_point={point}"])
        if point == "lc":
            assert cfg.arm.name == "longctx"
            continue
        _, retriever, chunk, top = point.split("_")
        assert (cfg.arm.name, cfg.retriever.name) == ("rag", retriever)
        assert (cfg.rag.chunk_size, cfg.rag.top_k) == (int(chunk[1:]), int(top[1:]))


def test_the_demo_has_documents_enough_to_decide_at_1k_and_more_than_one_at_6k():
    cfg = compose(["experiment=demo", "demo_point=lc"])
    samples = load_benchmark(OmegaConf.to_container(cfg.benchmark, resolve=True)).samples
    documents = Counter(level for level, _ in {(s.length_level, s.group) for s in samples})
    assert documents["1k"] >= max(MIN_DOCUMENTS, 2 * MIN_GROUPS)
    assert documents["6k"] >= 2
    per_document = Counter(s.group for s in samples)
    assert set(per_document.values()) == {cfg.benchmark.questions_per_haystack}


def test_the_demos_window_holds_a_1k_haystack_and_cuts_a_6k_one():
    """The story the demo tells at 6k (long context loses evidence to the cut) needs haystacks longer than the window,
    and the 1k row needs haystacks that fit it, counted with SmolLM2's own tokenizer."""
    from llm.hf_tokenizer import load_hf_tokenizer

    cfg = compose(["experiment=demo", "demo_point=lc"])
    window = cfg.generator.context_window
    assert window == 4096
    tok = load_hf_tokenizer(cfg.generator.model)
    samples = load_benchmark(OmegaConf.to_container(cfg.benchmark, resolve=True)).samples
    tokens = {}
    for s in samples:
        tokens.setdefault(s.length_level, {})[s.group] = len(tok(s.context)["input_ids"])
    assert max(tokens["1k"].values()) < window - cfg.benchmark.max_new_tokens - 200  # the question and template fit too
    assert min(tokens["6k"].values()) > window
