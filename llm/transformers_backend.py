"""Local causal LMs through transformers: the CPU default (SmolLM2 GGUF) and any model by path.

The tokenizer loads at once (arms need it to budget tokens); the weights load on the first
generation, so a rerun served entirely from the response cache never loads the model.

Loading, plain and streamed generation and the prefix-reuse decoder share the model's state and live
here; the tokenizer and prompt rendering every backend shares are in llm/hf_tokenizer.py, the prefix
decoder's KV cache in llm/kv_cache.py, stop strings and loop detection in llm/stopping.py.
"""

from __future__ import annotations

import copy
import logging
import os
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from llm.base import Generator, HFTokenizer
from llm.bundled import resolve_model
from llm.gguf_weights import load_kept
from llm.hf_tokenizer import (
    count_prompt_tokens,
    load_hf_tokenizer,
    render_prompt,
    tokenizer_context_window,
    uses_chat_template,
)
from llm.kv_cache import cache_arg, fixed_width, grow_in_place, steady_attention
from llm.prompt import Generation, Prompt
from llm.stopping import finish_after_stop, first_stop, looping, stop_strings
from llm.timing import DeviceClock

if TYPE_CHECKING:
    from torch import Tensor

log = logging.getLogger(__name__)

# the untimed warm-up's prompt (its token count is what matters: a short prompt of every decoding path)
WARMUP_TEXT = "The warm-up prompt: it compiles and allocates what the first timed answer would otherwise pay for."
DEFAULT_DECODE_BATCH = 8  # prompts decoded together (`decode_batch`), for every arm alike



@contextmanager
def _quiet_tqdm() -> Iterator[None]:
    """No bar from transformers' GGUF conversion, which draws one with plain tqdm, ignoring
    `transformers.utils.logging.disable_progress_bar()` (transformers 5.23)."""
    try:
        from transformers import modeling_gguf_pytorch_utils as gguf_utils
    except ImportError:
        yield
        return
    original = getattr(gguf_utils, "tqdm", None)
    if original is None:
        yield
        return
    gguf_utils.tqdm = partial(original, disable=True)
    try:
        yield
    finally:
        gguf_utils.tqdm = original

# The loaded weights, one copy per process and (path, GGUF file, dtype, device, trust_remote_code): generators
# that differ only in how they decode (sampling, stop strings, prefix reuse, threads) share one model. Weakly
# held: the generators that use a model keep it; once none does, it is freed (a sweep over models keeps
# only what the generator cache in llm/factory.py keeps).
_WEIGHTS: weakref.WeakValueDictionary[tuple, Any] = weakref.WeakValueDictionary()
_WEIGHTS_LOCK = threading.Lock()


def load_weights(path: str, gguf_file: str | None, dtype: str, device: str, trust_remote_code: bool = False,
                 label: str | None = None):
    """The causal LM at `path` (a GGUF file in it when `gguf_file`), in `dtype` on `device`, in eval mode;
    loaded once per process while any generator holds it (see `_WEIGHTS`)."""
    key = (str(path), gguf_file, str(dtype), str(device), bool(trust_remote_code))
    with _WEIGHTS_LOCK:
        model = _WEIGHTS.get(key)
        if model is not None:
            return model
        import torch
        from transformers import AutoModelForCausalLM

        label = label or str(path)
        log.info("loading %s", label)
        t0 = time.perf_counter()

        def from_pretrained(where: str, **kwargs):
            return AutoModelForCausalLM.from_pretrained(where, dtype=getattr(torch, dtype),
                                                        trust_remote_code=trust_remote_code, **kwargs)

        if gguf_file:
            def convert():
                log.info("%s: converting its GGUF tensors (once: llm/gguf_weights.py keeps the result)", label)
                with _quiet_tqdm():  # transformers' GGUF conversion draws a bar that ignores its own switch
                    return from_pretrained(path, gguf_file=gguf_file)

            model = load_kept(Path(path) / gguf_file, dtype, convert, lambda kept: from_pretrained(str(kept)))
        else:
            model = from_pretrained(path)
        model = model.to(device).eval()
        log.info("loaded %s in %.1fs", label, time.perf_counter() - t0)
        _WEIGHTS[key] = model
        return model


class TransformersGenerator(Generator):
    local = True  # answering again costs machine time only
    def __init__(self, model: str, context_window: int | None = None, dtype: str = "float32",
                 device: str = "cpu", threads: int | None = None, temperature: float = 0.0,
                 trust_remote_code: bool = False, reuse_prefix: bool = True, decode_batch: int | None = None,
                 stop: list[str] | None = None, stop_loops: bool = False, warmup: bool = True,
                 prefix_batch_size: int | None = None):
        self.spec = model
        self.stop = stop_strings(stop)
        self.stop_loops = bool(stop_loops)  # end an answer that repeats itself (finish_reason "repetition")
        self.path, self.gguf_file = resolve_model(model)
        self.model_id = model
        self.dtype, self.device, self.temperature = dtype, device, temperature
        self.trust_remote_code = trust_remote_code
        self.reuse_prefix = reuse_prefix
        # THE batching policy, one for every arm: up to `decode_batch` prompts of one `generate` call are decoded
        # together, over a shared prefix (prefix reuse) or as a padded batch (RAG, no reuse); `prefix_batch_size`
        # is its old name (it batched only the questions over a shared prefix)
        chosen = decode_batch if decode_batch is not None else prefix_batch_size
        self.decode_batch = max(1, int(chosen if chosen is not None else DEFAULT_DECODE_BATCH))
        # every timed region waits for the device first (llm/timing.py): a CUDA launch returns before the work
        self.clock = DeviceClock(device)
        # an untimed warm-up runs before the first timed use of each decoding path (`_warm_up`)
        self.warmup = bool(warmup)
        self.warmups: list[tuple[str, float]] = []  # (path, seconds) of the warm-ups run, outside the records
        self._warmed: set[str] = set()
        self._fallbacks: set[str] = set()  # prefix-reuse fallbacks already logged (once per reason)
        if threads:
            import torch

            torch.set_num_threads(int(threads))
        hf_tok = load_hf_tokenizer(model, trust_remote_code)
        self.tokenizer = HFTokenizer(hf_tok)
        self._hf_tok = hf_tok
        if context_window is None and getattr(hf_tok, "model_max_length", 0) > 10_000_000:
            context_window = self._configured_window()  # the tokenizer states no limit: ask the model config
        self.context_window = tokenizer_context_window(hf_tok, model, context_window)
        self._model = None
        self._lock = threading.Lock()

    @property
    def prefix_batch_size(self) -> int:
        """The old name of `decode_batch` (when it batched only questions over a shared prefix)."""
        return self.decode_batch

    @prefix_batch_size.setter
    def prefix_batch_size(self, value: int) -> None:
        self.decode_batch = max(1, int(value))

    def timing_context(self) -> dict:
        """What the timings of an answer depend on besides the prompt: the response cache keeps them apart."""
        return {"backend": "transformers", "device": str(self.device), "dtype": self.dtype,
                "reuse_prefix": bool(self.reuse_prefix), "decode_batch": self.decode_batch,
                "threads": _threads()}

    def _configured_window(self) -> int | None:
        from transformers import AutoConfig

        kwargs = {"gguf_file": self.gguf_file} if self.gguf_file else {}
        try:
            config = AutoConfig.from_pretrained(self.path, trust_remote_code=self.trust_remote_code, **kwargs)
        except (OSError, ValueError):
            return None
        return getattr(config, "max_position_embeddings", None)

    # -- model -------------------------------------------------------------------------
    @property
    def model(self):
        with self._lock:
            if self._model is None:
                self._model = load_weights(self.path, self.gguf_file, self.dtype, self.device,
                                           self.trust_remote_code, label=self.model_id)
        return self._model

    # -- interface ---------------------------------------------------------------------
    def _render(self, prompt: Prompt) -> str:
        """The exact text the model sees (chat template applied when the model has one)."""
        return render_prompt(self._hf_tok, prompt)

    def _encode(self, prompt: Prompt, offsets: bool = False):
        # The rendered template already holds the special tokens it needs.
        add_special = not uses_chat_template(self._hf_tok, prompt)
        return self._hf_tok(self._render(prompt), add_special_tokens=add_special, return_offsets_mapping=offsets,
                            return_tensors="pt")

    def _encode_text(self, text: str):
        """Raw text (a completions request) tokenized as a server would: special tokens added."""
        return self._hf_tok(text, add_special_tokens=True, return_tensors="pt")["input_ids"].to(self.device)

    def prompt_tokens(self, prompt: Prompt) -> int:
        """The tokens `_encode` gives the model, counted without building tensors (a dry run counts every prompt:
        making an 8k-token tensor to read its length took transformers longer than tokenizing)."""
        return count_prompt_tokens(self._hf_tok, prompt)

    def sampling_params(self) -> dict:
        params = {"temperature": self.temperature, "dtype": self.dtype}
        if self.stop:  # only when set, so answers cached before stop strings existed keep their keys
            params["stop"] = list(self.stop)
            params["stop_after_content"] = True  # a stop string right after a bare lead-in is passed over
        if self.stop_loops:
            params["stop_loops"] = True
        return params

    def generate(self, prompts: list[Prompt]) -> list[Generation]:
        """Prompts sharing a prefix (`prefix_chars`, same system and leading text) are answered
        from one KV cache of that prefix: the long context is read once per group, not per question.
        Every other prompt (RAG's, long context without reuse) is decoded with the others of the call in
        padded batches: the same `decode_batch` policy for every arm."""
        out: list[Generation | None] = [None] * len(prompts)
        groups: dict[tuple, list[int]] = {}
        for i, p in enumerate(prompts):
            key = (p.system, p.chat, p.user[: p.prefix_chars]) if p.prefix_chars > 0 else ("solo", i)
            groups.setdefault(key, []).append(i)
        alone: list[int] = []
        for idx in groups.values():
            if len(idx) > 1 and self.reuse_prefix:
                for i, g in zip(idx, self._generate_shared([prompts[i] for i in idx]), strict=True):
                    out[i] = g
            else:
                alone += idx
        for start in range(0, len(alone), self.decode_batch):
            batch = alone[start:start + self.decode_batch]
            for i, g in zip(batch, self._generate_padded([prompts[i] for i in batch]), strict=True):
                out[i] = g
        done = [g for g in out if g is not None]
        if len(done) != len(prompts):
            raise RuntimeError(f"{len(prompts) - len(done)} of {len(prompts)} prompts got no generation")
        return [replace(g, decode_policy=self.decode_batch) for g in done]

    def _check_fits(self, n_prompt: int, prompt: Prompt) -> None:
        if n_prompt + prompt.max_new_tokens > self.context_window:
            raise ValueError(
                f"prompt of {n_prompt} tokens + {prompt.max_new_tokens} new tokens exceeds the "
                f"window of {self.context_window}: the arm should have truncated it"
            )

    def _decode(self, ids, past=None, max_new_tokens: int = 64, streamer=None, repetition_penalty: float | None = None):
        import torch

        sampling: dict[str, Any] = ({"do_sample": False} if self.temperature == 0
                    else {"do_sample": True, "temperature": self.temperature})
        if repetition_penalty is not None:
            sampling["repetition_penalty"] = float(repetition_penalty)
        if self.stop or self.stop_loops:  # generate ends a sequence at a stop string or a loop
            sampling["stopping_criteria"] = _stop_criteria(self._hits_stop, int(ids.shape[1]))
        with torch.inference_mode():
            return self.model.generate(
                ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_new_tokens, **cache_arg(self.model, past),
                pad_token_id=self._hf_tok.pad_token_id or self._hf_tok.eos_token_id, streamer=streamer, **sampling,
            )

    def _text_and_finish(self, tokens: list[int], limit: int) -> tuple[str, str | None]:
        """The answer's text, cut before the first stop string that follows content (which it does not include,
        as in OpenAI's API; unlike it, a stop string inside the answer's leading whitespace or right after a bare
        lead-in does not count: llm/stopping.py), and how it ended: "stop" at an end-of-sequence token, a stop
        string or before its limit, "lead_in" when that answer is a bare lead-in (stop strings set), else
        "length"."""
        text = self._hf_tok.decode(tokens, skip_special_tokens=True)
        cut = first_stop(text, self.stop)
        if cut is not None:
            return text[:cut].strip(), "stop"
        if tokens and tokens[-1] in self._stop_ids():
            return text.strip(), finish_after_stop(text, "stop", self.stop)
        if self.stop_loops and looping(tokens):
            return text.strip(), "repetition"
        return text.strip(), finish_after_stop(text, "length" if len(tokens) >= limit else "stop", self.stop)

    def _hits_stop(self, tokens: list[int]) -> bool:
        """Whether an unfinished answer's text holds a stop string, or (`stop_loops`) the answer has begun to
        repeat itself: decoding ends there (the batched decoders end the row)."""
        if self.stop_loops and looping(tokens):
            return True
        return bool(self.stop) and first_stop(self._hf_tok.decode(tokens, skip_special_tokens=True),
                                               self.stop) is not None

    def _result(self, out, n_prompt: int, latency: float, limit: int) -> Generation:
        new = out[0, n_prompt:].tolist()
        text, finish = self._text_and_finish(new, limit)
        return Generation(text=text, prompt_tokens=n_prompt, completion_tokens=len(new), latency_s=latency,
                          finish_reason=finish)

    def complete(self, text: str, max_new_tokens: int = 64) -> Generation:
        """Continue raw text, no chat template (what an OpenAI `/v1/completions` request asks)."""
        ids = self._encode_text(text)
        self._check_fits(ids.shape[1], Prompt(text, max_new_tokens=max_new_tokens))
        self._warm_up("generate")
        t0 = self.clock.now()
        with steady_attention(self.device):
            out = self._decode(ids, max_new_tokens=max_new_tokens)
        return self._result(out, int(ids.shape[1]), self.clock.since(t0), max_new_tokens)

    def stream(self, prompt: Prompt | str, max_new_tokens: int | None = None) -> TokenStream:
        """Answer one prompt (a chat Prompt, or raw text to continue) piece by piece as it decodes.

        Iterate the returned stream for text pieces; its `generation` holds text and usage once
        it is exhausted, with `ttft_s` the time to the first piece."""
        if isinstance(prompt, Prompt):
            ids = self._encode(prompt)["input_ids"].to(self.device)
            max_new = prompt.max_new_tokens if max_new_tokens is None else max_new_tokens
        else:
            ids = self._encode_text(prompt)
            max_new = 64 if max_new_tokens is None else max_new_tokens
        self._check_fits(ids.shape[1], Prompt("", max_new_tokens=max_new))
        self._warm_up("generate")
        return TokenStream(self, ids, max_new)

    def _generate_one(self, prompt: Prompt) -> Generation:
        self._warm_up("generate")  # load and warm up outside the timed region
        with self.clock.span() as span:  # tokenising included, as for every arm
            ids = self._encode(prompt)["input_ids"].to(self.device)
            self._check_fits(ids.shape[1], prompt)
            with steady_attention(self.device):
                out = self._decode(ids, max_new_tokens=prompt.max_new_tokens,
                                   repetition_penalty=prompt.repetition_penalty)
        gen = self._result(out, int(ids.shape[1]), span.seconds or 0.0, prompt.max_new_tokens)
        return replace(gen, cpu_s=round(span.cpu_s or 0.0, 4), decode_batch=1,
                       decode_steps=max(gen.completion_tokens - 1, 0))

    def _generate_padded(self, prompts: list[Prompt]) -> list[Generation]:
        """Prompts with nothing shared, decoded together as one left-padded greedy batch (what a serving engine
        does with concurrent requests): each is charged its share of the batch's time, tokenising included, and
        a user waits until their own answer ends (`user_latency_s`). One prompt, sampling or a repetition
        penalty (which the batched greedy loop does not apply): one at a time."""
        if len(prompts) == 1 or self.temperature != 0 or any(p.repetition_penalty is not None for p in prompts):
            return [self._generate_one(p) for p in prompts]
        self._warm_up("padded")
        model = self.model
        ended: list[float | None] = [None] * len(prompts)
        with self.clock.span() as span:
            rows = []
            for p in prompts:
                ids = self._encode(p)["input_ids"][0].to(self.device)
                self._check_fits(int(ids.shape[0]), p)
                rows.append(ids)
            limits = [p.max_new_tokens for p in prompts]
            if self._full_attention_only(model.config):
                # each prompt prefilled alone, the batch decoded together from one cache written in place (no copy of
                # every row's prompt at each step, as the shared prefix's decode has none)
                cache, last, mask, positions = self._prefill_apart(rows, max(limits) + 1)
                new = self._batch_steps(cache, last, mask, positions, limits, ended)
            else:  # sliding-window layers: one padded prefill (the window applies through the model's own mask)
                new = self._greedy_batch(self._prefix_cache(model, 0), rows, 0, limits, ended=ended)
        seconds, cpu = span.seconds or 0.0, span.cpu_s or 0.0
        steps = max(max(len(t) for t in new) - 1, 0)  # every row is computed until the longest ends
        results = []
        for i, (p, tokens) in enumerate(zip(prompts, new, strict=True)):
            text, finish = self._text_and_finish(tokens, p.max_new_tokens)
            end = ended[i]
            waited = seconds if end is None else end - span.start
            results.append(Generation(text=text, prompt_tokens=int(rows[i].shape[0]), completion_tokens=len(tokens),
                                      latency_s=seconds / len(prompts), cpu_s=round(cpu / len(prompts), 4),
                                      user_latency_s=round(waited, 4), decode_batch=len(prompts),
                                      decode_steps=steps, finish_reason=finish))
        return results

    def _generate_shared(self, prompts: list[Prompt]) -> list[Generation]:
        """Read the shared prefix once into a KV cache, then answer the questions from it: greedy decoding
        runs them as one sequence over ONE copy of the prefix (`_greedy_shared_prefix`), in batches of
        `prefix_batch_size`, each batch writing after the prefix and cut back to it when done, so the
        prefix is neither copied nor read more than once a step. Every timed region waits for the device
        (`self.clock`); each path is warmed up, untimed, before its first timed use."""
        import torch

        encoded, tokenising = [], []  # tokenising each prompt is its own work, timed and charged to it
        for p in prompts:
            with self.clock.span() as tok:
                enc = self._encode(p, offsets=True)
                ids = enc["input_ids"].to(self.device)
            tokenising.append(tok)
            self._check_fits(ids.shape[1], p)
            rendered = self._render(p)
            prefix_end = rendered.index(p.user) + p.prefix_chars
            ends = enc["offset_mapping"][0, :, 1].tolist()
            # tokens wholly inside the prefix, less one: a token may merge across the boundary
            n_prefix = max(0, sum(1 for e in ends if e <= prefix_end) - 1)
            encoded.append((ids, n_prefix))
        n_prefix = min(n for _, n in encoded)
        first = encoded[0][0][:, :n_prefix]
        if n_prefix < 2 or any(not torch.equal(ids[:, :n_prefix], first) for ids, _ in encoded):
            self._note_fallback("the prompts marked as sharing a prefix share fewer than 2 leading tokens once "
                                "tokenized (the chat template or the tokenizer joins the prefix with what follows)")
            return [self._generate_one(p) for p in prompts]
        # sampling, or a repetition penalty (which the batched greedy loops do not apply): one question after
        # another from the cropped cache; sliding-window layers: a padded batch (a custom mask would bypass the
        # window); else the shared-prefix tree
        sequential = self.temperature != 0 or any(p.repetition_penalty is not None for p in prompts)
        model = self.model
        path = "sequential" if sequential else "tree" if self._full_attention_only(model.config) else "padded"
        self._warm_up(path)
        suffixes = [ids[0, n_prefix:] for ids, _ in encoded]
        batches = [list(range(s, min(s + self.decode_batch, len(prompts))))
                   for s in range(0, len(prompts), self.decode_batch)]
        # room the tree path writes after the prefix: a batch's questions and their answers
        room = max(sum(int(suffixes[i].shape[0]) for i in b) + len(b) * max(prompts[i].max_new_tokens for i in b)
                   for b in batches)
        cache = self._prefix_cache(model, room if path == "tree" else 0)
        with torch.inference_mode(), self.clock.span() as prefill:
            model(first, **cache_arg(model, cache), use_cache=True, logits_to_keep=1)
        prefill_s, prefill_cpu = prefill.seconds or 0.0, prefill.cpu_s or 0.0
        shared_s, shared_cpu = prefill_s / len(prompts), prefill_cpu / len(prompts)
        group: dict[str, Any] = {"prefill_s": round(prefill_s, 4), "prefix_group_size": len(prompts),
                 "prefill_cpu_s": round(prefill_cpu, 4)}
        results: list[Generation] = []
        if path == "sequential":
            for (ids, _), p, tok in zip(encoded, prompts, tokenising, strict=True):
                with self.clock.span() as own, steady_attention(self.device):
                    out = self._decode(ids, past=cache, max_new_tokens=p.max_new_tokens,
                                       repetition_penalty=p.repetition_penalty)
                    extra = cache.get_seq_length() - n_prefix
                    if extra > 0:
                        cache.crop(-extra)  # back to the shared prefix for the next question
                own_s = (own.seconds or 0.0) + (tok.seconds or 0.0)
                gen = self._result(out, int(ids.shape[1]), shared_s + own_s, p.max_new_tokens)
                results.append(replace(gen, **group, user_latency_s=round(prefill_s + own_s, 4), decode_batch=1,
                                       decode_steps=max(gen.completion_tokens - 1, 0),
                                       cpu_s=round(shared_cpu + (own.cpu_s or 0.0) + (tok.cpu_s or 0.0), 4)))
            return results
        for batch in batches:
            limits = [prompts[i].max_new_tokens for i in batch]
            ended: list[float | None] = [None] * len(batch)
            with self.clock.span() as decode:
                new_tokens = self._decode_batch(path, cache, [suffixes[i] for i in batch], n_prefix, limits, ended)
            batch_s, batch_cpu = decode.seconds or 0.0, decode.cpu_s or 0.0
            steps = max(max(len(t) for t in new_tokens) - 1, 0)
            for k, (i, tokens) in enumerate(zip(batch, new_tokens, strict=True)):
                text, finish = self._text_and_finish(tokens, prompts[i].max_new_tokens)
                tok = tokenising[i]
                own_s = (tok.seconds or 0.0) + batch_s / len(batch)
                # what this user waits: their prompt tokenised, the prefill, and the batch until their answer ended
                end = ended[k]
                waited = (tok.seconds or 0.0) + prefill_s + (batch_s if end is None else end - decode.start)
                results.append(Generation(
                    text=text, prompt_tokens=int(encoded[i][0].shape[1]), completion_tokens=len(tokens),
                    latency_s=round(shared_s + own_s, 6), **group, user_latency_s=round(waited, 4),
                    finish_reason=finish, decode_batch=len(batch), decode_steps=steps,
                    cpu_s=round(shared_cpu + (tok.cpu_s or 0.0) + batch_cpu / len(batch), 4)))
        return results

    def _decode_batch(self, path: str, cache, suffixes: list, n_prefix: int, limits: list[int],
                      ended: list | None = None) -> list[list[int]]:
        """One batch of questions over the prefix in `cache`, which is left holding the prefix alone; `ended`
        (when given) gets the clock reading at which each question's answer ended."""
        if path == "tree":
            try:
                return self._greedy_shared_prefix(cache, suffixes, n_prefix, limits, ended)
            finally:
                cache.crop(n_prefix)  # the prefix was written first and is never overwritten: cut back to it
        branch = copy.deepcopy(cache)  # the padded batch repeats the prefix per question: a copy of it
        if len(suffixes) > 1:
            branch.batch_repeat_interleave(len(suffixes))
        return self._greedy_batch(branch, suffixes, n_prefix, limits, ended)

    @staticmethod
    def _prefix_cache(model, room: int):
        """An empty KV cache for a prefix; with `room` > 0 its full-attention layers are `GrowingLayer`s that
        keep `room` tokens free after what they first receive (no per-step copy of the prefix)."""
        from transformers import DynamicCache

        cache = DynamicCache(config=model.config)
        if room > 0:
            grow_in_place(cache, room)
        return cache

    def _note_fallback(self, reason: str) -> None:
        """Say once per generator and reason that prefix reuse fell back to one prefill per question."""
        if reason not in self._fallbacks:
            self._fallbacks.add(reason)
            log.warning("prefix reuse fell back to one prefill per question: %s (said once)", reason)

    def _warm_up(self, path: str) -> None:
        """Load the model, and before the first timed use of a decoding path run it once, untimed, on a short
        prompt: the device's first use of a kernel, a cuDNN plan or an allocation pool costs seconds on a GPU
        (2.7-3.2 s against 0.6-1.1 s for the first record of a run) and tens of milliseconds on a CPU, which
        would otherwise land in the first record of a run. Paths: `generate` (one prompt), `tree` (questions
        over a shared prefix as one sequence), `padded` (a padded batch over a repeated prefix, sliding-window
        models), `sequential` (one question after another from a shared cache). Off with `warmup=False`."""
        model = self.model
        if not self.warmup or path in self._warmed:
            return
        self._warmed.add(path)
        import torch

        ids = self._hf_tok(WARMUP_TEXT, add_special_tokens=True, return_tensors="pt")["input_ids"].to(self.device)
        log.info("warming up the %s path (untimed, outside the records)", path)
        t0 = self.clock.now()
        if path in ("generate", "sequential"):
            with steady_attention(self.device):
                self._decode(ids, max_new_tokens=2)
        else:
            half = max(2, ids.shape[1] // 2)
            cache = self._prefix_cache(model, 2 * (ids.shape[1] - half + 2) if path == "tree" else 0)
            with torch.inference_mode():
                model(ids[:, :half], **cache_arg(model, cache), use_cache=True, logits_to_keep=1)
            suffix = ids[0, half:]
            self._decode_batch(path, cache, [suffix, suffix[: max(1, len(suffix) // 2)]], half, [2, 2])
        seconds = self.clock.since(t0)
        self.warmups.append((path, seconds))
        log.info("warm-up of the %s path: %.2fs", path, seconds)

    @staticmethod
    def _full_attention_only(config) -> bool:
        layer_types = getattr(config, "layer_types", None) or []
        return getattr(config, "sliding_window", None) is None and all(lt == "full_attention" for lt in layer_types)

    def _stop_ids(self) -> set[int]:
        eos = self.model.generation_config.eos_token_id
        return set(eos if isinstance(eos, list) else [eos]) - {None}

    def _greedy_shared_prefix(self, cache, suffixes: list, n_prefix: int, max_new: list[int],
                              ended: list | None = None) -> list[list[int]]:
        """Greedy continuations of `prefix + suffix_b` for each b, with ONE copy of the prefix in the
        KV cache: all questions' tokens go into a single sequence after the prefix, and a custom
        attention mask lets each token see the prefix and its own question's earlier tokens only
        (positions as if it were alone). A decode step reads the prefix once for all questions,
        instead of once per question as a padded batch would. Returns each question's new token
        ids, its end-of-sequence token included, as `generate` counts them.

        The mask is additive in the model's dtype (0 where a token may look, the dtype's minimum where
        not), as transformers builds its own, and spans the cache's whole buffer (`fixed_width`): the key
        length stays the same at every step, so cuDNN's attention plans once per document instead of once per
        step. Measured on an H200 (a 1.7B model, a 51-52k-token prefix, 4 questions, 32 tokens each, each
        document a new length): 600 ms a step with a boolean mask and a concatenated cache as before, 3.0-3.3 s
        for the 32 steps with an additive mask over the filled part, 0.9-1.4 s over the fixed width."""
        import torch

        blocked = torch.finfo(self.model.dtype).min
        batch, lengths = len(suffixes), [int(s.shape[0]) for s in suffixes]
        with fixed_width(cache, n_prefix + sum(lengths) + batch * max(max_new)) as width:
            return self._tree_decode(cache, suffixes, n_prefix, max_new, width, blocked, ended)

    def _tree_decode(self, cache, suffixes: list, n_prefix: int, max_new: list[int], width: int | None,
                     blocked: float, ended: list | None = None) -> list[list[int]]:
        """`_greedy_shared_prefix`'s loop; `width`: the key length the cache hands attention (None: as filled)."""
        import torch

        model, dev = self.model, self.device

        def additive(allowed):  # [rows, columns] of bool -> [1, 1, rows, width] of the model's dtype
            mask = torch.full((allowed.shape[0], width or allowed.shape[1]), blocked, dtype=model.dtype, device=dev)
            mask[:, : allowed.shape[1]].masked_fill_(allowed, 0.0)
            return mask[None, None]

        batch, lengths = len(suffixes), [int(s.shape[0]) for s in suffixes]
        owner = torch.cat([torch.full((n,), b, dtype=torch.long, device=dev) for b, n in enumerate(lengths)])
        within = torch.cat([torch.arange(n, device=dev) for n in lengths])
        # row i may see column j (both after the prefix) when they belong to the same question, j <= i
        own = (owner[:, None] == owner[None, :]) & (within[None, :] <= within[:, None])
        mask = torch.cat([torch.ones((len(owner), n_prefix), dtype=torch.bool, device=dev), own], dim=1)
        last = torch.tensor([sum(lengths[: b + 1]) - 1 for b in range(batch)], device=dev)
        stop = self._stop_ids()
        out: list[list[int]] = [[] for _ in range(batch)]
        done = [False] * batch
        rows = torch.arange(batch, device=dev)
        with torch.inference_mode():
            logits = model(input_ids=torch.cat(suffixes)[None, :].to(dev), attention_mask=additive(mask),
                           position_ids=(n_prefix + within)[None, :], **cache_arg(model, cache), use_cache=True,
                           logits_to_keep=last).logits[0]
            owner_cols = owner
            positions = torch.tensor(lengths, device=dev) + n_prefix  # where each question's next token goes
            prefix_cols = torch.ones((batch, n_prefix), dtype=torch.bool, device=dev)
            for _ in range(max(max_new)):
                chosen = logits.argmax(dim=-1)
                if _append_unfinished(chosen, out, done, stop, max_new, self._hits_stop, ended, self.clock.now):
                    break
                owner_cols = torch.cat([owner_cols, rows])  # the B tokens fed now, one per question
                step_mask = torch.cat([prefix_cols, owner_cols[None, :] == rows[:, None]], dim=1)
                logits = model(input_ids=chosen[None, :], attention_mask=additive(step_mask),
                               position_ids=positions[None, :], **cache_arg(model, cache), use_cache=True).logits[0]
                positions = positions + 1
        return out

    def _greedy_batch(self, cache, suffixes: list, n_prefix: int, max_new: list[int],
                      ended: list | None = None) -> list[list[int]]:
        """Greedy continuations of `prefix + suffix_b` for each b, the prefix already in `cache`
        (repeated over the batch; `n_prefix` 0 and an empty cache: a padded batch of whole prompts). Returns each
        row's new token ids, its end-of-sequence token included, as `generate` counts them; `ended` (when given)
        gets the clock reading at which each row ended. The steps after the first run on the steady attention
        kernels (`steady_attention`), the first (a prefill) on the same kernels as the shared prefix's."""
        import torch

        model = self.model
        batch, width = len(suffixes), max(int(s.shape[0]) for s in suffixes)
        pad = self._hf_tok.pad_token_id if self._hf_tok.pad_token_id is not None else self._hf_tok.eos_token_id
        ids = torch.full((batch, width), pad, dtype=torch.long, device=self.device)
        keep = torch.zeros((batch, width), dtype=torch.long, device=self.device)
        for b, s in enumerate(suffixes):
            ids[b, width - s.shape[0]:] = s
            keep[b, width - s.shape[0]:] = 1
        mask = torch.cat([torch.ones((batch, n_prefix), dtype=torch.long, device=self.device), keep], dim=1)
        positions = (n_prefix + keep.cumsum(dim=1) - 1).clamp(min=n_prefix)
        with torch.inference_mode():
            logits = model(input_ids=ids, attention_mask=mask, position_ids=positions, **cache_arg(model, cache),
                           use_cache=True, logits_to_keep=1).logits[:, -1, :]
        return self._batch_steps(cache, logits, mask, positions, max_new, ended)

    def _batch_steps(self, cache, logits, mask, positions, max_new: list[int], ended: list | None) -> list[list[int]]:
        """The greedy decode steps of a padded batch whose prompts are in `cache`: `logits` each row's last, `mask`
        and `positions` the prompts' (left padding masked out)."""
        import torch

        batch = int(logits.shape[0])
        stop = self._stop_ids()
        out: list[list[int]] = [[] for _ in range(batch)]
        done = [False] * batch
        with torch.inference_mode(), steady_attention(self.device):
            for _ in range(max(max_new)):
                chosen = logits.argmax(dim=-1)
                if _append_unfinished(chosen, out, done, stop, max_new, self._hits_stop, ended, self.clock.now):
                    break
                mask = torch.cat([mask, torch.ones((batch, 1), dtype=torch.long, device=self.device)], dim=1)
                positions = positions[:, -1:] + 1
                logits = model_logits(self.model, chosen[:, None], mask, positions, cache)
        return out

    def _prefill_apart(self, rows: list, room: int):
        """Prefill each prompt alone (no padding, the causal kernels a single prompt gets, as a serving engine
        prefills each request), then lay their caches side by side, left-padded, in one cache written in place
        (`room` tokens free) for the batched decode. Returns (cache, each row's last logits, mask, positions)."""
        import torch
        from transformers import DynamicCache

        model, dev = self.model, self.device
        batch, width = len(rows), max(int(r.shape[0]) for r in rows)
        last, parts = [], []
        with torch.inference_mode():
            for r in rows:
                alone = DynamicCache(config=model.config)
                last.append(model(r[None], **cache_arg(model, alone), use_cache=True, logits_to_keep=1).logits[0, -1])
                parts.append(alone)
            cache = self._prefix_cache(model, room)
            for layer in range(len(parts[0].layers)):
                filled = [_keys_values(alone.layers[layer]) for alone in parts]
                k0, v0 = filled[0]
                keys = k0.new_zeros((batch, k0.shape[1], width, k0.shape[3]))
                values = v0.new_zeros((batch, v0.shape[1], width, v0.shape[3]))
                for b, (k, v) in enumerate(filled):
                    n = int(k.shape[-2])
                    keys[b, :, width - n:] = k[0]
                    values[b, :, width - n:] = v[0]
                cache.update(keys, values, layer)
        keep = torch.zeros((batch, width), dtype=torch.long, device=dev)
        for b, r in enumerate(rows):
            keep[b, width - int(r.shape[0]):] = 1
        return cache, torch.stack(last), keep, (keep.cumsum(dim=1) - 1).clamp(min=0)


def _keys_values(layer: Any) -> tuple[Tensor, Tensor]:
    """A cache layer's keys and values, which the prefill over its prompt has written."""
    if layer.keys is None or layer.values is None:
        raise RuntimeError("a cache layer holds no keys after its prefill")
    return layer.keys, layer.values


def _append_unfinished(chosen, out: list[list[int]], done: list[bool], stop: set[int], max_new: list[int],
                       hits_stop, ended: list | None = None, now=None) -> bool:
    """Append each unfinished row's chosen token (an end-of-sequence token, its limit or a stop string in its
    text finishes it); True when all are done. `ended` gets `now()` for each row that ends here (one answer's own
    latency, not its batch's)."""
    picked = chosen.tolist()
    finished_now = False
    for b, tokens in enumerate(out):
        if not done[b]:
            tokens.append(int(picked[b]))
            done[b] = tokens[-1] in stop or len(tokens) >= max_new[b] or hits_stop(tokens)
            finished_now = finished_now or done[b]
    if finished_now and ended is not None and now is not None:
        t = now()
        for b in range(len(out)):
            if done[b] and ended[b] is None:
                ended[b] = t
    return all(done)


def _stop_criteria(hits_stop, n_prompt: int):
    """A `generate` stopping criterion: a row is finished once its new tokens' text holds a stop string."""
    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList

    class _StopStrings(StoppingCriteria):
        def __call__(self, input_ids, scores, **kwargs):
            rows = [hits_stop(row[n_prompt:].tolist()) for row in input_ids]
            return torch.tensor(rows, dtype=torch.bool, device=input_ids.device)

    return StoppingCriteriaList([_StopStrings()])


class TokenStream:
    """Text pieces of one generation as they decode (decoding runs in a background thread)."""

    def __init__(self, gen: TransformersGenerator, ids, max_new_tokens: int):
        from transformers import TextIteratorStreamer

        self.generation: Generation | None = None
        self._gen, self._ids, self._max_new = gen, ids, max_new_tokens
        self._streamer = TextIteratorStreamer(gen._hf_tok, skip_prompt=True, skip_special_tokens=True)
        self._out: Any = None
        self._error: BaseException | None = None
        self._t0 = gen.clock.now()  # the device idle: what follows is this answer's work
        self._thread = threading.Thread(target=self._run, args=(max_new_tokens,), daemon=True)
        self._thread.start()

    def _run(self, max_new_tokens: int) -> None:
        try:
            with steady_attention(self._gen.device):
                self._out = self._gen._decode(self._ids, max_new_tokens=max_new_tokens, streamer=self._streamer)
        except BaseException as err:  # noqa: BLE001 - re-raised in the consuming thread
            self._error = err
            self._streamer.end()

    def __iter__(self):
        ttft = None
        for piece in self._streamer:
            if piece and ttft is None:  # a piece is text: its token already reached the CPU, no wait needed
                ttft = time.perf_counter() - self._t0
            if piece:
                yield piece
        self._thread.join()
        if self._error is not None:
            raise self._error
        result = self._gen._result(self._out, int(self._ids.shape[1]), self._gen.clock.since(self._t0),
                                   self._max_new)
        result.ttft_s = ttft
        self.generation = result


os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _threads() -> int | None:
    """The CPU threads torch computes with (a timing depends on it)."""
    try:
        import torch
    except ImportError:
        return None
    return int(torch.get_num_threads())


def model_logits(model, ids, mask, positions, cache):
    """The last logits of each row of one decode step (one new token a row). The padding mask goes in as the additive
    4-D mask attention reads (0 where a row may look, the dtype's minimum where not), as the shared-prefix decoder's
    does: built from a 2-D mask at every step, transformers' own mask costs as much as the step itself on a CPU."""
    import torch

    blocked = torch.finfo(model.dtype).min
    additive = torch.zeros(mask.shape, dtype=model.dtype, device=mask.device).masked_fill_(mask == 0, blocked)
    return model(input_ids=ids, attention_mask=additive[:, None, None, :], position_ids=positions,
                 **cache_arg(model, cache), use_cache=True).logits[:, -1, :]
