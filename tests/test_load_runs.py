"""Runs are read one way (experiments/report/loading.py `load_runs`): found, deduplicated, sorted, disambiguated
and with pairwise judgments applied, and every reader of run folders goes through it."""

from __future__ import annotations

import ast
import json
import shutil

from experiments.report.loading import load_runs, report_order
from experiments.simulate.sweeps import known_truth_sweep
from tests.conftest import ROOT


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


def test_the_report_reads_its_runs_through_load_runs():
    """No other module reads run folders itself: tests/house_rules.py's `run folder read`, checked with the rest of
    the house's rules in tests/test_layers.py, sees every package, perf scripts included."""
    build = ROOT / "experiments" / "report" / "page" / "build.py"
    called = {getattr(n.func, "attr", getattr(n.func, "id", None))
              for n in ast.walk(ast.parse(build.read_text(encoding="utf-8"))) if isinstance(n, ast.Call)}
    assert "load_runs" in called, "the report reads its runs through load_runs"
