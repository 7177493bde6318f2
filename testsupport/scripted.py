"""A scripted model: what llm/server.py asks of a backend (the transformers backend's `generate`, `complete`,
`stream`, `prompt_tokens`, `tokenizer`, `model_id`, `context_window`), answering with text that is a fixed
function of the prompt. The test double behind the fake servers (testsupport/fake_servers.py) and the
question-generation tests: the HTTP server, its faults and dialects and the clients on the other side are
real; only the model's answers are scripted, so a request costs milliseconds instead of SmolLM2's seconds.

What stays real: prompts are rendered with a real tokenizer's chat template (SmolLM2's by default) and
counted with it, as the transformers backend renders and counts them (`llm.hf_tokenizer.render_prompt`,
`count_prompt_tokens`); an answer is that tokenizer's tokens of the scripted text, cut at the request's token
limit as a model's answer is (`finish_reason` "length", else "stop" with an end-of-sequence token counted, as
`generate` counts it); a stream yields the answer token by token, `token_s` seconds apart (decoding time, for
tests that need requests to overlap). A chat prompt and the same rendered text sent to `/v1/completions` get
the same answer and usage, as they do from a real model.

    ScriptedModel()                         # every prompt: a sentence of 3-30 words drawn from its hash
    ScriptedModel({"capital of France": "The capital of France is Paris."})
                                            # the reply of the first key found in the rendered prompt, else
                                            # the hashed sentence
    ScriptedModel(lambda prompt: "Paris.")  # your own replies: a function of the Prompt (a raw completions
                                            # text comes as Prompt(text, chat=False)); raising fails the request
                                            # (or subclass it and override `reply`)
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Iterator, Mapping

from llm.prompt import Generation, Prompt

WORDS = ("the", "river", "keeper", "logged", "a", "storm", "at", "dawn", "and", "ferry", "left", "noon", "bridge",
         "over", "valley", "was", "built", "in", "stone", "by", "an", "engineer", "who", "lived", "near", "harbour",
         "of", "grain", "timber", "ships", "arrive", "each", "spring", "lamp", "burns", "oil", "tower", "stands",
         "on", "hill", "above", "old", "mill", "grinds", "oats", "for", "village", "library", "opened", "reading",
         "room", "seats", "two", "hundred", "readers", "island", "church", "round", "north", "south", "east", "west")


def hashed_sentence(text: str) -> str:
    """A sentence of 3 to 30 words, the same for the same text."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    n = 3 + digest[0] % 28
    words = [WORDS[digest[1 + i % 31] * (i + 1) % len(WORDS)] for i in range(n)]
    return " ".join(words).capitalize() + "."


class ScriptedStream:
    """Text pieces of one scripted answer, `token_s` apart; `generation` once exhausted (as the transformers
    backend's `TokenStream`)."""

    def __init__(self, pieces: list[str], gen: Generation, token_s: float):
        self._pieces, self._gen, self._token_s = pieces, gen, token_s
        self.generation: Generation | None = None

    def __iter__(self) -> Iterator[str]:
        t0 = time.perf_counter()
        ttft = None
        for piece in self._pieces:
            if self._token_s:
                time.sleep(self._token_s)
            if ttft is None:
                ttft = time.perf_counter() - t0
            yield piece
        self._gen.latency_s = time.perf_counter() - t0
        self._gen.ttft_s = ttft
        self.generation = self._gen


class ScriptedModel:
    """See the module docstring. `prompts` lists what was asked (Prompts; a completions text as
    Prompt(text, chat=False)), in order."""

    generates = True

    def __init__(self, reply: Mapping[str, str] | Callable[[Prompt], str] | None = None, *,
                 tokenizer: str = "bundled:smollm2", model_id: str = "scripted", context_window: int = 8192,
                 token_s: float = 0.0):
        self.reply_fn = reply
        self.tokenizer_spec = tokenizer
        self.model_id = model_id
        self.context_window = context_window
        self.token_s = token_s
        self.prompts: list[Prompt] = []
        self._lock = threading.Lock()
        self._tokenizer = None

    # -- what the product asks of a backend ---------------------------------------------------------------
    @property
    def hf(self):
        from llm.hf_tokenizer import load_hf_tokenizer

        return load_hf_tokenizer(self.tokenizer_spec)

    @property
    def tokenizer(self):
        from llm.base import HFTokenizer

        if self._tokenizer is None:
            self._tokenizer = HFTokenizer(self.hf)
        return self._tokenizer

    @property
    def model(self) -> ScriptedModel:
        """No weights to load (the server touches `backend.model` before it opens its port)."""
        return self

    def sampling_params(self) -> dict:
        return {"temperature": 0.0, "scripted": True}

    def prompt_tokens(self, prompt: Prompt) -> int:
        from llm.hf_tokenizer import count_prompt_tokens

        return count_prompt_tokens(self.hf, prompt)

    def generate(self, prompts: list[Prompt]) -> list[Generation]:
        return [self._whole(p, p.max_new_tokens) for p in prompts]

    def complete(self, text: str, max_new_tokens: int = 64) -> Generation:
        return self._whole(Prompt(text, chat=False, max_new_tokens=max_new_tokens), max_new_tokens)

    def stream(self, prompt: Prompt | str, max_new_tokens: int | None = None) -> ScriptedStream:
        if not isinstance(prompt, Prompt):
            limit = 64 if max_new_tokens is None else max_new_tokens
            prompt = Prompt(prompt, chat=False, max_new_tokens=limit)
        limit = prompt.max_new_tokens if max_new_tokens is None else max_new_tokens
        pieces, gen = self._answer(prompt, limit)
        return ScriptedStream(pieces, gen, self.token_s)

    # -- the script ---------------------------------------------------------------------------------------
    def reply(self, prompt: Prompt) -> str:
        """The whole scripted answer (before the token limit cuts it)."""
        if callable(self.reply_fn):
            return self.reply_fn(prompt)
        from llm.hf_tokenizer import render_prompt

        rendered = render_prompt(self.hf, prompt)
        for key, reply in (self.reply_fn or {}).items():
            if key in rendered:
                return reply
        return hashed_sentence(rendered)

    def _whole(self, prompt: Prompt, limit: int) -> Generation:
        t0 = time.perf_counter()
        _, gen = self._answer(prompt, limit)
        if self.token_s:
            time.sleep(self.token_s * gen.completion_tokens)
        gen.latency_s = time.perf_counter() - t0
        return gen

    def _answer(self, prompt: Prompt, limit: int) -> tuple[list[str], Generation]:
        with self._lock:
            self.prompts.append(prompt)
        n_prompt = self.prompt_tokens(prompt)
        if n_prompt + limit > self.context_window:  # as the transformers backend refuses it
            raise ValueError(f"prompt of {n_prompt} tokens + {limit} new tokens exceeds the window of "
                             f"{self.context_window}: the arm should have truncated it")
        ids = self.hf(self.reply(prompt), add_special_tokens=False)["input_ids"]
        if len(ids) + 1 <= limit:  # the answer and its end-of-sequence token fit
            kept, n_completion, finish = ids, len(ids) + 1, "stop"
        else:
            kept, n_completion, finish = ids[:limit], limit, "length"
        pieces, before = [], ""
        for i in range(len(kept)):
            now = self.hf.decode(kept[: i + 1], skip_special_tokens=True)
            pieces.append(now[len(before):])
            before = now
        gen = Generation(text=before.strip(), prompt_tokens=n_prompt, completion_tokens=n_completion, latency_s=0.0,
                         finish_reason=finish)
        return [p for p in pieces if p], gen
