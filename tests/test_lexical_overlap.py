"""Lexical overlap of a question with its evidence (eval/lexical_overlap.py) and its buckets."""

from __future__ import annotations

import pytest

from eval.lexical_overlap import BUCKETS, content_words, lexical_overlap, overlap_bucket


def test_content_words_leave_out_stop_and_question_words():
    assert content_words("Who designed the Elbe bridge at Dornstadt?", "en") == ["designed", "elbe", "bridge",
                                                                                 "dornstadt"]
    assert content_words("What is the name of the bridge, and the bridge's age?", "en") == ["bridge", "bridges", "age"]
    words = content_words("谁设计了易北河大桥？", "zh")
    assert "易北河" in words and "谁" not in words and "？" not in words


def test_english_overlap_is_the_share_of_content_words_in_the_evidence():
    question = "Who designed the Elbe bridge at Dornstadt?"  # designed, elbe, bridge, dornstadt
    assert lexical_overlap(question, ["It was designed by Karl Weber."], "en") == 0.25
    assert lexical_overlap(question, ["The Elbe bridge at Dornstadt was designed by Karl Weber."], "en") == 1.0
    assert lexical_overlap(question, ["Karl Weber drew it."], "en") == 0.0
    # several quotes: a word counts when any of them has it; case and punctuation do not matter
    assert lexical_overlap(question, ["ELBE!", "a bridge"], "en") == 0.5
    # whole words only: "design" is not "designed"
    assert lexical_overlap("Who designed it?", ["the design"], "en") == 0.0


def test_chinese_words_are_found_as_substrings_of_the_evidence():
    question = "谁设计了易北河大桥？"
    full = lexical_overlap(question, ["易北河大桥由卡尔·韦伯设计。"], "zh")
    assert full == 1.0
    assert lexical_overlap(question, ["它由卡尔·韦伯设计。"], "zh") < full
    assert lexical_overlap(question, ["完全无关的句子。"], "zh") == 0.0


def test_a_question_of_stop_words_only_or_no_evidence_has_no_overlap():
    assert lexical_overlap("What is it?", ["What is it? It is what it is."], "en") == 0.0
    assert lexical_overlap("Who designed the bridge?", [], "en") == 0.0
    assert lexical_overlap("Who designed the bridge?", [""], "en") == 0.0


@pytest.mark.parametrize("value, bucket", [(0.0, "low"), (0.29, "low"), (0.3, "mid"), (0.59, "mid"), (0.6, "high"),
                                           (1.0, "high")])
def test_buckets_have_fixed_edges(value, bucket):
    assert overlap_bucket(value) == bucket and bucket in BUCKETS
