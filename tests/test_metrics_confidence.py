"""Bootstrap intervals and the paired bootstrap; the perf script's contract."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from eval.metrics.confidence import bootstrap_ci, paired_bootstrap

ROOT = Path(__file__).resolve().parents[1]


def test_bootstrap_ci_contains_the_mean_is_seeded_and_narrows_with_n():
    rng = random.Random(0)
    small = [rng.random() for _ in range(50)]
    large = [rng.random() for _ in range(2000)]
    lo, hi = bootstrap_ci(small)
    assert lo < sum(small) / len(small) < hi
    assert bootstrap_ci(small, seed=3) == bootstrap_ci(small, seed=3)
    assert bootstrap_ci(small, seed=3) != bootstrap_ci(small, seed=4)
    lo2, hi2 = bootstrap_ci(large)
    assert hi2 - lo2 < (hi - lo) / 3
    # Uniform(0,1) mean over 2000 samples: the standard error is ~0.0065, so the 95% interval is ~0.025 wide.
    assert 0.015 < hi2 - lo2 < 0.04
    assert bootstrap_ci([0.5] * 10) == (0.5, 0.5)
    with pytest.raises(ValueError):
        bootstrap_ci([])


def test_paired_bootstrap_detects_a_consistent_difference_that_unpaired_noise_hides():
    rng = random.Random(1)
    difficulty = [rng.random() for _ in range(300)]  # shared per-sample difficulty
    a = [min(1.0, d + 0.05) for d in difficulty]
    b = difficulty
    res = paired_bootstrap(a, b)
    assert res.diff == pytest.approx(sum(a) / 300 - sum(b) / 300)
    assert 0 < res.ci95[0] <= res.diff <= res.ci95[1]
    assert res.p_value < 0.01 and res.prob_a_better > 0.99
    # The unpaired intervals overlap: only pairing shows the difference.
    assert bootstrap_ci(a)[0] < bootstrap_ci(b)[1]
    same = paired_bootstrap(b, b)
    assert same.diff == 0 and same.p_value == 1.0 and same.ci95 == (0.0, 0.0)
    noise = paired_bootstrap([rng.random() for _ in range(100)], [rng.random() for _ in range(100)])
    assert noise.p_value > 0.05 or abs(noise.diff) > 0.05
    with pytest.raises(ValueError):
        paired_bootstrap([1.0, 0.0], [1.0])


def test_metric_speed_script_prints_seconds():
    res = subprocess.run([sys.executable, "perf/metric_speed.py", "--n", "300"], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    figures = json.loads(res.stdout.strip().splitlines()[-1])
    assert figures["samples"] == 300 and figures["seconds"] > 0
    assert "dureader_mixup_seconds" in figures and 0 < figures["mean_score"] < 100
