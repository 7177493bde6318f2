"""`experiment=decide` and the example corpus in examples/: the sweep it composes (no model is run), the
examples loading through benchmark=corpus with every quote aligned and every answer inside its evidence, and
the committed files being exactly what `make examples` writes."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from tests.conftest import CONF, ROOT

EXAMPLES = ROOT / "examples"


def _compose_all(jobs: list[list[str]], hydra: bool = False) -> list:
    """The config of each job (overrides), composed as `python -m experiments.run` does, in one Hydra context."""
    from hydra import compose, initialize_config_dir

    from experiments import folder_names  # noqa: F401  (the ${safe_dirname:...} resolver of hydra.sweep.subdir)

    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return [compose(config_name="config", overrides=job, return_hydra_config=hydra) for job in jobs]


def _compose(overrides: list[str], hydra: bool = False):
    return _compose_all([overrides], hydra)[0]


def _jobs(cli: list[str]) -> list[list[str]]:
    """The overrides of each job of `python -m experiments.run -m *cli`, as Hydra's basic sweeper makes them."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    fixed = [o.input_line for o in parser.parse_overrides(cli) if not o.is_sweep_override()]
    params = _compose(fixed, hydra=True).hydra.sweeper.params  # a multirun composes without its sweeps first
    parsed = parser.parse_overrides([f"{k}={v}" for k, v in params.items()] + cli)
    return [job for chunk in BasicSweeper.split_arguments(parsed, None) for job in chunk]


def test_decide_sweeps_long_context_and_a_first_rag_grid_on_the_examples():
    from experiments.run import config_hash

    jobs = _jobs(["experiment=decide"])
    assert len(jobs) == 8
    configs = _compose_all(jobs)
    assert {c.benchmark.name for c in configs} == {"corpus"}
    assert {(c.benchmark.path, c.benchmark.questions) for c in configs} == {("examples/docs",
                                                                             "examples/questions.jsonl")}
    assert all(c.generator.model == "bundled:smollm2" and list(c.generator.stop) == ["\n", ". "] for c in configs)
    rag = {(c.retriever.name, c.rag.chunk_size, c.rag.top_k) for c in configs if c.arm.name == "rag"}
    assert rag == {(r, 192, k) for r in ("bm25", "minilm") for k in (2, 4)}
    # the long-context point repeats 4 times with one config hash: the report shows it once
    hashes = {c.arm.name: set() for c in configs}
    for c in configs:
        hashes[c.arm.name].add(config_hash(c))
    assert len(hashes["longctx"]) == 1 and len(hashes["rag"]) == 4


def test_a_team_swaps_in_its_folder_and_sweep_from_the_command_line():
    jobs = _jobs(["experiment=decide", "benchmark.path=/data/ours", "benchmark.questions=/data/q.csv",
                  "rag.top_k=4,8,16"])
    assert len(jobs) == 12
    configs = _compose_all(jobs[::5])
    assert {(c.benchmark.path, c.benchmark.questions) for c in configs} == {("/data/ours", "/data/q.csv")}
    assert {c.rag.top_k for c in configs} == {4, 8, 16} and {c.arm.name for c in configs} == {"longctx", "rag"}


@pytest.fixture(scope="module")
def examples():
    from omegaconf import OmegaConf

    from eval.benchmarks import load_benchmark

    cfg = OmegaConf.to_container(_compose(["experiment=decide"]).benchmark, resolve=True)
    return load_benchmark({**cfg, "path": str(ROOT / cfg["path"]), "questions": str(ROOT / cfg["questions"]),
                           "cache_dir": None})  # parse afresh, writing no cache


def test_the_examples_load_with_every_quote_aligned_and_every_answer_in_its_evidence(examples):
    samples = examples.samples
    assert 20 <= len(samples) <= 30 and examples.notes["documents"] == 10
    assert examples.notes["evidence quotes not aligned"] == 0 and not examples.skipped
    assert {Path(s.metadata["documents"][0]).suffix for s in samples} == {".txt", ".md", ".html", ".pdf", ".docx"}
    assert {s.task for s in samples} == {"single_hop", "two_hop"}
    for s in samples:
        assert s.evidence and all(e.quality == 1.0 for e in s.evidence), s.id
        evidence = " ".join(" ".join(s.context[e.start:e.end].split()) for e in s.evidence)
        assert all(a in evidence for a in s.answers), s.id
        assert s.metadata["approx_tokens"] <= 3500, s.id  # about 6k SmolLM2 tokens: one document fits its 8k window


def _examples_command() -> list[str]:
    """The arguments of `python -m eval.corpus.write` in the Makefile's `examples` recipe."""
    lines, inside = [], False
    for line in (ROOT / "Makefile").read_text(encoding="utf-8").splitlines():
        if line.startswith("examples:"):
            inside = True
        elif inside and line.strip():
            lines.append(line.strip().rstrip("\\"))
        elif inside:
            break
    words = shlex.split(" ".join(lines))
    return words[words.index("eval.corpus.write") + 1:]


def test_the_committed_examples_are_what_make_examples_writes(tmp_path):
    from eval.corpus.write import main

    args = _examples_command()
    assert args[args.index("--out") + 1] == "examples"
    args[args.index("--out") + 1] = str(tmp_path)
    assert main(args) == 0
    written = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    committed = sorted(p.relative_to(EXAMPLES) for p in EXAMPLES.rglob("*") if p.is_file() and p.name != "README.md")
    assert written == committed
    for rel in written:
        assert (tmp_path / rel).read_bytes() == (EXAMPLES / rel).read_bytes(), f"examples/{rel} is stale: make examples"
