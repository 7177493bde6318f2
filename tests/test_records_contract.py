"""The record format between the runner and the report: the real runner writes a tiny sweep, the
report reads it, and both are checked against the schema in experiments/records.py.

A change to what the runner writes, or to what the report reads, that the schema does not
document fails here (the report's other tests only see hand-built records)."""

from __future__ import annotations

import ast
import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from experiments import records as schema
from tests.conftest import ROOT

TINY = ["benchmark=synthetic", "benchmark.languages=[en]", "benchmark.levels=[400]",
        "benchmark.questions_per_haystack=2"]
READERS = sorted((ROOT / "experiments" / "report").rglob("*.py")) + [ROOT / "experiments" / "run_metrics.py"]
RECORD_NAMES = {"r", "rec", "x", "record", "l"}  # what the report's modules call a record


@pytest.fixture(scope="module")
def sweep(tmp_path_factory, tiny_conf) -> Path:
    """arm=longctx,rag (bm25) x generator=none (retrieval only),smollm2 config: four runs in one process. The
    generators are conftest's `tiny_none` and `tiny_llm` (generator=none and generator=smollm2 with the tiny
    random-weight Llama's folder: SmolLM2's tokenizer, so the same prompts and token counts): the contract is
    what the runner writes, not what the answers say."""
    tmp = tmp_path_factory.mktemp("contract")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    res = subprocess.run([sys.executable, "-m", "experiments.run", "-m", tiny_conf, "arm=longctx,rag",
                          "retriever=bm25", "generator=tiny_none,tiny_llm", *TINY, "rag.chunk_size=64", "rag.top_k=2",
                          f"hydra.sweep.dir={tmp / 'sweep'}", f"run.cache_dir={tmp / 'cache'}", "run.progress=false"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return tmp / "sweep"


def _runner_records(sweep: Path) -> list[dict]:
    out = []
    for path in sorted(sweep.rglob("records.jsonl")):
        out += list(schema.read_records(path).values())
    return out


def _schema_names(node: ast.AST) -> set[str]:
    """The names in a tuple of record keys the schema defines (`schema.RECALL_KEYS`), else none."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "schema":
        value = getattr(schema, node.attr, None)
        if isinstance(value, tuple) and all(isinstance(v, str) for v in value):
            return set(value)
    return set()


def report_read_keys() -> dict[str, set[str]]:
    """Record keys the report's modules read: `rec.get("k")`, `rec["k"]`, `run.mean_of("k")`, and the
    same with a loop variable over a tuple of names (`for key in ("a", "b"): rec.get(key)`)."""
    keys: dict[str, set[str]] = {}
    for path in READERS:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        reads = [(n, {}) for n in ast.walk(tree)]  # every node, with no loop variable bound
        for loop in ast.walk(tree):  # ... and the nodes inside a loop over a tuple of names, with it bound
            if (isinstance(loop, ast.For) and isinstance(loop.target, ast.Name)
                    and isinstance(loop.iter, (ast.Tuple, ast.List))):
                names = {e.value for e in loop.iter.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
                names |= {k for e in loop.iter.elts if isinstance(e, ast.Starred) for k in _schema_names(e.value)}
                reads += [(n, {loop.target.id: names}) for stmt in loop.body for n in ast.walk(stmt)]
            elif isinstance(loop, ast.For) and isinstance(loop.target, ast.Name) and _schema_names(loop.iter):
                reads += [(n, {loop.target.id: _schema_names(loop.iter)}) for stmt in loop.body for n in ast.walk(stmt)]
        for n, bound in reads:
            arg = None
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.args:
                on_record = isinstance(n.func.value, ast.Name) and n.func.value.id in RECORD_NAMES
                if (n.func.attr == "get" and on_record) or n.func.attr == "mean_of":
                    arg = n.args[0]
            elif isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id in RECORD_NAMES:
                arg = n.slice
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                found = {arg.value}
            else:
                found = bound.get(arg.id, set()) if isinstance(arg, ast.Name) else set()
            for k in found:
                keys.setdefault(k, set()).add(path.name)
    return keys


def test_every_key_the_report_reads_is_documented_in_the_schema():
    keys = report_read_keys()
    assert {"id", "score", "prompt_tokens", "latency_s", "evidence_recall", "evidence_retained", "doc_recall",
            "docs_retained"} <= set(keys)
    undocumented = {k: sorted(v) for k, v in keys.items() if k not in schema.RECORD_KEYS}
    assert not undocumented, ("record keys read by the report but missing from experiments.records.Record: "
                              f"{undocumented}")


def test_schema_sets_mean_what_they_say():
    assert set(schema.STATUSES) == schema.FINAL | {schema.FAILED}
    assert schema.SCORED == {schema.OK, schema.SKIPPED} and schema.ANSWERED == {schema.OK}
    assert schema.WITH_CONTEXT == {schema.OK, schema.RETRIEVED} and schema.FAILED not in schema.FINAL


def test_real_runner_records_match_the_schema_and_feed_the_report(sweep, tmp_path):
    from experiments.report.page.build import build_report

    runs = sorted(p.parent for p in sweep.rglob("metrics.json"))
    assert len(runs) == 4
    records = _runner_records(sweep)
    assert len(records) == 8
    for r in records:
        assert set(r) <= schema.RECORD_KEYS, ("runner wrote keys the schema does not document: "
                                              f"{set(r) - schema.RECORD_KEYS}")
        assert r["status"] in (schema.OK, schema.RETRIEVED) and r["config_hash"] and r["arm"] in ("longctx", "rag")
    statuses = {r["status"] for r in records}
    assert statuses == {schema.OK, schema.RETRIEVED}
    for r in records:
        if schema.is_answered(r):
            assert 0.0 <= r["score"] <= 1.0 and r["prompt_tokens"] > 50 and r["latency_s"] > 0
        else:  # retrieval only: the prompt a generator would get, counted, and its answer's token limit
            assert r["prompt_tokens"] > 50 and r["max_new_tokens"] > 0 and "completion_tokens" not in r
        key = "evidence_recall" if r["arm"] == "rag" else "evidence_retained"
        assert r[key] is not None
    # what the report reads must be written by the runner (selfroute's route, skip/fail reasons, the pairwise
    # path's `scoring` aside: tests/test_reference_free.py runs that one; and benchmark=corpus's
    # `evidence_pages` and `lexical_overlap`: tests/test_overlap_report.py checks base_record writes them)
    written = set().union(*(set(r) for r in records))
    missing = set(report_read_keys()) - written - {"route", "reason", "scoring", "evidence_pages", "lexical_overlap"}
    assert not missing, f"the report reads keys the runner never wrote: {sorted(missing)}"

    files = build_report([str(sweep)], tmp_path / "out")
    verdict = list(csv.DictReader(files["verdict.csv"].open(encoding="utf-8")))
    assert len(verdict) >= 1
    row = verdict[0]  # the retrieval-only runs have no score: the verdict compares the two that answered
    assert row["longctx_config"].startswith("longctx") and row["rag_config"] == "rag bm25 c64 k2", row
    assert int(row["n_shared"]) == 2 and row["diff_rag_minus_longctx"] not in ("", None)
    summary = {(r["arm"], r["generator"]): r for r in csv.DictReader(files["configs.csv"].open(encoding="utf-8"))}
    assert len(summary) == 4, sorted(summary)
    for arm in ("longctx", "rag"):
        only, answered = summary[(arm, "none")], next(v for (a, g), v in summary.items() if a == arm and g != "none")
        assert only["retrieved"] == "2" and only["ok"] == "0" and only["score"] == "", only
        assert answered["ok"] == "2" and answered["failed"] == "0" and float(answered["prompt_tokens_mean"]) > 50
    assert summary[("rag", "none")]["recall@1"] != "" and summary[("longctx", "none")]["evidence_retained"] != ""

    # the one reader serves the runner's resume too: a torn tail is ignored, and cut off with repair
    path = next(p for p in sorted(sweep.rglob("records.jsonl")))
    before = path.read_bytes()
    path.write_bytes(before + b'{"id": "torn", "sta')
    assert set(schema.read_records(path)) == set(schema.read_records(path, repair=False))
    assert "torn" not in schema.read_records(path) and path.read_bytes().endswith(b'"sta')
    assert set(schema.RecordStore(path).load()) == {r["id"] for r in schema.read_records(path).values()}
    assert path.read_bytes() == before


def test_every_key_the_docs_list_is_in_the_schema():
    import re

    text = (ROOT / "docs" / "sweeps.md").read_text(encoding="utf-8")  # "What a run writes"
    section = text[text.index("- `records.jsonl`"):text.index("- `metrics.json`")]
    named = set(re.findall(r"`([a-z_0-9]+)`", section)) - set(schema.STATUSES)
    assert {"id", "status", "evidence_recall", "kept_spans"} <= named
    assert named <= schema.RECORD_KEYS, sorted(named - schema.RECORD_KEYS)
