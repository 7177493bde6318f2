"""A benchmark declares on its class what other modules used to look up by its name: its official aggregate
(`Benchmark.official_aggregate`) and how its prediction files are rescored (`Benchmark.rescoring`)."""

from __future__ import annotations

from pathlib import Path

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
        rescoring = benchmark_class(name).rescoring(task, options)
        assert rescoring.metric in METRICS, (name, rescoring.metric)
        assert callable(rescoring.reference)
    rescoring = benchmark_class("lveval").rescoring("cmrc_mixup_16k", options)
    ref = rescoring.reference({"answers": ["北京"], "answer_keywords": "北京"})
    assert rescoring.metric == lveval_metric("cmrc_mixup") and rescoring.fields == {"task": "cmrc_mixup_16k"}
    assert (ref.answers, ref.answer_keywords, ref.language, ref.task) == (["北京"], "北京", "zh", "cmrc_mixup")


def test_a_benchmarks_rescoring_quirks_live_on_its_class_and_the_scorer_names_no_benchmark():
    """LooGLE reads cloze answers given as a mapping, CLongEval's official variant leaves API errors out, LV-Eval
    keeps the task as given on each line: each declared by its class, so eval/score.py spells no benchmark."""
    import ast
    from argparse import Namespace

    from eval.benchmarks import BENCHMARKS

    options = Namespace(variant="official", judge=False, typo_answer_order="id,correct,typo")
    cloze = benchmark_class("loogle").rescoring("shortdep_cloze", options)
    assert cloze.as_text({"<mask-0>": "Ann"}) == '{"<mask-0>": "Ann"}'
    assert cloze.summary([{"masks": 2, "exact_match": 0.5, "partial_match": 1.0}]) == {"exact_match_micro": 50.0,
                                                                                       "partial_match_micro": 100.0}
    assert "bertscore" in benchmark_class("loogle").rescoring("shortdep_qa", options).summary([])
    api_error = "HTTP_ERROR 429"
    official = benchmark_class("clongeval").rescoring("long_story_qa", options)
    strict = benchmark_class("clongeval").rescoring("long_story_qa", Namespace(**{**vars(options),
                                                                                  "variant": "strict"}))
    assert official.excluded(api_error) == "api_error" and official.excluded("北京") is None
    assert strict.excluded(api_error) is None
    source = (Path(__file__).parents[1] / "eval" / "score.py").read_text(encoding="utf-8")
    spelled = {node.value for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Constant)}
    assert not spelled & set(BENCHMARKS.names())
