"""Both arms priced alike (issue 38): one batching policy for every arm (`generator.decode_batch`), the work a
request did (process CPU seconds) as what a CPU hour charges, and records that say how each answer was decoded."""

from __future__ import annotations

import pytest

from eval.benchmarks.synthetic import make_haystack
from llm.cost import build_cost_model, cost_basis, wall_seconds
from llm.prompt import Prompt
from rag.arm import RagArm, RagConfig
from rag.retrievers import bm25_retriever


def rag_prompts(gen, n: int = 3) -> list[Prompt]:
    samples = make_haystack(seed=4, language="en", tokens=500, n_questions=n)
    arm = RagArm(gen, bm25_retriever(), RagConfig(chunk_size=64, top_k=2, cache=False))
    return [arm.build(s) for s in samples]


def test_rag_prompts_are_decoded_in_one_padded_batch_with_the_answers_of_one_at_a_time(tiny_generator):
    """RAG's prompts share nothing, yet a `generate` call decodes them together, as long context's questions
    over one prefix are: the same answers as decoding them one by one, each charged its share of the batch."""
    inner = getattr(tiny_generator, "inner", tiny_generator)  # past a response cache, if any
    prompts = rag_prompts(inner)
    prompts[1].max_new_tokens = 2  # rows of one batch end at different steps
    before = inner.decode_batch
    try:
        inner.decode_batch = 1
        alone = inner.generate(prompts)
        inner.decode_batch = 8
        together = inner.generate(prompts)
    finally:
        inner.decode_batch = before
    assert [g.text for g in together] == [g.text for g in alone]
    assert [g.completion_tokens for g in together] == [g.completion_tokens for g in alone]
    assert [g.decode_batch for g in alone] == [1, 1, 1] and [g.decode_batch for g in together] == [3, 3, 3]
    assert {g.decode_policy for g in together} == {8}
    assert all(g.cpu_s is not None and g.cpu_s > 0 for g in together)
    # one latency per request: the answer cut at 2 tokens ended before its batch-mates
    assert together[1].user_latency_s < max(together[0].user_latency_s, together[2].user_latency_s)
    shares = {round(g.latency_s, 6) for g in together}
    assert len(shares) == 1, "each is charged the same share of the batch it was decoded in"


def test_a_cpu_price_charges_cpu_seconds_over_vcpus_and_says_when_a_record_had_none():
    model = build_cost_model({"kind": "hourly", "usd_per_hour": 3.6, "basis": "cpu", "vcpus": 2})
    rec = {"generation_s": 9.0, "retrieval_s": 1.0, "cpu_s": 4.0}
    assert model.charged_seconds(rec) == pytest.approx(2.0)  # 4 CPU seconds of a 2-vCPU machine
    assert model.cost(10, 2, model.charged_seconds(rec)) == pytest.approx(2.0 * 3.6 / 3600)
    remote = {"generation_s": 9.0, "retrieval_s": 1.0}
    assert model.charged_seconds(remote) == wall_seconds(remote) == 10.0
    assert cost_basis(model, [rec]) == "cpu" and cost_basis(model, [rec, remote]) == "cpu and wall"
    wall = build_cost_model({"kind": "hourly", "usd_per_hour": 3.6})
    assert wall.charged_seconds(rec) == 10.0 and cost_basis(wall, [rec]) == "wall"
    with pytest.raises(ValueError, match="price.vcpus"):
        build_cost_model({"kind": "hourly", "usd_per_hour": 3.6, "basis": "cpu", "vcpus": 0})


def test_the_cpu_preset_prices_by_cpu_time():
    from llm.cost import load_price

    model = build_cost_model(load_price("cpu"))
    assert model.basis == "cpu" and model.vcpus == 2
