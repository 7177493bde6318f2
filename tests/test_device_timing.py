"""Timers that hold on an accelerator (llm/timing.py) and the transformers backend's timed regions, warm-up,
shared-prefix cache and fallback notice, on a tiny random-weight Llama with SmolLM2's tokenizer."""

from __future__ import annotations

import logging

import pytest

from eval.benchmarks.synthetic import make_haystack
from llm.prompt import Prompt
from llm.timing import DeviceClock, synchronizer
from longctx.arm import LongContextArm, LongContextConfig


class FakeDevice:
    """Stands in for a GPU: records when it is asked to finish its queued work."""

    def __init__(self, log: list):
        self.log = log

    def synchronize(self) -> None:
        self.log.append("sync")


def recording_clock(log: list) -> DeviceClock:
    ticks = iter(range(10**6))

    def clock() -> float:
        log.append("clock")
        return float(next(ticks))

    return DeviceClock(FakeDevice(log), clock=clock)


def test_every_clock_read_waits_for_the_device_first():
    log: list = []
    clock = recording_clock(log)
    with clock.span() as span:
        log.append("work")
    assert log == ["sync", "clock", "work", "sync", "clock"]
    assert span.seconds == 1.0
    start = clock.now()
    assert clock.since(start) == 1.0 and log[-4:] == ["sync", "clock", "sync", "clock"]


def test_device_names_map_to_their_synchronize(monkeypatch):
    import torch

    calls = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: calls.append(str(device)))
    synchronizer("cuda:1")()
    synchronizer(torch.device("cuda", 0))()
    assert calls == ["cuda:1", "cuda:0"]
    assert synchronizer("cpu")() is None and synchronizer(None)() is None
    with pytest.raises(ValueError, match="tpu"):
        synchronizer("tpu:0")


@pytest.fixture()
def tiny_gen(tiny_llama):
    from llm.transformers_backend import TransformersGenerator

    return TransformersGenerator(str(tiny_llama), context_window=8192, dtype="float32", threads=1)


def shared_prompts(gen, n: int = 3, tokens: int = 400, seed: int = 3) -> list[Prompt]:
    samples = make_haystack(seed=seed, language="en", tokens=tokens, n_questions=n)
    prompts = [LongContextArm(gen, LongContextConfig()).build(s) for s in samples]
    assert len({p.user[: p.prefix_chars] for p in prompts}) == 1
    return prompts


def events_of(gen, log: list) -> None:
    """Log each forward pass of the model, with its input length, into `log`."""
    gen.model.register_forward_pre_hook(
        lambda module, args, kwargs: log.append(("forward", int((kwargs.get("input_ids") if kwargs.get("input_ids")
                                                                 is not None else args[0]).shape[-1]))),
        with_kwargs=True)


def test_shared_prefix_times_come_from_the_device_clock_and_the_warm_up_stays_out(tiny_gen):
    """The prefill is timed between two device-synchronized clock reads (the fake clock ticks once per read, so a
    region timed by it lasts exactly the reads it spans), and the warm-up's forward passes come before them."""
    log: list = []
    prompts = shared_prompts(tiny_gen)
    events_of(tiny_gen, log)
    tiny_gen.clock = recording_clock(log)
    out = tiny_gen.generate(prompts)
    assert [path for path, _ in tiny_gen.warmups] == ["tree"]
    synced = all(a == "sync" for a, b in zip(log, log[1:], strict=False) if b == "clock")
    assert synced, "a clock read without a sync before it"
    n_prefix = max(n for kind, n in (e for e in log if isinstance(e, tuple)))
    prefill_at = log.index(("forward", n_prefix))
    # the prefill: one forward between a clock read and the next; the warm-up's passes before it
    assert log[prefill_at - 1] == "clock" and log[prefill_at + 1] == "sync" and log[prefill_at + 2] == "clock"
    assert any(isinstance(e, tuple) for e in log[: prefill_at - 2]), "no warm-up before the first timed region"
    assert out[0].prefill_s == 1.0 and all(g.prefix_group_size == 3 for g in out)
    # each tick is one clock read: a prompt's tokenising spans 1, the prefill 1, the decode batch 2 (its start, the
    # step where every answer ended, its end). Charged: own tokenising 1 + prefill 1/3 + batch 2/3; waited: own
    # tokenising 1 + the whole prefill 1 + the batch until its own answer ended 1
    assert out[0].user_latency_s == pytest.approx(3.0) and out[0].latency_s == pytest.approx(2.0)
    assert all(g.decode_batch == 3 and g.decode_policy == tiny_gen.decode_batch for g in out)
    tiny_gen.generate(prompts[:2])
    assert [path for path, _ in tiny_gen.warmups] == ["tree"], "the warm-up runs once per path"


def test_no_warm_up_when_switched_off(tiny_llama):
    from llm.transformers_backend import TransformersGenerator

    gen = TransformersGenerator(str(tiny_llama), context_window=8192, dtype="float32", threads=1, warmup=False)
    log: list = []
    events_of(gen, log)
    gen.generate([Prompt("Say something.", max_new_tokens=2)])
    assert gen.warmups == [] and log[0][0] == "forward"


def test_shared_prefix_answers_match_solo_answers_and_the_prefix_is_written_once(tiny_gen):
    import torch

    prompts = shared_prompts(tiny_gen, n=5, seed=8)
    prompts[1].max_new_tokens = 3
    tiny_gen.prefix_batch_size = 2  # three batches over one prefix: each cut back to it
    seen = []
    original = tiny_gen._decode_batch

    def spy(path, cache, *args):
        layer = cache.layers[0]
        if path == "tree":  # the solo prompts' padded batch warms up through here too
            seen.append((path, type(layer).__name__, layer.keys.shape[-2], layer._k.data_ptr()))
        return original(path, cache, *args)

    tiny_gen._decode_batch = spy
    shared = tiny_gen.generate(prompts)
    solo = tiny_gen.generate([Prompt(p.user, p.system, p.max_new_tokens) for p in prompts])
    assert [g.completion_tokens for g in shared] == [g.completion_tokens for g in solo]
    assert shared[1].completion_tokens <= 3
    assert [g.text for g in shared] == [g.text for g in solo]
    batches = seen[1:]  # the first is the warm-up's
    assert len(batches) == 3 and {b[:2] for b in batches} == {("tree", "GrowingLayer")}
    assert len({b[2] for b in batches}) == 1, "each batch starts from the prefix alone"
    assert len({b[3] for b in batches}) == 1, "the prefix stays in one buffer: never copied"
    assert torch.is_inference_mode_enabled() is False


def test_growing_layer_gives_the_logits_of_a_plain_cache(tiny_gen):
    import torch
    from transformers import DynamicCache

    from llm.kv_cache import cache_arg, grow_in_place

    model = tiny_gen.model
    ids = torch.randint(10, 40000, (1, 40))
    plain, grown = DynamicCache(config=model.config), DynamicCache(config=model.config)
    assert grow_in_place(grown, room=3)  # room for 3 tokens: the 4th step grows the buffer
    with torch.inference_mode():
        outs = []
        for cache in (plain, grown):
            steps = [model(ids, **cache_arg(model, cache), use_cache=True).logits[0, -1]]
            for t in range(6):
                steps.append(model(ids[:, t:t + 1], **cache_arg(model, cache), use_cache=True).logits[0, -1])
            cache.crop(42)
            steps.append(model(ids[:, :2], **cache_arg(model, cache), use_cache=True).logits[0, -1])
            outs.append(torch.stack(steps))
    assert grown.get_seq_length() == plain.get_seq_length() == 44
    assert torch.allclose(outs[0], outs[1], atol=1e-5)
    assert grown.layers[0]._k.shape[-2] >= 46  # grew past its room by doubling


def test_a_prefix_the_tokens_do_not_share_falls_back_once_and_says_why(tiny_gen, caplog):
    prompts = [Prompt(f"{c} is a letter; say it.", max_new_tokens=2, prefix_chars=1, chat=False) for c in "ab"]
    prompts = [Prompt("x" + p.user, max_new_tokens=2, prefix_chars=1, chat=False) for p in prompts]
    with caplog.at_level(logging.WARNING, logger="llm.transformers_backend"):
        out = tiny_gen.generate(prompts)
        tiny_gen.generate(prompts)
    said = [r.getMessage() for r in caplog.records if "prefix reuse fell back" in r.getMessage()]
    assert len(said) == 1 and "fewer than 2 leading tokens" in said[0]
    assert all(g.prefill_s is None for g in out)


def test_a_clock_over_several_devices_waits_for_each():
    log: list = []
    first, second = FakeDevice(log), FakeDevice(log)
    second.synchronize = lambda: log.append("sync 2")
    DeviceClock((first, second), clock=lambda: log.append("clock") or 0.0).now()
    assert log == ["sync", "sync 2", "clock"]


def test_rag_timers_wait_for_the_embedder_and_the_reranker_devices(generator, minilm):
    """The RAG arm's index build and retrieval are timed by a clock that waits for the devices its embedder and
    reranker run on (here a real MiniLM and cross-encoder-shaped scorer whose devices are fakes that record)."""
    from rag.arm import RagArm, RagConfig, devices_of
    from rag.rerank import Reranker
    from rag.retrievers import DenseRetriever

    log: list = []
    retriever = DenseRetriever(minilm)
    assert devices_of(retriever, None) == ("cpu",)

    class Scorer:
        device = FakeDevice(log)

        def score(self, query, passages):
            log.append("rerank")
            return [float(len(p)) for p in passages]

    reranker = Reranker(Scorer(), candidates=4)
    arm = RagArm(generator, retriever, RagConfig(chunk_size=64, chunk_overlap=8, top_k=2), reranker=reranker)
    arm.clock = DeviceClock(devices_of(retriever, reranker), clock=lambda: log.append("clock") or 0.0)
    sample = make_haystack(seed=2, language="en", tokens=300, n_questions=1)[0]
    prompt = arm.build(sample)
    assert prompt.meta["retrieval_s"] == 0.0
    rerank_at = log.index("rerank")
    assert log[rerank_at + 1: rerank_at + 3] == ["sync", "clock"], "the reranker's work is waited for, then timed"
    assert log.count("clock") == 6  # index build, the untimed warm-up and retrieval, each read at both ends
    assert len(arm.warmups) == 1 and log.count("rerank") == 2, "the reranker warmed up once, before the timed call"
    arm.build(sample)
    assert len(arm.warmups) == 1 and log.count("rerank") == 3


def test_a_fixed_width_cache_hands_attention_its_whole_buffer_and_the_answers_stay(tiny_gen):
    """Inside `fixed_width` the key length is the buffer's capacity at every step (one cuDNN plan per document on a
    GPU); the masked decode over it gives the logits of a plain cache."""
    import torch
    from transformers import DynamicCache

    from llm.kv_cache import CAPACITY_STEP, cache_arg, fixed_width, grow_in_place

    model = tiny_gen.model
    ids = torch.randint(10, 40000, (1, 300))
    plain, grown = DynamicCache(config=model.config), DynamicCache(config=model.config)
    assert grow_in_place(grown, room=10)
    seen = []
    with torch.inference_mode():
        for cache in (plain, grown):
            model(ids, **cache_arg(model, cache), use_cache=True)
        with fixed_width(plain, 400) as none:
            assert none is None
        with fixed_width(grown, 305) as width:
            assert width % CAPACITY_STEP == 0 and width >= 310
            layer = grown.layers[0]
            one = torch.zeros(*layer._k.shape[:-2], 1, layer._k.shape[-1])
            for _ in range(3):
                keys, _ = layer.update(one, one)
                seen.append(keys.shape[-2])
            layer.crop(300)
            blocked = torch.finfo(model.dtype).min
            mask = torch.full((1, width), blocked)
            mask[:, :301] = 0.0
            step = ids[:, :1]
            fixed = model(step, attention_mask=mask[None, None], position_ids=torch.tensor([[300]]),
                          **cache_arg(model, grown), use_cache=True).logits
        loose = model(step, **cache_arg(model, plain), use_cache=True).logits
        assert layer.update(one, one)[0].shape[-2] == 302, "outside: the filled part"
    assert seen == [width] * 3
    assert torch.allclose(fixed, loose, atol=1e-5)


def test_decoding_on_cuda_keeps_off_kernels_that_plan_per_shape():
    import torch

    from llm.kv_cache import steady_attention

    before = torch.backends.cuda.cudnn_sdp_enabled()
    with steady_attention("cpu"):
        assert torch.backends.cuda.cudnn_sdp_enabled() == before
    with steady_attention("cuda:0"):
        assert not torch.backends.cuda.cudnn_sdp_enabled()
        assert torch.backends.cuda.flash_sdp_enabled() and torch.backends.cuda.mem_efficient_sdp_enabled()
    assert torch.backends.cuda.cudnn_sdp_enabled() == before
