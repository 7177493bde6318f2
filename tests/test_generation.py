"""The transformers backend on the real SmolLM2: prefix reuse and the response cache."""

import pytest

from eval.benchmarks.synthetic import make_haystack
from llm.cache import CachedGenerator, ResponseCache
from llm.prompt import Prompt
from longctx.arm import LongContextArm, LongContextConfig


@pytest.mark.slow
def test_prefix_reuse_gives_identical_greedy_answers(generator):
    samples = make_haystack(seed=5, language="en", tokens=300, n_questions=3)
    prompts = [LongContextArm(generator, LongContextConfig()).build(s) for s in samples]
    assert len({p.user[: p.prefix_chars] for p in prompts}) == 1 and prompts[0].prefix_chars > 500
    shared = generator.generate(prompts)
    solo = generator.generate([Prompt(p.user, p.system, p.max_new_tokens) for p in prompts])
    assert [g.text for g in shared] == [g.text for g in solo]
    assert [g.prompt_tokens for g in shared] == [g.prompt_tokens for g in solo]
    assert all(g.completion_tokens >= 1 for g in shared)


@pytest.mark.slow
def test_response_cache_serves_reruns(generator, tmp_path):
    cached = CachedGenerator(generator, ResponseCache(tmp_path / "r.sqlite"))
    p = Prompt("Say the word 'blue' and nothing else.", max_new_tokens=4)
    first = cached.generate([p])[0]
    again = CachedGenerator(generator, ResponseCache(tmp_path / "r.sqlite")).generate([p])[0]
    assert cached.calls == 1 and again.cached and again.text == first.text
    other = cached.generate([Prompt(p.user, max_new_tokens=5)])[0]
    assert not other.cached and cached.calls == 2, "max_new_tokens is part of the cache key"
