"""A benchmark declares on its class what other modules used to look up by its name: its official aggregate
(`Benchmark.official_aggregate`) and how its prediction files are rescored (`Benchmark.rescoring`)."""

from __future__ import annotations

import pytest

from eval.benchmarks import benchmark_class, official_aggregate

LVEVAL_ROWS = [{"task": task, "length_level": level, "score": score, "scores": {}}
               for task, scores in (("hotpotwikiqa_mixup", (0.2, 0.2, 0.2)), ("factrecall_en", (1.0,)))
               for level in ("16k", "32k") for score in scores]


def test_lveval_declares_the_leaderboard_overall():
    # unweighted over datasets: (20 + 100) / 2, although hotpotwikiqa has three times the samples
    assert benchmark_class("lveval").official_aggregate(LVEVAL_ROWS)["value"] == pytest.approx(60.0)
    assert official_aggregate("lveval", LVEVAL_ROWS) == benchmark_class("lveval").official_aggregate(LVEVAL_ROWS)


@pytest.mark.parametrize("name", ["synthetic", "loong", "corpus", "a-simulated-benchmark"])
def test_a_benchmark_that_declares_nothing_has_only_the_sample_mean(name):
    assert official_aggregate(name, LVEVAL_ROWS) is None


def test_rows_without_a_score_do_not_count():
    assert official_aggregate("lveval", [{**r, "score": None} for r in LVEVAL_ROWS]) is None


def test_each_rescorable_benchmark_declares_a_registered_metric_and_its_reference():
    from argparse import Namespace

    from eval.metrics import METRICS
    from eval.metrics.lveval import lveval_metric
    from eval.score import rescorable

    options = Namespace(variant="official", judge=False, typo_answer_order="id,correct,typo")
    tasks = {"synthetic": "single_hop", "lveval": "cmrc_mixup_16k", "loogle": "shortdep_qa",
             "clongeval": "long_story_qa", "loong": "spotlight_locating"}
    assert set(rescorable()) == set(tasks)  # corpus and lara declare none: their files are not rescored
    for name, task in tasks.items():
        metric, reference = benchmark_class(name).rescoring(task, options)
        assert metric in METRICS, (name, metric)
        assert callable(reference)
    metric, reference = benchmark_class("lveval").rescoring("cmrc_mixup_16k", options)
    ref = reference({"answers": ["北京"], "answer_keywords": "北京"})
    assert metric == lveval_metric("cmrc_mixup")
    assert (ref.answers, ref.answer_keywords, ref.language, ref.task) == (["北京"], "北京", "zh", "cmrc_mixup")
