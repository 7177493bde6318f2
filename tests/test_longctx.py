import pytest

from eval.benchmarks.synthetic import make_haystack
from llm.prompt import PromptTooLong
from longctx.arm import LongContextArm, LongContextConfig
from longctx.truncation import apply, keep_regions


def test_middle_keeps_head_and_tail_with_real_tokenizer(tokenizer):
    text = "HEADMARK " + " ".join(f"word{i}" for i in range(3000)) + " TAILMARK"
    offsets = tokenizer.offsets(text)
    regions = keep_regions(offsets, len(text), 200, "middle")
    kept = apply(text, regions)
    assert kept.startswith("HEADMARK") and kept.endswith("TAILMARK")
    assert "word1500 " not in kept
    assert tokenizer.count(kept) <= 202  # two cut points may re-merge at most a token each
    assert keep_regions(offsets, len(text), len(offsets), "middle") == [(0, len(text))]
    head = apply(text, keep_regions(offsets, len(text), 50, "head"))
    tail = apply(text, keep_regions(offsets, len(text), 50, "tail"))
    assert head.startswith("HEADMARK") and "TAILMARK" not in head
    assert tail.endswith("TAILMARK") and "HEADMARK" not in tail
    with pytest.raises(ValueError, match="allowed: middle, head, tail"):
        keep_regions(offsets, len(text), 50, "sideways")


class SmallWindow:
    """The real generator seen through a smaller window (as a short-window model would be)."""

    def __init__(self, gen, window):
        self.gen, self.context_window, self.tokenizer, self.model_id = gen, window, gen.tokenizer, gen.model_id

    def prompt_tokens(self, prompt):
        return self.gen.prompt_tokens(prompt)


def test_arm_truncates_to_window_and_reports_retained_evidence(generator):
    samples = make_haystack(seed=0, language="en", tokens=4000, n_questions=4)
    arm = LongContextArm(SmallWindow(generator, 2048), LongContextConfig())
    retained = []
    for s in samples:
        p = arm.build(s)
        assert generator.prompt_tokens(p) + p.max_new_tokens <= 2048
        assert p.meta["truncated"] and p.user.endswith(f"Question: {s.question}\nAnswer:")
        for a, b in p.meta["kept_spans"]:
            assert s.context[a:b] in p.user
        gold_in_prompt = all(s.context[e.start:e.end] in p.user for e in s.evidence)
        assert (p.meta["evidence_retained"] == 1.0) == gold_in_prompt
        retained.append(p.meta["evidence_retained"])
        assert p.user[: p.prefix_chars].endswith(s.context[p.meta["kept_spans"][-1][0]: p.meta["kept_spans"][-1][1]])
    assert min(retained) < 1.0, "needles spread over the haystack: the middle cut must lose some"
    full = LongContextArm(generator, LongContextConfig()).build(samples[0])
    assert not full.meta["truncated"] and full.meta["evidence_retained"] == 1.0


def test_question_that_cannot_fit_is_refused(generator):
    s = make_haystack(seed=0, language="en", tokens=500, n_questions=1)[0]
    with pytest.raises(PromptTooLong, match="does not fit"):
        LongContextArm(SmallWindow(generator, 60), LongContextConfig()).build(s)
