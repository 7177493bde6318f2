"""The arms beyond plain RAG and long context: closed book and Self-Route, on the real SmolLM2."""

import pytest

from eval.benchmarks.synthetic import make_haystack
from experiments.arms import answer_group, build_arm
from experiments.arms.selfroute import SELF_ROUTE_INSTRUCTION, declined
from tests.conftest import compose


def _plain_cfg(overrides):
    from omegaconf import OmegaConf

    return OmegaConf.to_container(compose(overrides), resolve=True)


def test_decline_detection():
    assert declined("unanswerable")
    assert declined("The question is Unanswerable.")
    assert declined("无法回答")
    assert not declined("Velmora")
    assert not declined("")


def test_closedbook_sends_no_context(generator):
    s = make_haystack(seed=0, language="en", tokens=500, n_questions=1)[0]
    arm = build_arm("closedbook", generator, _plain_cfg(["arm=closedbook"]))
    p = arm.build(s)
    assert s.question in p.user and s.context[:200] not in p.user
    assert generator.prompt_tokens(p) < 120
    assert p.meta["context_tokens"] == 0 and p.meta["evidence_retained"] == 0.0


def test_selfroute_answers_every_sample_and_says_which_path(generator, tmp_path):
    samples = make_haystack(seed=3, language="en", tokens=500, n_questions=2)
    cfg = _plain_cfg(["arm=selfroute", "rag.top_k=2", f"run.cache_dir={tmp_path}"])
    arm = build_arm("selfroute", generator, cfg)
    rag_prompt = arm.rag.build(samples[0])
    answers = answer_group(arm, generator, samples)
    assert [a.sample.id for a in answers] == [s.id for s in samples]
    for a in answers:
        assert a.skipped is None and a.text is not None
        assert a.meta["route"] in ("rag", "longctx")
        assert "evidence_recall" in a.meta  # retrieval happened on either path
        if a.meta["route"] == "longctx":
            assert a.meta["selfroute_declined"] and a.usage["calls"] == 2
            assert a.usage["prompt_tokens"] > a.meta["rag_context_tokens"]
            assert "evidence_retained" in a.meta
        else:
            assert a.usage["calls"] == 1 and not declined(a.text)
    # the instruction is added to the RAG prompt by the router, not by the RAG arm
    assert SELF_ROUTE_INSTRUCTION not in rag_prompt.user


def test_a_resumed_selfroute_group_keeps_the_whole_groups_long_context_cut(generator, tmp_path):
    """The runner prepares a resumed group with all its questions (`arm.prepare`), then answers the rest;
    the fallback's cut must stay the whole group's, not one sized on the questions left."""
    from longctx.arm import LongContextArm, LongContextConfig

    samples = make_haystack(seed=0, language="en", tokens=6000, n_questions=8)  # cut to fit SmolLM2's window
    alone = {s.id: LongContextArm(generator, LongContextConfig()).build(s).meta["context_tokens"] for s in samples}
    left = [s for s in samples if alone[s.id] > min(alone.values())]  # the question that sets the cut was answered
    arm = build_arm("selfroute", generator, _plain_cfg(["arm=selfroute", "rag.top_k=2", f"run.cache_dir={tmp_path}"]))
    arm.prepare(samples)  # what the runner does for a resumed group
    arm.prepare(left)  # what answer() does with the questions left
    assert {arm.longctx.build(s).meta["context_tokens"] for s in left} == {min(alone.values())}
    fresh = LongContextArm(generator, LongContextConfig())
    fresh.prepare(left)  # a cut sized on the rest alone would be longer
    assert {fresh.build(s).meta["context_tokens"] for s in left} == {min(alone[s.id] for s in left)} != {
        min(alone.values())}

def test_unknown_arm_names_the_allowed_ones(generator):
    with pytest.raises(ValueError, match="closedbook, selfroute"):
        build_arm("oracle", generator, _plain_cfg([]))


def test_retrieval_query_falls_back_when_the_question_is_empty():
    from dataclasses import replace

    from rag.arm import retrieval_query

    s = make_haystack(seed=0, language="en", tokens=300, n_questions=1)[0]
    assert retrieval_query(s) == s.question
    empty = replace(s, question="", metadata={"retrieval_query": "Which company had the highest revenue?"})
    assert retrieval_query(empty) == "Which company had the highest revenue?"
    bare = replace(s, question="", metadata={})
    assert retrieval_query(bare) and "{question}" not in retrieval_query(bare)


def test_selfroute_instruction_goes_with_the_question_before_the_answer_cue(generator, tmp_path):
    """Li et al. 2024: the 'unanswerable' instruction follows the query, before the answer cue; the rest of
    the prompt is the plain RAG arm's prompt."""
    samples = make_haystack(seed=3, language="en", tokens=500, n_questions=1)
    cfg = _plain_cfg(["arm=selfroute", "rag.top_k=2", f"run.cache_dir={tmp_path}"])
    arm = build_arm("selfroute", generator, cfg)
    s = samples[0]
    plain = arm.rag.build(s)
    routed = arm.rag_prompt(s)
    assert plain.user.endswith("\nAnswer:") and routed.user.endswith("\nAnswer:")
    q_at = routed.user.rindex("Question: " + s.question)
    i_at = routed.user.rindex(SELF_ROUTE_INSTRUCTION)
    assert q_at < i_at < routed.user.rindex("Answer:")
    assert routed.user.replace("\n" + SELF_ROUTE_INSTRUCTION, "", 1) == plain.user
    assert routed.system == plain.system and routed.max_new_tokens == plain.max_new_tokens
