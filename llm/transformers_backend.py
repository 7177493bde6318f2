"""Local causal LMs through transformers: the CPU default (SmolLM2 GGUF) and any model by path.

The tokenizer loads at once (arms need it to budget tokens); the weights load on the first
generation, so a rerun served entirely from the response cache never loads the model.
"""

from __future__ import annotations

import logging
import os
import threading
import time

from llm.base import Generator, HFTokenizer
from llm.bundled import resolve_model
from llm.prompt import Generation, Prompt

log = logging.getLogger(__name__)


class TransformersGenerator(Generator):
    def __init__(self, model: str, context_window: int | None = None, dtype: str = "float32",
                 device: str = "cpu", threads: int | None = None, temperature: float = 0.0,
                 trust_remote_code: bool = False, reuse_prefix: bool = True):
        from transformers import AutoTokenizer

        self.spec = model
        self.path, self.gguf_file = resolve_model(model)
        self.model_id = model
        self.dtype, self.device, self.temperature = dtype, device, temperature
        self.trust_remote_code = trust_remote_code
        self.reuse_prefix = reuse_prefix
        if threads:
            import torch

            torch.set_num_threads(int(threads))
        kwargs = {"gguf_file": self.gguf_file} if self.gguf_file else {}
        try:
            hf_tok = AutoTokenizer.from_pretrained(self.path, trust_remote_code=trust_remote_code, **kwargs)
        except OSError as err:
            raise FileNotFoundError(
                f"cannot load tokenizer for generator model {model!r}: {err}. Give a local path, a "
                "bundled model (bundled:smollm2), or a hub id present in the local cache."
            ) from err
        self.tokenizer = HFTokenizer(hf_tok)
        self._hf_tok = hf_tok
        self.context_window = int(context_window or getattr(hf_tok, "model_max_length", 0) or 2048)
        if self.context_window > 10_000_000:  # transformers' "no limit" sentinel
            raise ValueError(f"set generator.context_window for {model!r}: its tokenizer states no limit")
        self._model = None
        self._lock = threading.Lock()

    # -- model -------------------------------------------------------------------------
    @property
    def model(self):
        with self._lock:
            if self._model is None:
                import torch
                from transformers import AutoModelForCausalLM

                t0 = time.perf_counter()
                kwargs = {"gguf_file": self.gguf_file} if self.gguf_file else {}
                self._model = AutoModelForCausalLM.from_pretrained(
                    self.path, dtype=getattr(torch, self.dtype),
                    trust_remote_code=self.trust_remote_code, **kwargs,
                ).to(self.device).eval()
                log.info("loaded %s in %.1fs", self.model_id, time.perf_counter() - t0)
        return self._model

    # -- interface ---------------------------------------------------------------------
    def _render(self, prompt: Prompt) -> str:
        """The exact text the model sees (chat template applied when the model has one)."""
        if self._hf_tok.chat_template:
            return self._hf_tok.apply_chat_template(prompt.messages(), add_generation_prompt=True, tokenize=False)
        return (prompt.system + "\n\n" if prompt.system else "") + prompt.user

    def _encode(self, prompt: Prompt, offsets: bool = False):
        # The rendered template already holds the special tokens it needs.
        add_special = not bool(self._hf_tok.chat_template)
        return self._hf_tok(self._render(prompt), add_special_tokens=add_special, return_offsets_mapping=offsets,
                            return_tensors="pt")

    def prompt_tokens(self, prompt: Prompt) -> int:
        return int(self._encode(prompt)["input_ids"].shape[1])

    def sampling_params(self) -> dict:
        return {"temperature": self.temperature, "dtype": self.dtype}

    def generate(self, prompts: list[Prompt]) -> list[Generation]:
        """Prompts sharing a prefix (`prefix_chars`, same system and leading text) are answered
        from one KV cache of that prefix: the long context is read once per group, not per question."""
        out: list[Generation | None] = [None] * len(prompts)
        groups: dict[tuple, list[int]] = {}
        for i, p in enumerate(prompts):
            key = (p.system, p.user[: p.prefix_chars]) if p.prefix_chars > 0 else ("solo", i)
            groups.setdefault(key, []).append(i)
        for idx in groups.values():
            if len(idx) > 1 and self.reuse_prefix:
                for i, g in zip(idx, self._generate_shared([prompts[i] for i in idx])):
                    out[i] = g
            else:
                for i in idx:
                    out[i] = self._generate_one(prompts[i])
        return out  # type: ignore[return-value]

    def _check_fits(self, n_prompt: int, prompt: Prompt) -> None:
        if n_prompt + prompt.max_new_tokens > self.context_window:
            raise ValueError(
                f"prompt of {n_prompt} tokens + {prompt.max_new_tokens} new tokens exceeds the "
                f"window of {self.context_window}: the arm should have truncated it"
            )

    def _decode(self, ids, past=None, max_new_tokens: int = 64):
        import torch

        sampling = {"do_sample": False} if self.temperature == 0 else {"do_sample": True, "temperature": self.temperature}
        with torch.inference_mode():
            return self.model.generate(
                ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_new_tokens, past_key_values=past,
                pad_token_id=self._hf_tok.pad_token_id or self._hf_tok.eos_token_id, **sampling,
            )

    def _result(self, out, n_prompt: int, latency: float) -> Generation:
        new = out[0, n_prompt:]
        return Generation(text=self._hf_tok.decode(new, skip_special_tokens=True).strip(), prompt_tokens=n_prompt,
                          completion_tokens=int(new.shape[0]), latency_s=latency)

    def _generate_one(self, prompt: Prompt) -> Generation:
        ids = self._encode(prompt)["input_ids"].to(self.device)
        self._check_fits(ids.shape[1], prompt)
        self.model  # load outside the timed region
        t0 = time.perf_counter()
        out = self._decode(ids, max_new_tokens=prompt.max_new_tokens)
        return self._result(out, int(ids.shape[1]), time.perf_counter() - t0)

    def _generate_shared(self, prompts: list[Prompt]) -> list[Generation]:
        import torch
        from transformers import DynamicCache

        encoded = []
        for p in prompts:
            enc = self._encode(p, offsets=True)
            ids = enc["input_ids"].to(self.device)
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
            return [self._generate_one(p) for p in prompts]  # no common token prefix after all
        model = self.model
        t0 = time.perf_counter()
        cache = DynamicCache(config=model.config)
        with torch.inference_mode():
            model(first, past_key_values=cache, use_cache=True)
        shared_s = (time.perf_counter() - t0) / len(prompts)
        results = []
        for (ids, _), p in zip(encoded, prompts):
            t1 = time.perf_counter()
            out = self._decode(ids, past=cache, max_new_tokens=p.max_new_tokens)
            extra = cache.get_seq_length() - n_prefix
            if extra > 0:
                cache.crop(-extra)  # back to the shared prefix for the next question
            results.append(self._result(out, int(ids.shape[1]), shared_s + time.perf_counter() - t1))
        return results


os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
