"""run.timing_repeats: a sample of a run's answers re-timed (response cache bypassed), written into their records
and summarised in metrics.json; a resumed run does not re-time them again (experiments/retime.py)."""

from __future__ import annotations

import json

import pytest

from experiments.retime import pick_evenly
from tests.conftest import compose


def _lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_timing_repeats_re_time_whole_groups_and_leave_the_answers_alone(tiny_llama, tmp_path):
    from experiments.run import run

    cfg = compose([f"generator.model={tiny_llama}", "generator.context_window=8192", "generator.threads=1",
                   "benchmark.languages=[en]", "benchmark.levels=[1k]", "benchmark.haystacks_per_level=3",
                   "benchmark.questions_per_haystack=2", "+benchmark.max_new_tokens=3", "run.timing_repeats=2",
                   "run.timing_groups=2", f"run.cache_dir={tmp_path / 'cache'}", "run.progress=false"])
    metrics = run(cfg, tmp_path / "run")
    lines = _lines(tmp_path / "run" / "records.jsonl")
    final = {r["id"]: r for r in lines}
    retimed = [r for r in final.values() if r.get("latency_repeats_s")]
    assert len(lines) == 6 + 4 and len(retimed) == 4  # two whole groups (first and last) written again
    assert {r["group"] for r in retimed} == {lines[0]["group"], lines[5]["group"]}
    for r in retimed:
        first = next(x for x in lines if x["id"] == r["id"])
        assert len(r["latency_repeats_s"]) == len(r["generation_repeats_s"]) == 2
        assert all(x > 0 for x in r["latency_repeats_s"])
        assert r["prediction"] == first["prediction"] and r["latency_s"] == first["latency_s"]
        assert r["prefix_group_size"] == 2  # the repeat answered the group together, as the run did
    assert metrics["latency_retimed"]["n"] == 4 and metrics["latency_s_p90"] >= metrics["latency_s_p50"]
    assert metrics["generation_calls"] == 6, "repeats bypass the response cache, which counts only the run's calls"
    run(cfg, tmp_path / "run")  # resumed: everything recorded and re-timed, nothing appended
    assert len(_lines(tmp_path / "run" / "records.jsonl")) == 10


@pytest.mark.parametrize("k, expected", [(1, [0]), (2, [0, 9]), (4, [0, 3, 6, 9]), (20, list(range(10)))])
def test_groups_are_picked_evenly(k, expected):
    assert pick_evenly(list(range(10)), k) == expected
