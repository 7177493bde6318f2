"""Both arms priced alike (issue 38): one batching policy for every arm (`generator.decode_batch`), the work a
request did (process CPU seconds) as what a CPU hour charges, and records that say how each answer was decoded."""

from __future__ import annotations

import json

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


def test_the_response_cache_replays_no_timings_measured_under_another_setup(tiny_llm, tmp_path):
    """An answer cached by a prefix-reuse run is answered again (re-timed) by a no-reuse run of a local model,
    not served with the reuse run's timings; under the same setup it is served as it is."""
    from llm.cache import CachedGenerator, ResponseCache
    from llm.transformers_backend import TransformersGenerator

    reuse = TransformersGenerator(str(tiny_llm), context_window=8192, threads=1, reuse_prefix=True)
    plain = TransformersGenerator(str(tiny_llm), context_window=8192, threads=1, reuse_prefix=False)
    path = tmp_path / "r.sqlite"
    prompt = Prompt("Say the word 'blue' and nothing else.", max_new_tokens=3)
    first = CachedGenerator(reuse, ResponseCache(path))
    answered = first.generate([prompt])[0]
    again = CachedGenerator(reuse, ResponseCache(path))
    assert again.generate([prompt])[0].cached and again.calls == 0
    other = CachedGenerator(plain, ResponseCache(path))
    got = other.generate([prompt])[0]
    assert not got.cached and other.calls == 1 and other.retimed == 1 and got.text == answered.text


def test_a_remote_generators_replayed_timings_are_marked_in_the_records(scripted_model, tmp_path):
    """A paid endpoint's answer is not bought again: it is served, marked `timings_replayed`, and the record says
    so (the report names it on its first screen)."""
    from experiments.arms.base import usage_of
    from llm.cache import CachedGenerator, ResponseCache
    from llm.prompt import Generation

    class Remote:  # a stand-in generator whose timing context changes between two runs (another server)
        model_id, context_window, tokenizer, generates, local = "m", 8192, None, True, False
        where = "a"

        def timing_context(self):
            return {"backend": "openai", "server": self.where}

        def sampling_params(self):
            return {}

        def prompt_tokens(self, prompt):
            return 1

        def generate(self, prompts):
            return [Generation(text="ok", prompt_tokens=1, completion_tokens=1, latency_s=0.5) for _ in prompts]

    remote = Remote()
    cached = CachedGenerator(remote, ResponseCache(tmp_path / "r.sqlite"))
    cached.generate([Prompt("q")])
    remote.where = "b"
    served = cached.generate([Prompt("q")])[0]
    assert served.cached and served.timings_replayed and cached.calls == 1 and cached.replayed == 1
    assert usage_of([served])["timings_replayed"] is True


def test_a_remembered_query_embedding_is_charged_what_it_took(tmp_path):
    """The second config of a sweep gets the query's embedding from memory, and is charged what computing it
    took, as a deployment that embeds every new question pays it."""
    import time as clock

    import numpy as np

    from rag.retrievers import _QueryVectors, charged_queries

    class SlowEmbedder:
        def fingerprint(self):
            return {"model": "slow"}

        def embed_queries(self, texts):
            clock.sleep(0.05)
            return np.ones((len(texts), 4), dtype=np.float32)

    memo = _QueryVectors(SlowEmbedder())
    with charged_queries() as first:
        memo.get("where is the key?")
    with charged_queries() as second:
        memo.get("where is the key?")
    assert first.served == 0 and first.seconds == 0.0, "computed inside the timed region: timed there"
    assert second.served == 1 and second.seconds >= 0.05


def test_a_report_over_runs_of_two_batching_policies_says_so(tmp_path):
    from experiments.report.timing_notes import batch_policy_note

    class FakeRun:
        def __init__(self, label, policy):
            self.label, self.policy = label, policy

        def answered(self):
            return [{"decode_policy": self.policy}]

    assert batch_policy_note([FakeRun("longctx", 8), FakeRun("rag", 8)]) is None
    note = batch_policy_note([FakeRun("longctx", 8), FakeRun("rag bm25 c128 k4", None)])
    assert note and "8 at a time: longctx" in note and "unrecorded: rag bm25 c128 k4" in note


def test_a_retimed_record_is_priced_at_the_median_of_its_repeats():
    from experiments.retime import repriced

    model = build_cost_model({"kind": "hourly", "usd_per_hour": 3600.0, "basis": "cpu", "vcpus": 1})
    rec = {"prompt_tokens": 5, "completion_tokens": 2, "cpu_s": 9.0, "cost_usd": 9.0,
           "cpu_repeats_s": [1.0, 3.0, 2.0], "generation_repeats_s": [1.0, 1.0, 1.0]}
    assert repriced(rec, model)["cost_usd"] == pytest.approx(2.0)
    wall = build_cost_model({"kind": "hourly", "usd_per_hour": 3600.0})
    assert wall.charged_seconds({**rec, "retrieval_s": 0.5}) == pytest.approx(1.5)


def test_a_p90_over_fewer_than_ten_values_is_marked():
    from experiments.report.page.sections.whatif import few

    assert few("1.20", 4) == "1.20*" and few("1.20", 10) == "1.20" and few("-", 3) == "-"


def test_server_and_vllm_timing_setups_are_told_apart_by_their_settings():
    """The response cache keys timings by setup (issue 38 item 6): for an endpoint its address and how requests are
    sent, for offline vLLM the engine's batching, caching, parallelism and precision; never a credential."""
    from llm.openai_backend import OpenAICompatGenerator
    from llm.vllm_backend import engine_timing_context

    def ctx(url, **kw):
        return OpenAICompatGenerator("m", base_url=url, api_key_env=None, context_window=8192, **kw).timing_context()

    base = ctx("http://user:secret@127.0.0.1:8000/v1?token=abc")
    assert base == {"backend": "openai_compat", "endpoint": "http://127.0.0.1:8000/v1", "mode": "chat",
                    "max_concurrency": 8, "stream": True}
    assert "secret" not in json.dumps(base) and "abc" not in json.dumps(base)
    assert len({json.dumps(c, sort_keys=True) for c in (base, ctx("http://127.0.0.1:8001/v1"),
                                                        ctx("http://127.0.0.1:8000/v1", max_concurrency=1),
                                                        ctx("http://127.0.0.1:8000/v1", stream=False))}) == 4
    reuse = engine_timing_context({"model": "x", "enable_prefix_caching": True, "max_num_seqs": 8, "seed": 1})
    assert reuse["backend"] == "vllm" and "model" not in reuse and "seed" not in reuse
    assert reuse != engine_timing_context({"model": "x", "enable_prefix_caching": False, "max_num_seqs": 8})
