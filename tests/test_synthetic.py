from eval.benchmarks import load_benchmark
from eval.benchmarks.common import approx_tokens
from eval.benchmarks.synthetic import SyntheticConfig, generate, make_haystack, parse_level


def test_deterministic_per_seed():
    a = generate(SyntheticConfig(seed=3, levels=("1k",)))
    b = generate(SyntheticConfig(seed=3, levels=("1k",)))
    c = generate(SyntheticConfig(seed=4, levels=("1k",)))
    assert ([(s.id, s.context, s.question, s.answers) for s in a]
            == [(s.id, s.context, s.question, s.answers) for s in b])
    assert [s.context for s in a] != [s.context for s in c]


def test_gold_spans_point_at_answer_and_distractors_do_not():
    samples = generate(SyntheticConfig(seed=1, levels=("2k",), questions_per_haystack=8, confusing_share=1.0))
    assert {s.language for s in samples} == {"en", "zh"}
    assert {s.task for s in samples} == {"single_hop", "two_hop"}
    for s in samples:
        gold = [s.context[e.start:e.end] for e in s.evidence]
        assert gold and all(g.strip() == g and g for g in gold)
        assert any(s.answers[0] in g for g in gold), (s.id, gold, s.answers)
        if s.task == "two_hop":
            assert len(s.evidence) == 2
        assert s.distractors, "confusing_share=1.0 gives every question a confusing fact"
        for d in s.distractors:
            assert s.answers[0] not in s.context[d.start:d.end]


def test_questions_share_a_haystack_with_varied_depths():
    samples = make_haystack(seed=0, language="en", tokens=3000, n_questions=5)
    assert len({s.group for s in samples}) == 1 and len({s.context for s in samples}) == 1
    depths = sorted(s.metadata["depth"] for s in samples)
    assert depths[0] < 0.3 and depths[-1] > 0.7
    # the question's subject is named once in the text per fact (no accidental second answer)
    for s in samples:
        subject_fact = s.context[s.evidence[0].start:s.evidence[0].end]
        assert s.context.count(subject_fact) == 1


def test_length_levels_and_long_contexts():
    for lang in ("en", "zh"):
        s = make_haystack(seed=0, language=lang, tokens=128_000, n_questions=4)[0]
        n = approx_tokens(s.context)
        assert 128_000 <= n < 130_000
        assert s.length_level == "128k"
    small = make_haystack(seed=0, language="en", tokens=1000, n_questions=2)[0]
    assert 1000 <= approx_tokens(small.context) < 1200
    assert parse_level("4k") == 4000 and parse_level(1500) == 1500


def test_loader_selection_and_errors():
    res = load_benchmark({"name": "synthetic", "levels": ["1k"], "languages": ["en"], "tasks": ["two_hop"],
                          "questions_per_haystack": 4, "limit": None})
    assert res.samples and all(s.task == "two_hop" for s in res.samples)
    import pytest

    with pytest.raises(ValueError, match="available"):
        load_benchmark({"name": "synthetic", "levels": ["1k"], "tasks": ["three_hop"]})
    with pytest.raises(ValueError, match="allowed"):
        load_benchmark({"name": "synthetic", "levels": ["1k"], "languages": ["fr"]})
    with pytest.raises(ValueError, match="available: .*synthetic"):
        load_benchmark({"name": "nope"})
