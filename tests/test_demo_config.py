"""`make demo`'s sweep (conf/experiment/demo.yaml): every point composes as the config it is named after, and its
haystacks give the verdict what it needs: enough documents at 1k for the cross-fitted choice and a decision, and
more than one document at 6k (issue 41: the demo's 6k row was one document)."""

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
