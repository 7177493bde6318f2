"""Protocol fidelity to the benchmarks' released code (issue 15, items 7-11)."""

from __future__ import annotations

import os

import pytest

from eval.evidence import Region, present_fraction, recall_at
from eval.sample import Span


# ---------------------------------------------------------------- 11: a repeated answer is one piece of evidence

def test_repeated_answer_is_one_any_of_evidence_group():
    from eval.benchmarks.lveval import answer_evidence

    needle = "The person who discovered the Velmora comet was Dr. Ansel Quirke."
    filler = "Nothing of note happened in the valley that year. " * 20
    context = filler + needle + "\n" + filler + needle + "\n" + filler
    spans, note = answer_evidence(context, "Who discovered the Velmora comet?", "Ansel Quirke", "en",
                                  needle=True, max_chars=600, exclude=[])
    assert note["answer_occurrences"] == 2 and len(spans) == 2
    first, second = spans
    # only the first occurrence survives (a cut, or a retrieved chunk): the evidence is there
    assert present_fraction(spans, [Region(first.start, first.end)], 0.6) == 1.0
    assert present_fraction(spans, [Region(second.start, second.end)], 0.6) == 1.0
    assert present_fraction(spans, [Region(0, 10)], 0.6) == 0.0
    assert recall_at(spans, [Region(0, 10), Region(second.start, second.end)], [1, 2], 0.6) == {"1": 0.0, "2": 1.0}


def test_any_of_groups_count_once_next_to_plain_spans():
    spans = [Span(0, 10, alt="a"), Span(50, 60, alt="a"), Span(100, 110)]
    assert present_fraction(spans, [Region(50, 60)], 0.6) == 0.5
    assert present_fraction(spans, [Region(50, 60), Region(100, 110)], 0.6) == 1.0
    assert present_fraction(spans, [Region(100, 110)], 0.6) == 0.5
    assert present_fraction(spans, [], 0.6) == 0.0
