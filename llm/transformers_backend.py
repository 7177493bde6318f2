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
                 trust_remote_code: bool = False):
        from transformers import AutoTokenizer

        self.spec = model
        self.path, self.gguf_file = resolve_model(model)
        self.model_id = model
        self.dtype, self.device, self.temperature = dtype, device, temperature
        self.trust_remote_code = trust_remote_code
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
    def _input_ids(self, prompt: Prompt):
        if self._hf_tok.chat_template:
            enc = self._hf_tok.apply_chat_template(
                prompt.messages(), add_generation_prompt=True, return_tensors="pt", return_dict=True
            )
            return enc["input_ids"]
        text = (prompt.system + "\n\n" if prompt.system else "") + prompt.user
        return self._hf_tok(text, return_tensors="pt")["input_ids"]

    def prompt_tokens(self, prompt: Prompt) -> int:
        return int(self._input_ids(prompt).shape[1])

    def sampling_params(self) -> dict:
        return {"temperature": self.temperature, "dtype": self.dtype}

    def generate(self, prompts: list[Prompt]) -> list[Generation]:
        return [self._generate_one(p) for p in prompts]

    def _generate_one(self, prompt: Prompt) -> Generation:
        import torch

        ids = self._input_ids(prompt).to(self.device)
        if ids.shape[1] + prompt.max_new_tokens > self.context_window:
            raise ValueError(
                f"prompt of {ids.shape[1]} tokens + {prompt.max_new_tokens} new tokens exceeds the "
                f"window of {self.context_window}: the arm should have truncated it"
            )
        sampling = {"do_sample": False} if self.temperature == 0 else {"do_sample": True, "temperature": self.temperature}
        model = self.model
        t0 = time.perf_counter()
        with torch.inference_mode():
            out = model.generate(
                ids, attention_mask=torch.ones_like(ids), max_new_tokens=prompt.max_new_tokens,
                pad_token_id=self._hf_tok.pad_token_id or self._hf_tok.eos_token_id, **sampling,
            )
        latency = time.perf_counter() - t0
        new = out[0, ids.shape[1]:]
        return Generation(
            text=self._hf_tok.decode(new, skip_special_tokens=True).strip(),
            prompt_tokens=int(ids.shape[1]),
            completion_tokens=int(new.shape[0]),
            latency_s=latency,
        )


os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
