"""Runs are read one way (experiments/report/loading.py `load_runs`): found, deduplicated, sorted, disambiguated
and with pairwise judgments applied, and every reader of run folders goes through it."""

from __future__ import annotations

import ast
import json
import shutil

from experiments.report.loading import load_runs, report_order
from experiments.simulate.sweeps import known_truth_sweep
from tests.conftest import ROOT

WHERE_RUNS_ARE_READ = {"experiments/report/runs.py", "experiments/report/loading.py"}


def test_load_runs_dedupes_sets_aside_sorts_and_disambiguates(tmp_path):
    sweep = known_truth_sweep(tmp_path / "sweep", 0.1, n_rag_configs=3, n_docs=4, questions_per_doc=2, seed=3)
    folders = sorted(p.parent for p in sweep.rglob("metrics.json"))
    shutil.copytree(folders[1], tmp_path / "copy")  # the same config point again, e.g. a second sweep's copy
    (tmp_path / "copy" / "records.jsonl").write_text(
        "\n".join((tmp_path / "copy" / "records.jsonl").read_text().splitlines()[:1]) + "\n")  # and interrupted
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "metrics.json").write_text(json.dumps({"knobs": {"arm": "rag", "benchmark": "sim"},
                                                   "config_hash": "no-records"}))
    loaded = load_runs([sweep, tmp_path / "copy", bare])
    assert len(loaded.runs) == len(folders) and loaded.missing == [bare.resolve()]
    assert list(loaded.duplicates.values()) == [[(tmp_path / "copy").resolve()]]  # the finished copy is kept
    assert [report_order(r) for r in loaded.runs] == sorted(report_order(r) for r in loaded.runs)
    assert len({(r.scope, r.label) for r in loaded.runs}) == len(loaded.runs)
    assert loaded.judged == []


def test_no_module_reads_run_folders_but_through_load_runs():
    readers = []
    for top in ("eval", "llm", "rag", "longctx", "testset", "experiments", "perf", "testsupport"):
        for path in sorted((ROOT / top).rglob("*.py")):
            where = str(path.relative_to(ROOT))
            called = {getattr(n.func, "attr", getattr(n.func, "id", None))
                      for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if isinstance(n, ast.Call)}
            if where not in WHERE_RUNS_ARE_READ and called & {"find_runs", "dedupe"}:
                readers.append(where)
            if where == "experiments/report/page/build.py":
                assert "load_runs" in called, "the report reads its runs through load_runs"
    assert not readers, f"read run folders through experiments.report.loading.load_runs: {readers}"
