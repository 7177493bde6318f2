"""Chunks that fit the embedder: a run counts, before any answer, the chunks its embedder would cut to its input
limit (experiments/run.py says so in one line naming the config), and the shipped `make decide` grid
(conf/experiment/decide.yaml) cuts none of the example corpus's chunks."""

from __future__ import annotations

import itertools

import pytest
import yaml
from omegaconf import OmegaConf

from eval.benchmarks import load_benchmark
from rag.build import build_rag_arm
from tests.conftest import CONF, ROOT, compose


def _grid() -> dict[str, list[str]]:
    params = yaml.safe_load((CONF / "experiment" / "decide.yaml").read_text())["hydra"]["sweeper"]["params"]
    return {key: str(value).split(",") for key, value in params.items()}


@pytest.mark.integration  # parses the example corpus and chunks it four times (minutes on a loaded 2-core machine)
def test_the_shipped_decide_grid_cuts_no_chunk_of_the_example(tiny_generator, minilm):
    grid = _grid()
    cfg = OmegaConf.to_container(compose(["experiment=decide"]), resolve=True)
    benchmark = {**cfg["benchmark"], "path": str(ROOT / "examples" / "docs"),
                 "questions": str(ROOT / "examples" / "questions.jsonl"), "cache_dir": None}
    samples = load_benchmark(benchmark, count_tokens=tiny_generator.tokenizer.count).samples
    dense = [r for r in grid["retriever"] if yaml.safe_load((CONF / "retriever" / f"{r}.yaml").read_text())
             ["kind"] == "dense"]
    assert dense, "the shipped grid has a dense retriever"
    for retriever, size in itertools.product(dense, grid["rag.chunk_size"]):
        conf = OmegaConf.to_container(compose(["experiment=decide", f"retriever={retriever}"]), resolve=True)
        arm = build_rag_arm(tiny_generator, {**conf["rag"], "chunk_size": int(size)}, conf["retriever"],
                            conf.get("chunker") or {}, conf.get("reranker") or {}, None)
        over = arm.chunks_over_limit(samples)
        assert over["chunks"] > 20 and over["max_input_tokens"] == 256
        assert over["truncated"] == 0, (retriever, size, over)
        # the check has teeth: twice the chunk size cuts chunks of the same documents
        wide = build_rag_arm(tiny_generator, {**conf["rag"], "chunk_size": 2 * int(size)}, conf["retriever"],
                             conf.get("chunker") or {}, conf.get("reranker") or {}, None)
        assert wide.chunks_over_limit(samples)["share"] > 0.5


def test_a_lexical_retriever_has_no_input_limit_to_check(tiny_generator):
    conf = OmegaConf.to_container(compose(["experiment=decide", "retriever=bm25"]), resolve=True)
    arm = build_rag_arm(tiny_generator, conf["rag"], conf["retriever"], {}, {}, None)
    assert arm.chunks_over_limit([]) is None
