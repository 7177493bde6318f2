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
