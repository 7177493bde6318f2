"""The LLM judge's way to ask a model: eval.metrics.judge's `Ask`, implemented by the OpenAI-compatible
backend (llm/openai_backend.py: its key handling; and llm/retrying.py: its retries with backoff, its
whole-attempt timeout). experiments/run.py builds the runner's judge from the `judge` config section with
`build_judge`; the `experiments.score` CLI's default judge factory is `judge_from_options`.

The API key comes only from the environment: the first of `api_key_envs` that is set
(JUDGE_API_KEY, then OPENAI_API_KEY); local servers need none. It is never logged.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from eval.metrics.judge import Judge
from llm.openai_backend import OpenAICompatGenerator

API_KEY_ENVS = ("JUDGE_API_KEY", "OPENAI_API_KEY")


def judge_generator(model: str, base_url: str | None = None, timeout_s: float = 120.0, max_retries: int = 3,
                    api_key_envs: Sequence[str] = API_KEY_ENVS, backoff_base_s: float = 1.0,
                    backoff_max_s: float = 60.0) -> OpenAICompatGenerator:
    key_env = next((name for name in api_key_envs if os.environ.get(name)), api_key_envs[-1] if api_key_envs else None)
    return OpenAICompatGenerator(model=model, base_url=base_url, api_key_env=key_env, mode="chat", temperature=0.0,
                                 # the judge budgets nothing; the tokenizer only counts usage a server omits
                                 context_window=1_000_000,
                                 max_concurrency=1, timeout_s=timeout_s, max_retries=max_retries,
                                 backoff_base_s=backoff_base_s, backoff_max_s=backoff_max_s, stream=False)


def build_judge(model: str, base_url: str | None = None, cache_path: str | os.PathLike | None = None,
                timeout_s: float = 120.0, max_retries: int = 3, api_key_envs: Sequence[str] = API_KEY_ENVS,
                backoff_base_s: float = 1.0, backoff_max_s: float = 60.0) -> Judge:
    """A Judge asking `model` at `base_url` (None: api.openai.com), caching judgments at `cache_path`."""
    gen = judge_generator(model, base_url, timeout_s, max_retries, api_key_envs, backoff_base_s, backoff_max_s)
    judge = Judge(gen.ask, model=model, cache_path=Path(cache_path) if cache_path else None)
    judge.base_url = gen.base_url
    return judge


def judge_from_options(model: str, base_url: str | None, cache_path: str | os.PathLike | None, max_retries: int,
                       timeout_s: float) -> Judge:
    """experiments.score's judge factory (its --judge-* options)."""
    return build_judge(model, base_url, cache_path, timeout_s=timeout_s, max_retries=max_retries)
