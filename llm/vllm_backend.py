"""The vLLM offline engine (`vllm.LLM`) behind the `Generator` interface, for long prompts on GPUs.

Engine settings come from the generator config (`conf/generator/vllm.yaml`): `max_model_len`,
`tensor_parallel_size`, `gpu_memory_utilization`, `enable_prefix_caching`,
`enable_chunked_prefill`, `dtype`, `max_num_seqs`, ... (`engine_extra` passes anything else to
`vllm.LLM`); sampling settings become `vllm.SamplingParams`. A batch is sent in prefix order
(prompts sorted by their rendered text, so prompts over the same document sit side by side and
vLLM's automatic prefix caching computes the document once), and the answers are returned in the
caller's order.

Usage comes from each `RequestOutput` (`prompt_token_ids`, `outputs[0].token_ids`). The engine
answers a batch at once, so a request's `latency_s` is its share of the batch's wall time (the
GPU time it is charged for); `ttft_s` is read from the request metrics when vLLM reports them.

vLLM is optional (`pip install '.[gpu]'`, Linux with a CUDA GPU). The request building and
ordering below are plain functions, usable and tested without it.
"""

from __future__ import annotations

import inspect
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from eval.registry import require
from llm.base import Generator, HFTokenizer
from llm.prompt import Generation, Prompt
from llm.stopping import finish_after_stop

log = logging.getLogger(__name__)

INSTALL_HINT = ("pip install '.[gpu]' (or pip install vllm; Linux with a CUDA GPU). Without a GPU use "
                "generator=smollm2, or generator=vllm_server against a `vllm serve` endpoint elsewhere.")

# generator config keys passed to vllm.LLM under the same name (when set)
ENGINE_KEYS = ("tokenizer", "max_model_len", "tensor_parallel_size", "pipeline_parallel_size",
               "gpu_memory_utilization", "enable_prefix_caching", "enable_chunked_prefill", "dtype",
               "quantization", "kv_cache_dtype", "max_num_seqs", "max_num_batched_tokens", "seed",
               "trust_remote_code", "enforce_eager", "download_dir")
SAMPLING_KEYS = ("temperature", "top_p", "top_k", "min_p", "repetition_penalty", "presence_penalty",
                 "frequency_penalty", "seed", "stop")


def require_vllm():
    """Import vllm, or raise `MissingExtra` (an ImportError and a ValueError) saying how to install it."""
    return require("vllm", "generator.backend=vllm", INSTALL_HINT)


def resolve_engine_model(spec: str) -> str:
    """`bundled:NAME`, a hub id, a directory or a `.gguf` file -> what `vllm.LLM(model=...)` takes
    (for GGUF: the file itself)."""
    from llm.bundled import resolve_model

    path, gguf_file = resolve_model(spec)
    return f"{path}/{gguf_file}" if gguf_file else path


# engine settings an answer's timings depend on (the response cache replays no timing measured under others)
TIMING_KEYS = ("tensor_parallel_size", "pipeline_parallel_size", "gpu_memory_utilization", "enable_prefix_caching",
               "enable_chunked_prefill", "dtype", "quantization", "kv_cache_dtype", "max_num_seqs",
               "max_num_batched_tokens", "enforce_eager")


def engine_timing_context(kwargs: Mapping[str, Any]) -> dict:
    """What an offline vLLM answer's timings depend on besides the prompt: the engine's batching, caching,
    parallelism and precision settings, and the GPU it runs on."""
    return {"backend": "vllm", "device": _gpu_name(), **{k: kwargs[k] for k in TIMING_KEYS if k in kwargs}}


def _gpu_name() -> str | None:
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency
        return None
    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None


def engine_kwargs(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword arguments for `vllm.LLM` from the generator config (unset keys are left to vLLM)."""
    if not cfg.get("model"):
        raise ValueError("generator.model is required for the vllm backend")
    if not cfg.get("max_model_len"):
        raise ValueError("generator.max_model_len is required for the vllm backend (the context window "
                         "the arms budget for; it sizes the KV cache)")
    kwargs: dict[str, Any] = {"model": resolve_engine_model(str(cfg["model"]))}
    for key in ENGINE_KEYS:
        if cfg.get(key) is not None:
            kwargs[key] = cfg[key]
    if "tokenizer" in kwargs:
        kwargs["tokenizer"] = resolve_engine_model(str(kwargs["tokenizer"]))
    tp = kwargs.get("tensor_parallel_size", 1)
    if not isinstance(tp, int) or tp < 1:
        raise ValueError(f"generator.tensor_parallel_size must be a positive integer, got {tp!r}")
    mem = kwargs.get("gpu_memory_utilization")
    if mem is not None and not 0 < float(mem) <= 1:
        raise ValueError(f"generator.gpu_memory_utilization must be in (0, 1], got {mem!r}")
    overlap = set(kwargs) & set(cfg.get("engine_extra") or {})
    if overlap:
        raise ValueError(f"generator.engine_extra repeats {sorted(overlap)}: set them once, as generator keys")
    kwargs.update(cfg.get("engine_extra") or {})
    return kwargs


def sampling_kwargs(cfg: Mapping[str, Any], max_tokens: int) -> dict[str, Any]:
    """Keyword arguments for `vllm.SamplingParams` for one request (greedy unless configured)."""
    kwargs: dict[str, Any] = {"n": 1, "max_tokens": int(max_tokens), "temperature": float(cfg.get("temperature", 0.0))}
    for key in SAMPLING_KEYS:
        if key != "temperature" and cfg.get(key) is not None:
            kwargs[key] = list(cfg[key]) if key == "stop" else cfg[key]
    return kwargs


def prefix_order(texts: Sequence[str]) -> list[int]:
    """Indices that put texts sharing a prefix next to each other (a stable lexicographic sort:
    any two texts with a common prefix end up adjacent to the texts between them sharing it too)."""
    return sorted(range(len(texts)), key=lambda i: texts[i])


def restore_order(items: Sequence[Any], order: Sequence[int]) -> list[Any]:
    """`items[k]` answers the request `order[k]`: put them back at the caller's positions."""
    if len(items) != len(order):
        raise ValueError(f"got {len(items)} outputs for {len(order)} requests")
    out: list[Any] = [None] * len(order)
    for item, index in zip(items, order, strict=True):
        out[index] = item
    return out


def generation_from_output(output: Any, latency_s: float, stop: Sequence[str] | None = None) -> Generation:
    """A `vllm.RequestOutput` -> Generation, usage from its token ids; with `stop` strings, an answer that ended
    as a bare lead-in is "lead_in" (llm/stopping.py)."""
    first = output.outputs[0]
    ttft = None
    metrics = getattr(output, "metrics", None)
    first_token, arrival = getattr(metrics, "first_token_time", None), getattr(metrics, "arrival_time", None)
    if isinstance(first_token, (int, float)) and isinstance(arrival, (int, float)) and first_token >= arrival:
        ttft = float(first_token - arrival)
    finish = getattr(first, "finish_reason", None)  # "stop" | "length" | "abort" (vLLM's CompletionOutput)
    cached = getattr(output, "num_cached_tokens", None)  # prompt tokens its prefix cache served
    finish = finish_after_stop(first.text, finish if isinstance(finish, str) else None, stop)
    return Generation(text=first.text.strip(), prompt_tokens=len(output.prompt_token_ids),
                      completion_tokens=len(first.token_ids), latency_s=latency_s, ttft_s=ttft, finish_reason=finish,
                      cached_prompt_tokens=cached if isinstance(cached, int) and cached >= 0 else None)


class VLLMGenerator(Generator):
    def __init__(self, cfg: Mapping[str, Any]):
        from llm.hf_tokenizer import load_hf_tokenizer

        self._vllm = require_vllm()
        self.cfg = dict(cfg)
        self._engine_kwargs = engine_kwargs(self.cfg)  # validated now, used on the first generation
        self.model_id = str(cfg["model"])
        self.context_window = int(cfg["max_model_len"])
        self._hf_tok = load_hf_tokenizer(str(cfg.get("tokenizer") or cfg["model"]), bool(cfg.get("trust_remote_code")))
        self.tokenizer = HFTokenizer(self._hf_tok)
        self._engine = None
        self._lock = threading.Lock()

    @property
    def engine(self):
        """The engine starts on the first generation: a rerun served from the cache never starts it."""
        with self._lock:
            if self._engine is None:
                t0 = time.perf_counter()
                self._engine = self._vllm.LLM(**self._engine_kwargs)
                log.info("vLLM engine for %s ready in %.1fs", self.model_id, time.perf_counter() - t0)
        return self._engine

    def prompt_tokens(self, prompt: Prompt) -> int:
        from llm.hf_tokenizer import count_prompt_tokens

        return count_prompt_tokens(self._hf_tok, prompt)

    def timing_context(self) -> dict:
        return engine_timing_context(self._engine_kwargs)

    def sampling_params(self) -> dict:
        return {k: v for k, v in sampling_kwargs(self.cfg, 0).items() if k != "max_tokens"}

    def token_ids(self, prompt: Prompt) -> list[int]:
        from llm.hf_tokenizer import render_prompt, uses_chat_template

        text = render_prompt(self._hf_tok, prompt)
        return self._hf_tok(text, add_special_tokens=not uses_chat_template(self._hf_tok, prompt))["input_ids"]

    def generate(self, prompts: list[Prompt]) -> list[Generation]:
        if not prompts:
            return []
        from llm.hf_tokenizer import render_prompt

        order = prefix_order([render_prompt(self._hf_tok, p) for p in prompts])
        requests, params = [], []
        for i in order:
            ids = self.token_ids(prompts[i])
            if len(ids) + prompts[i].max_new_tokens > self.context_window:
                raise ValueError(f"prompt of {len(ids)} tokens + {prompts[i].max_new_tokens} new tokens exceeds "
                                 f"max_model_len={self.context_window}: the arm should have truncated it")
            requests.append({"prompt_token_ids": ids})
            kwargs = sampling_kwargs(self.cfg, prompts[i].max_new_tokens)
            penalty = prompts[i].repetition_penalty
            if penalty is not None:  # the template's (LooGLE: 2)
                kwargs["repetition_penalty"] = float(penalty)
            params.append(self._vllm.SamplingParams(**kwargs))
        engine = self.engine
        t0 = time.perf_counter()
        outputs = engine.generate(requests, params, use_tqdm=False)
        share = (time.perf_counter() - t0) / len(prompts)
        return restore_order([generation_from_output(o, share, self.cfg.get("stop")) for o in outputs], order)


def vllm_generator(**cfg: Any) -> VLLMGenerator:
    """`generator.backend=vllm`: the generator from its config keys (the settings listed in its signature)."""
    return VLLMGenerator(cfg)


# the config keys the vllm backend reads (what `generator.<key>` may be): checked by the factory's registry
vllm_generator.__signature__ = inspect.Signature(  # type: ignore[attr-defined]  # typeshed: functions have none
    [inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, default=None)
     for k in dict.fromkeys(("model", "engine_extra", *ENGINE_KEYS, *SAMPLING_KEYS))])
