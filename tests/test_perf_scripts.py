"""Perf scripts keep their contract: they run and end with one JSON line of figures."""

import json
import subprocess
import sys

from tests.conftest import ROOT


def test_synthetic_speed_prints_json_figures():
    res = subprocess.run([sys.executable, "perf/synthetic_speed.py"], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    figures = json.loads(res.stdout.strip().splitlines()[-1])
    assert figures["seconds"] > 0 and "zh_256k_seconds" in figures


def test_loader_speed_prints_json_figures():
    import pytest

    from tests.conftest import SHARED_DATA

    if not (SHARED_DATA / "loong" / "loong.jsonl").exists():
        pytest.skip("../shared/data/loong is absent")
    res = subprocess.run([sys.executable, "perf/loader_speed.py"], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    figures = json.loads(res.stdout.strip().splitlines()[-1])
    assert 0 < figures["seconds"] < 60
    print(figures)


def test_report_speed_prints_json_figures():
    res = subprocess.run([sys.executable, "perf/report_speed.py"], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    figures = json.loads(res.stdout.strip().splitlines()[-1])
    assert figures["seconds"] > 0


def test_corpus_parse_prints_json_figures(tmp_path):
    def run():
        res = subprocess.run([sys.executable, "perf/corpus_parse.py", "--files", "10", "--mb", "0.05", "--dir",
                              str(tmp_path / "docs")], cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr
        return json.loads(res.stdout.strip().splitlines()[-1])

    figures = run()
    assert figures["build_seconds"] > 0 and run()["build_seconds"] == 0  # the folder is reused
    assert figures["documents"] == 10 and figures["bad_files"] == 0
    assert figures["first_misses"] == 10 and figures["cached_hits"] == 10
    assert figures["first_seconds"] > 0 and figures["cached_seconds"] <= figures["first_seconds"]  # rounded: may be 0.0
    assert sorted(p.suffix for p in (tmp_path / "docs").rglob("doc0*")) == sorted([".docx", ".html", ".md", ".pdf",
                                                                                  ".txt"] * 2)


def test_question_generation_prints_json_figures():
    res = subprocess.run([sys.executable, "perf/question_generation.py", "--n", "1", "--max-new-tokens", "8", "--set",
                          "threads=1"],
                         cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr
    figures = json.loads(res.stdout.strip().splitlines()[-1])
    assert figures["items"] == 1 and figures["generator"] == "bundled:smollm2" and figures["seconds"] > 0
    dropped = sum(v for k, v in figures.items() if k.startswith("share_dropped_"))
    assert abs(figures["share_kept"] + dropped - 1) < 1e-9
