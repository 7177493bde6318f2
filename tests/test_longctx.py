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
    with pytest.raises(ValueError, match="allowed: middle, head, tail, drop_documents"):
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


def _multi_document_sample(n_docs=6, words=150):
    from dataclasses import replace

    from eval.sample import Document, Span

    base = make_haystack(seed=1, language="en", tokens=500, n_questions=1)[0]
    parts, docs, pos = [], [], 0
    for i in range(n_docs):
        text = f"Document {i}. " + " ".join(f"fact{i}_{j}" for j in range(words)) + "\n\n"
        docs.append(Document(f"doc{i}", pos, pos + len(text) - 2, title=f"Document {i}"))
        parts.append(text)
        pos += len(text)
    context = "".join(parts)
    return replace(base, context=context, documents=docs, evidence=[Span(doc_id=d.doc_id) for d in docs],
                   distractors=[], template=replace(base.template, truncation="drop_documents"))


def test_drop_documents_keeps_whole_documents_only(tokenizer):
    s = _multi_document_sample()
    offsets = tokenizer.offsets(s.context)
    spans = [(d.start, d.end) for d in s.documents]
    budget = len(offsets) // 2
    regions = keep_regions(offsets, len(s.context), budget, "drop_documents", spans)
    kept = apply(s.context, regions)
    whole = [d for d in s.documents if s.context[d.start:d.end] in kept]
    assert 1 <= len(whole) < len(s.documents)
    for d in s.documents:  # every document is there entirely or not at all
        text = s.context[d.start:d.end]
        assert text in kept or text[:40] not in kept
    assert tokenizer.count(kept) <= budget + len(regions)
    # one document alone over budget: cut like head rather than send nothing
    assert (keep_regions(offsets, len(s.context), 5, "drop_documents", spans)
            == keep_regions(offsets, len(s.context), 5, "head"))


def test_drop_documents_skips_a_long_document_and_keeps_later_short_ones(tokenizer):
    from eval.sample import Document

    texts = ["Short one. " * 10, "Very long. " * 200, "Short two. " * 10]
    context, docs, pos = "", [], 0
    for i, t in enumerate(texts):
        docs.append(Document(f"d{i}", pos, pos + len(t)))
        context += t + "\n\n"
        pos = len(context)
    offsets = tokenizer.offsets(context)
    kept = apply(context, keep_regions(offsets, len(context), 120, "drop_documents", [(d.start, d.end) for d in docs]))
    assert texts[0] in kept and texts[2] in kept and "Very long." not in kept


def test_arm_drops_documents_and_reports_document_evidence(generator):
    s = _multi_document_sample()
    arm = LongContextArm(SmallWindow(generator, 1100), LongContextConfig())
    p = arm.build(s)
    assert p.meta["truncated"]
    present = [d for d in s.documents if s.context[d.start:d.end] in p.user]
    assert 0 < len(present) < len(s.documents)
    assert p.meta["docs_retained"] == pytest.approx(len(present) / len(s.documents))
    assert p.meta["evidence_retained"] is None  # the evidence is whole documents: no span-level figure


def test_budget_matched_long_context_caps_the_context(generator):
    s = make_haystack(seed=0, language="en", tokens=2000, n_questions=1)[0]
    p = LongContextArm(generator, LongContextConfig(budget_tokens=300)).build(s)
    assert p.meta["truncated"] and p.meta["context_tokens"] == 300
    assert generator.tokenizer.count("".join(s.context[a:b] for a, b in p.meta["kept_spans"])) <= 302
    with pytest.raises(ValueError, match="budget_tokens"):
        LongContextConfig(budget_tokens=0)


def test_truncated_context_stays_one_shared_prefix_for_a_group(generator):
    """Questions of different lengths over one haystack that must be cut: one budget for the group,
    so every prompt shares the truncated context as its prefix (one prefill, not one per question)."""
    samples = make_haystack(seed=0, language="en", tokens=6000, n_questions=8)
    arm = LongContextArm(generator, LongContextConfig())
    alone = {arm.build(s).meta["context_tokens"] for s in samples}
    arm.prepare(samples)
    prompts = [arm.build(s) for s in samples]
    assert all(p.meta["truncated"] for p in prompts)
    assert len({p.user[: p.prefix_chars] for p in prompts}) == 1
    assert {p.meta["context_tokens"] for p in prompts} == {min(alone)}
