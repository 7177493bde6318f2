"""The synthetic benchmark's primary metric: every reference answer contained in the prediction."""

from eval import metrics
from eval.sample import Reference


def _score(pred, answers, language="en", name="contains_all"):
    return metrics.score(name, pred, Reference(answers=answers, language=language))


def test_synthetic_contains_all_sentence_answer_counts_as_right():
    assert _score("The main export of Gritran is Dried Figs.", ["dried figs"])["score"] == 1.0


def test_synthetic_contains_all_normalises_punctuation_and_articles():
    assert _score("It is the bone-combs, they say", ["Bone combs"])["score"] == 0.0  # '-' glues the words
    assert _score("It is (the) bone combs!", ["the bone combs"])["score"] == 1.0


def test_synthetic_contains_all_whole_words_only_in_english():
    """A confusing one-letter-different name must not count as the answer."""
    assert _score("The mayor is Tamira Vonk.", ["Tamir"])["score"] == 0.0
    assert _score("The mayor is Tamir Vonk.", ["Tamir"])["score"] == 1.0


def test_synthetic_contains_all_chinese_without_word_splitting():
    assert _score("格兰特镇的主要出口是干无花果。", ["干无花果"], "zh")["score"] == 1.0
    assert _score("主要出口是 干 无花果", ["干无花果"], "zh")["score"] == 1.0  # whitespace removed
    assert _score("主要出口是羊毛地毯。", ["干无花果"], "zh")["score"] == 0.0


def test_synthetic_contains_all_needs_every_answer():
    values = _score("bone combs and cedar barrels", ["bone combs", "woollen rugs"])
    assert values["score"] == 0.0 and values["contains_share"] == 0.5
    assert _score("woollen rugs, bone combs", ["bone combs", "woollen rugs"])["score"] == 1.0


def test_synthetic_contains_all_failing_and_empty_cases():
    assert _score("The main export is cedar barrels.", ["woollen rugs"])["score"] == 0.0
    assert _score("", ["woollen rugs"])["score"] == 0.0
    assert _score("anything", [""])["score"] == 0.0


def test_synthetic_primary_metric_keeps_f1_secondary():
    from eval.benchmarks.synthetic import make_haystack

    sample = make_haystack(0, "en", 300, 2)[0]
    assert sample.metric == "synthetic_contains_all"
    answer = sample.answers[0]
    values = metrics.score(sample.metric, f"The answer is {answer}.", sample.reference())
    assert values["score"] == 1.0
    assert 0 < values["f1"] < 1 and "f1_gated" in values
