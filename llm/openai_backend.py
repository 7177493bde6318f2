"""OpenAI-compatible HTTP generator: OpenAI itself, a `vllm serve` endpoint, `python -m llm.server`,
or any server speaking the OpenAI chat-completions or completions API.

- `mode: chat` sends the Prompt's messages; `mode: completions` sends the text the tokenizer's
  chat template renders (plain `system\\n\\nuser` when it has none), for servers without chat.
- Up to `max_concurrency` requests in flight (a thread pool, and a gate each attempt passes);
  answers come back in input order. Retries, the gate (lowered when a server cuts answers because
  requests overlap) and the whole-attempt deadline `timeout_s` are llm/retrying.py's `RetryingCalls`;
  a request that fails for good raises `GenerationError`. `timeout_s` is also the limit on each
  single read (and on connecting), as the HTTP client applies it.
- `stream: true` streams the answer to measure the time to first token (`ttft_s`).
- Overlapping requests are charged machine time, not waiting time: each its share of the wall clock among the
  requests in flight (`Generation.latency_s`, llm/service_time.py); `user_latency_s` is what its user waited.
- `usage` comes from the response, read in every shape a server sends it (llm/usage.py: OpenAI, vLLM with and
  without prompt-token details, OpenRouter, LiteLLM, Anthropic's counting under either names, llama.cpp's
  `timings.cache_n` and `tokens_cached`); when a server gives none, tokens are counted locally with
  `tokenizer` (the same tokenizer the arms budget with). The prompt tokens it reports as read from the
  provider's prompt cache or written to it are kept (`Generation.cached_prompt_tokens`, `cache_write_tokens`) and
  priced at the price's cached and write rates (llm/cost.py); counts it cannot read are dropped with a warning
  (logged once per kind), never the answer.
- Servers differ in details (testsupport/fake_servers.py imitates them for the tests), and each is
  taken as it comes: usage in a last chunk with no choices (OpenAI, asked with
  `stream_options.include_usage`), in every chunk as a running total (vLLM's
  `continuous_usage_stats`: the last one counts, never a sum), in the chunk with the
  finish_reason whether asked or not (llama.cpp), or nowhere (TGI's streams: counted locally);
  chunks with no choices, choices without a `delta` (Azure's content filter), deltas without
  content (role only, or `content: null`). The finish_reason is kept in the project's words
  (`Generation.finish_reason`: TGI's `eos_token` and `stop_sequence` are "stop"); an empty one
  (TGI's completions chunks before the last) is no finish_reason; vLLM's "abort" (a request it gave
  up on) is a cut-off answer (`StreamCut`), asked again. A stream that ends without a finish_reason,
  or whose connection the server closes mid-answer, is cut off too. With `stop` strings (which the
  server applies), an answer that came back as a bare lead-in ("The two rules:") ends "lead_in", a cut
  answer, as the transformers backend's would (llm/stopping.py).
- The API key is read from the environment variable named by `api_key_env`, never from config.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from eval.registry import require
from llm.base import Generator, HFTokenizer
from llm.prompt import Generation, Prompt
from llm.retrying import (
    Attempt,
    AttemptTimeout,
    GenerationError,
    MalformedResponse,
    RetryingCalls,
    StreamCut,
    closed_by_server,
    describe_error,
)
from llm.service_time import ServiceShares
from llm.stopping import finish_after_stop
from llm.usage import read_usage

log = logging.getLogger(__name__)

__all__ = ["ChatRequest", "GenerationError", "OpenAICompatGenerator", "finish_reason", "resolve_api_key"]

MODES = ("chat", "completions")
# finish_reason values of other servers in OpenAI's words (the project's): TGI's (before 2.3), Mistral's
# (the model's window reached); others are kept as given ("content_filter", "tool_calls", ...)
FINISH_REASONS = {"eos_token": "stop", "stop_sequence": "stop", "model_length": "length"}
# an answer the server gave up on (vLLM's aborted request): cut off, asked again like a stream cut short
ABORTED = {"abort"}
OPENAI_URL = "https://api.openai.com/v1"


@dataclass
class ChatRequest(Prompt):
    """A request given as its exact chat messages and sampling parameters (a judge's question): sent as
    they are, with the generator's retries and whole-attempt timeout; no `max_tokens` unless in `params`."""

    chat_messages: list[dict[str, str]] = field(default_factory=list)  # not `chat`: Prompt's flag of that name
    params: dict[str, Any] = field(default_factory=dict)

    def messages(self) -> list[dict[str, str]]:
        return [dict(m) for m in self.chat_messages]


def finish_reason(value: Any) -> str | None:
    """A server's finish_reason in the project's words: "stop", "length", or another as given; an
    empty one (TGI's completions chunks before the last) is None."""
    if not isinstance(value, str) or not value:
        return None
    return FINISH_REASONS.get(value, value)


def resolve_api_key(api_key_env: str | None, base_url: str | None) -> str:
    """The key from the environment. Local servers need none ("EMPTY" is sent); OpenAI does."""
    key = os.environ.get(api_key_env) if api_key_env else None
    if key:
        return key
    if base_url is None or "api.openai.com" in base_url:
        raise ValueError(
            f"the OpenAI API needs a key: set the environment variable {api_key_env or 'OPENAI_API_KEY'} "
            "(generator.api_key_env names it; keys are never read from config files)"
        )
    if api_key_env:
        log.info("environment variable %s is not set: sending no API key to %s", api_key_env, base_url)
    return "EMPTY"


def endpoint_of(url: str) -> str:
    """`url` without user, password, query or fragment: what may be written beside a cached answer."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname or ''}{port}{parts.path}"


class OpenAICompatGenerator(Generator):
    def __init__(self, model: str, base_url: str | None = None, api_key_env: str | None = "OPENAI_API_KEY",
                 mode: str = "chat", tokenizer: str = "bundled:smollm2", context_window: int | None = None,
                 temperature: float = 0.0, top_p: float | None = None, seed: int | None = None,
                 stop: list[str] | None = None, max_concurrency: int = 8, timeout_s: float = 120.0,
                 max_retries: int = 6, backoff_base_s: float = 1.0, backoff_max_s: float = 60.0,
                 stream: bool = True, stream_usage: bool = True, extra_body: dict[str, Any] | None = None,
                 trust_remote_code: bool = False):
        from llm.hf_tokenizer import load_hf_tokenizer, tokenizer_context_window

        if mode not in MODES:
            raise ValueError(f"generator.mode={mode!r}; allowed: {', '.join(MODES)}")
        if max_concurrency < 1:
            raise ValueError(f"generator.max_concurrency must be >= 1, got {max_concurrency}")
        if max_retries < 0:
            raise ValueError(f"generator.max_retries must be >= 0, got {max_retries}")
        self.model_id = model
        self.base_url = base_url.rstrip("/") if base_url else None
        self.mode, self.temperature, self.top_p, self.seed, self.stop = mode, temperature, top_p, seed, stop
        self.max_concurrency, self.timeout_s, self.max_retries = (int(max_concurrency), float(timeout_s),
                                                                  int(max_retries))
        self.backoff_base_s, self.backoff_max_s = float(backoff_base_s), float(backoff_max_s)
        self.stream, self.stream_usage = bool(stream), bool(stream_usage)
        self.extra_body = dict(extra_body or {})
        self.tokenizer_spec = tokenizer
        self._hf_tok = load_hf_tokenizer(tokenizer, trust_remote_code)
        self.tokenizer = HFTokenizer(self._hf_tok)
        self.context_window = tokenizer_context_window(self._hf_tok, tokenizer, context_window)
        self._api_key = resolve_api_key(api_key_env, self.base_url)
        self.api_key_env = api_key_env
        self._client = None
        self._client_lock = threading.Lock()
        self._count_lock = threading.Lock()
        self._warned: set[str] = set()  # kinds of unreadable usage already logged
        self._shares = ServiceShares()  # each request's share of the wall time among those in flight
        self.attempts = 0  # HTTP requests sent, retries included
        self._calls = RetryingCalls(model, self.base_url or OPENAI_URL, self.max_concurrency, self.timeout_s,
                                    self.max_retries, self.backoff_base_s, self.backoff_max_s)

    # -- interface ---------------------------------------------------------------------
    def prompt_tokens(self, prompt: Prompt) -> int:
        from llm.hf_tokenizer import count_prompt_tokens

        return count_prompt_tokens(self._hf_tok, prompt)

    def sampling_params(self) -> dict:
        return {"mode": self.mode, "temperature": self.temperature, "top_p": self.top_p, "seed": self.seed,
                "stop": self.stop, "extra_body": self.extra_body}

    def timing_context(self) -> dict:
        """What an answer's timings depend on besides the prompt: the endpoint (scheme, host, port and path; no
        credentials or query) and how requests are sent (mode, concurrency, streaming)."""
        return {"backend": "openai_compat", "endpoint": endpoint_of(self.base_url or OPENAI_URL), "mode": self.mode,
                "max_concurrency": self.max_concurrency, "stream": self.stream}

    @property
    def concurrency(self) -> int:
        """Requests allowed in flight now: `max_concurrency`, or less once overlapping requests were cut."""
        return self._calls.concurrency

    @property
    def concurrency_cuts(self) -> int:
        """Attempts cut off by an overlapping request (retried outside `max_retries`)."""
        return self._calls.concurrency_cuts

    def generate(self, prompts: list[Prompt]) -> list[Generation]:
        if len(prompts) <= 1 or self.concurrency == 1:
            return [self._generate_with_retries(p) for p in prompts]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(prompts))) as pool:
            return list(pool.map(self._generate_with_retries, prompts))

    # -- requests ----------------------------------------------------------------------
    @property
    def client(self):
        with self._client_lock:
            if self._client is None:
                openai = require("openai", "generator.backend=openai", "make install")
                DefaultHttpxClient, OpenAI = openai.DefaultHttpxClient, openai.OpenAI

                # Retries are ours (bounded, with jitter, also on malformed bodies): the client's are off.
                # `timeout` is the client's per-read (and connect) limit; the whole-attempt limit is ours
                # (RetryingCalls), which needs each response's socket: the response hook hands it over.
                http = DefaultHttpxClient(event_hooks={"response": [self._calls.bind_response]})
                self._client = OpenAI(api_key=self._api_key, base_url=self.base_url or OPENAI_URL,
                                      timeout=self.timeout_s, max_retries=0, http_client=http)
        return self._client

    def request_body(self, prompt: Prompt) -> dict[str, Any]:
        """The request (besides model and stream flags) this prompt becomes."""
        from llm.hf_tokenizer import render_prompt

        body: dict[str, Any] = {"max_tokens": prompt.max_new_tokens, "temperature": self.temperature}
        if self.mode == "chat":
            body["messages"] = prompt.messages()
        else:
            body["prompt"] = render_prompt(self._hf_tok, prompt)
        for key in ("top_p", "seed", "stop"):
            if getattr(self, key) is not None:
                body[key] = getattr(self, key)
        if isinstance(prompt, ChatRequest):
            del body["max_tokens"]
            body.update(prompt.params)
        elif prompt.repetition_penalty is not None and (self.base_url or OPENAI_URL).rstrip("/") != OPENAI_URL:
            body["repetition_penalty"] = prompt.repetition_penalty  # vLLM-style servers; OpenAI's API has none
        return body

    def ask(self, messages: list[dict[str, str]], **params: Any) -> str:
        """The reply to these exact chat messages (eval.metrics.judge's `Ask`): retried, each attempt
        bounded by `timeout_s`; raises GenerationError when no answer came."""
        if self.mode != "chat":
            raise ValueError("ask() sends chat messages: use generator mode chat")
        return self._generate_with_retries(ChatRequest(user="", chat_messages=list(messages), params=dict(params))).text

    def _generate_with_retries(self, prompt: Prompt) -> Generation:
        return self._calls.call(lambda attempt: self._request(prompt, attempt))

    def _request(self, prompt: Prompt, attempt: Attempt | None = None) -> Generation:
        """One attempt, charged its share of the wall time among the requests in flight (llm/service_time.py):
        `latency_s` the machine time, `user_latency_s` what its user waited."""
        ticket = self._shares.start()
        try:
            gen = self._send(prompt, attempt)
        finally:
            share = self._shares.stop(ticket)
        return replace(gen, latency_s=min(share, gen.latency_s), user_latency_s=gen.latency_s)

    def _send(self, prompt: Prompt, attempt: Attempt | None = None) -> Generation:
        body = self.request_body(prompt)
        api = self.client.chat.completions if self.mode == "chat" else self.client.completions
        # parameters the openai client does not know travel in extra_body
        extra_body = {**self.extra_body, **({"repetition_penalty": body.pop("repetition_penalty")}
                                            if "repetition_penalty" in body else {})}
        extra = {"extra_body": extra_body} if extra_body else {}
        with self._client_lock:
            self.attempts += 1
        t0 = time.perf_counter()
        if not self.stream:
            response = api.create(model=self.model_id, **body, **extra)
            latency = time.perf_counter() - t0
            text = self._text(response)
            finish = finish_reason(getattr(response.choices[0], "finish_reason", None))
            if finish in ABORTED:
                raise StreamCut(f"the server aborted the answer (finish_reason {finish!r}): cut off")
            return self._generation(prompt, text, getattr(response, "usage", None), latency, None, finish,
                                    _cache_extras(response))
        if self.stream_usage:
            extra["stream_options"] = {"include_usage": True}
        pieces, usage, ttft, finish, extras = [], None, None, None, {}
        stream = api.create(model=self.model_id, stream=True, **body, **extra)
        try:
            for chunk in stream:
                if attempt is not None and attempt.cancelled.is_set():
                    raise AttemptTimeout("abandoned at the deadline")  # nobody waits for this one any more
                if getattr(chunk, "usage", None) is not None:  # a running total where sent in every chunk
                    usage = chunk.usage
                extras.update(_cache_extras(chunk))  # llama.cpp's timings, in the chunk with the finish_reason
                choices = getattr(chunk, "choices", None)
                if choices is None:
                    raise MalformedResponse("stream chunk without `choices`")
                for choice in choices:  # none in a usage chunk (or Azure's first)
                    if self.mode == "chat":  # no delta in Azure's content-filter choices; no content in a role chunk
                        piece = getattr(getattr(choice, "delta", None), "content", None)
                    else:
                        piece = getattr(choice, "text", None)
                    if piece:
                        if ttft is None:
                            ttft = time.perf_counter() - t0
                        pieces.append(piece)
                    finish = finish_reason(getattr(choice, "finish_reason", None)) or finish
        except Exception as err:  # the server closed the connection mid-answer, or re-raised
            if not closed_by_server(err):
                raise
            if attempt is not None and attempt.cancelled.is_set():
                raise AttemptTimeout("abandoned at the deadline") from err
            raise StreamCut(f"the connection closed mid-answer (cut off): {describe_error(err)}") from err
        finally:
            stream.close()
        if finish is None:  # every complete answer ends with a finish_reason
            raise StreamCut("the stream ended without a finish_reason (cut off)")
        if finish in ABORTED:
            raise StreamCut(f"the server aborted the answer (finish_reason {finish!r}): cut off")
        return self._generation(prompt, "".join(pieces), usage, time.perf_counter() - t0, ttft, finish, extras)

    def _text(self, response: Any) -> str:
        choices = getattr(response, "choices", None)
        if not isinstance(choices, list) or not choices:
            raise MalformedResponse(f"response has no choices: {str(response)[:200]!r}")
        if self.mode == "chat":
            message = getattr(choices[0], "message", None)
            text = getattr(message, "content", None)
            refusal = getattr(message, "refusal", None)
            if text is None and refusal:
                text = refusal
        else:
            text = getattr(choices[0], "text", None)
        if not isinstance(text, str):
            raise MalformedResponse(f"response choice has no text: {str(choices[0])[:200]!r}")
        return text

    def _generation(self, prompt: Prompt, text: str, usage: Any, latency: float, ttft: float | None,
                    finish: str | None, extras: dict[str, Any] | None = None) -> Generation:
        read = read_usage(usage, extras, prompt_includes_cache=False if self._anthropic_counting else None)
        if read.warning:
            self._warn_once(read.shape, read.warning)
        prompt_tokens, completion_tokens = read.prompt_tokens, read.completion_tokens
        if prompt_tokens is None or completion_tokens is None:
            # No usage from the server: count with the configured tokenizer.
            with self._count_lock:  # one tokenizer shared by the request threads
                prompt_tokens = self.prompt_tokens(prompt)
                completion_tokens = self.tokenizer.count(text) if text else 0
        # a server applies stop strings itself: an answer it stopped right after a bare lead-in is a cut answer
        finish = finish_after_stop(text, finish, self.stop if not isinstance(prompt, ChatRequest) else None)
        cached, written = read.cached_tokens, read.cache_write_tokens
        if (cached or 0) + (written or 0) > prompt_tokens:  # counted locally: the server's cache counts cannot fit
            self._warn_once("local count", f"usage ({read.shape}): {cached} cached + {written} written tokens "
                            f"exceed the {prompt_tokens} prompt tokens counted; priced as uncached")
            cached = written = None
        return Generation(text=text.strip(), prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                          latency_s=latency, ttft_s=ttft, finish_reason=finish, cached_prompt_tokens=cached,
                          cache_write_tokens=written)

    @property
    def _anthropic_counting(self) -> bool:
        """Anthropic's OpenAI-compatible endpoint counts the prompt without its cached tokens."""
        return bool(self.base_url) and "api.anthropic.com" in str(self.base_url)

    def _warn_once(self, kind: str, message: str) -> None:
        with self._count_lock:
            if kind in self._warned:
                return
            self._warned.add(kind)
        log.warning("%s: %s (further answers of this kind are not logged)", self.model_id, message)


def _cache_extras(obj: Any) -> dict[str, Any]:
    """A response's or chunk's top-level fields that count a server's cached prompt tokens (llama.cpp)."""
    fields = obj if isinstance(obj, Mapping) else (getattr(obj, "model_extra", None) or {})
    return {k: fields[k] for k in ("timings", "tokens_cached") if fields.get(k) is not None}
