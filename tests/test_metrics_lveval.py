"""LV-Eval metrics: exact parity with the released scoring code (fixtures), and aggregation."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from eval.metrics import METRICS, score
from eval.metrics.lveval import (
    BLACKLIST_EN,
    aggregate_lveval,
    lveval_dataset,
    lveval_metric,
    lveval_reference,
)
from eval.sample import Reference

FIXTURES = Path(__file__).parent / "fixtures" / "metrics"
CASES = json.loads((FIXTURES / "lveval.json").read_text(encoding="utf-8"))["cases"]


def test_fixture_is_varied():
    datasets = {c["dataset"] for c in CASES}
    assert len(CASES) >= 300
    assert {"hotpotwikiqa_mixup", "cmrc_mixup", "factrecall_en", "factrecall_zh", "dureader_mixup"} <= datasets
    assert sum(1 for c in CASES if c.get("expected", 0) > 0) >= 100  # not just zeros
    assert any("error" in c for c in CASES)  # the crash on empty keywords is covered


def _score(case, variant="official"):
    ref = lveval_reference(case["dataset"], [case["answer"]], case["answer_keywords"], variant)
    return score(lveval_metric(case["dataset"]), case["prediction"], ref)


def test_parity_with_released_code():
    diffs = []
    for case in CASES:
        got = _score(case)["score"]
        if "error" in case:
            # The released code crashes (keywords normalise to nothing): we score 0.
            assert "ZeroDivisionError" in case["error"]
            assert got == 0.0, case
            continue
        diffs.append(abs(got - case["expected"]))
        assert got == pytest.approx(case["expected"], abs=1e-6), case
    assert max(diffs) <= 1e-6


def test_strict_variant_skips_an_empty_gate(caplog):
    case = next(c for c in CASES
                if "error" in c and c["dataset"].startswith("hotpot") and c["prediction"] == c["answer"] != "")
    with caplog.at_level(logging.WARNING):
        assert _score(case)["score"] == 0.0
    assert "normalise to nothing" in caplog.text
    assert _score(case, "strict")["score"] == pytest.approx(1.0)


def test_gate_thresholds_follow_the_code_not_the_paper():
    # English: 1 of 5 keyword tokens matched = 0.2 passes; 1 of 6 fails.
    ref = Reference(["London"], "London, England, UK, Europe, Earth", "en")
    assert score("lveval_gated_f1", "London", ref)["score"] == 1.0
    ref = Reference(["London"], "London, England, UK, Europe, Earth, Mars", "en")
    assert score("lveval_gated_f1", "London", ref)["score"] == 0.0
    # Chinese: 1 of 3 tokens (< 0.4) fails even though the F1 would be 1.
    ref = Reference(["北京"], "北京，上海，广州", "zh")
    out = score("lveval_gated_f1", "北京", ref)
    assert out["score"] == 0.0 and out["f1"] == 1.0


def test_blacklisted_keyword_tokens_do_not_count():
    assert "and" in BLACKLIST_EN and len(BLACKLIST_EN) == 38
    ref = Reference(["and"], "and", "en")
    assert score("lveval_gated_f1", "and", ref)["score"] == 0.0
    assert score("qa_f1", "and", ref)["score"] == 1.0


def test_chinese_without_keywords_gates_on_the_answer():
    ref = Reference(["他在上海读书，后来去了北京工作。"], None, "zh")
    out = score("lveval_gated_f1", "上海", ref)
    assert out["score"] == 0.0 and out["f1"] > 0


def test_dataset_names_and_registry():
    assert lveval_dataset("cmrc_mixup_16k") == "cmrc_mixup"
    assert lveval_dataset("factrecall_en_256k") == "factrecall_en"
    assert lveval_metric("dureader_mixup_64k") == "lveval_rouge_zh"
    assert {"lveval_gated_f1", "qa_f1", "lveval_rouge_zh"} <= set(METRICS)
    with pytest.raises(KeyError):
        lveval_dataset("not_a_dataset")


def test_aggregate_lveval_rounds_per_dataset_and_averages_datasets():
    records = (
        [{"task": "cmrc_mixup_16k", "score": s} for s in (1.0, 0.0, 0.5)]
        + [{"task": "factrecall_en", "length_level": "16k", "score": s} for s in (1 / 3, 1 / 3)]
        + [{"task": "cmrc_mixup_32k", "score": 0.25}]
    )
    agg = aggregate_lveval(records)
    assert agg["per_dataset"]["cmrc_mixup"] == {"16k": 50.0, "32k": 25.0}
    assert agg["per_dataset"]["factrecall_en"] == {"16k": 33.33}
    assert agg["per_level"]["16k"] == round((50.0 + 33.33) / 2, 2)
    assert agg["overall"] == pytest.approx(round((37.5 + 33.33) / 2, 2))
