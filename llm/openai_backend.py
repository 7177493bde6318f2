"""OpenAI-compatible HTTP generator: OpenAI itself, a `vllm serve` endpoint, `python -m llm.server`,
or any server speaking the OpenAI chat-completions or completions API.

- `mode: chat` sends the Prompt's messages; `mode: completions` sends the text the tokenizer's
  chat template renders (plain `system\\n\\nuser` when it has none), for servers without chat.
- Up to `max_concurrency` requests in flight (a thread pool, and a gate each attempt passes);
  answers come back in input order.
- Servers that answer one request at a time and let a new request interrupt the one in flight
  (llama.cpp's server, by default) cut streams when requests overlap. A stream cut off (ended
  without a finish_reason, or its connection closed mid-answer) while another request to the
  endpoint was in flight lowers this generator's concurrency (halved, down to 1; logged once with
  the reason) and is retried at once, without using up `max_retries`: that budget is for a broken
  server. The retries end: at concurrency 1 no attempt overlaps another, and a cut with nothing
  else in flight is an ordinary retryable fault.
- Failures worth retrying (HTTP 429, 408, 409, 5xx, timeouts, connection errors, bodies that are
  not the expected JSON) are retried up to `max_retries` times with exponential backoff and
  jitter (a server's `Retry-After` is honoured up to `backoff_max_s`); then `GenerationError`.
  Other HTTP errors (400, 401, 404, ...) fail at once: retrying cannot fix them.
- `timeout_s` bounds the whole of each attempt: connecting, waiting for the answer and reading all
  of it (the full body, or the stream to its end). An attempt still unfinished after `timeout_s`
  seconds is abandoned (its connection is shut) and counts as a timeout: retried like one, and
  when it was the last attempt, `GenerationError` names the timeout. So a server that keeps
  sending but never finishes (a stream that drips chunks forever, a body that trickles) cannot
  hold a request longer than `timeout_s` per attempt. `timeout_s` is also the limit on each
  single read (and on connecting), as the HTTP client applies it.
- `stream: true` streams the answer to measure the time to first token (`ttft_s`).
- `usage` comes from the response; when a server gives none, tokens are counted locally with
  `tokenizer` (the same tokenizer the arms budget with).
- Servers differ in details (`llm.server --dialect` imitates them for the tests), and each is
  taken as it comes: usage in a last chunk with no choices (OpenAI, asked with
  `stream_options.include_usage`), in every chunk as a running total (vLLM's
  `continuous_usage_stats`: the last one counts, never a sum), in the chunk with the
  finish_reason whether asked or not (llama.cpp), or nowhere (TGI's streams: counted locally);
  chunks with no choices, choices without a `delta` (Azure's content filter), deltas without
  content (role only, or `content: null`). The finish_reason is kept in the project's words
  (`Generation.finish_reason`: TGI's `eos_token` and `stop_sequence` are "stop"); an empty one
  (TGI's completions chunks before the last) is no finish_reason; vLLM's "abort" (a request it gave
  up on) is a cut-off answer, asked again. An HTTP error's message names
  the status and the body's message, or for a body that is not JSON (a proxy's HTML page, a
  plain-text 500) its first 200 characters.
- The API key is read from the environment variable named by `api_key_env`, never from config.

Longer than most modules on purpose: the request, streaming, retry and concurrency logic of one
HTTP backend (whole-attempt deadlines, servers that cut answers when requests overlap, dialects of
usage reporting) must agree with each other, and reads best in one place.
"""

from __future__ import annotations

import json
import logging
import os
import random
import socket
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any

from eval.registry import require
from llm.base import Generator, HFTokenizer
from llm.prompt import Generation, Prompt

log = logging.getLogger(__name__)

MODES = ("chat", "completions")
RETRY_STATUS = {408, 409, 429}  # and every 5xx
# finish_reason values of other servers in OpenAI's words (the project's): TGI's (before 2.3), Mistral's
# (the model's window reached); others are kept as given ("content_filter", "tool_calls", ...)
FINISH_REASONS = {"eos_token": "stop", "stop_sequence": "stop", "model_length": "length"}
# an answer the server gave up on (vLLM's aborted request): cut off, asked again like a stream cut short
ABORTED = {"abort"}
OPENAI_URL = "https://api.openai.com/v1"


class GenerationError(RuntimeError):
    """A request failed for good (retries exhausted, or an error retrying cannot fix)."""


class MalformedResponse(ValueError):
    """The server answered 200 with a body that is not a usable completion."""


class AttemptTimeout(TimeoutError):
    """An attempt did not finish (connect, wait, whole body or stream) within `timeout_s`."""


@dataclass
class ChatRequest(Prompt):
    """A request given as its exact chat messages and sampling parameters (a judge's question): sent as
    they are, with the generator's retries and whole-attempt timeout; no `max_tokens` unless in `params`."""

    chat: list[dict[str, str]] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)

    def messages(self) -> list[dict[str, str]]:
        return [dict(m) for m in self.chat]


class StreamCut(MalformedResponse):
    """The answer was cut off: the stream ended without a finish_reason, or the server closed the
    connection mid-answer (as a server does that interrupts a request when a new one comes in)."""


def closed_by_server(err: BaseException | None) -> bool:
    """The HTTP client's error for a connection the server closed (before or in the middle of the
    answer); not a timeout. By name: the openai client may bring its own copy of httpx."""
    return err is not None and any(c.__name__ in ("RemoteProtocolError", "ReadError")
                                   and c.__module__.startswith("httpx") for c in type(err).__mro__)


def is_cut(err: BaseException) -> bool:
    """A stream cut off, or a connection the server closed before its answer (not a timeout)."""
    import openai

    if isinstance(err, StreamCut):
        return True
    return (isinstance(err, openai.APIConnectionError) and not isinstance(err, openai.APITimeoutError)
            and closed_by_server(err.__cause__))


class _Slot:
    """One attempt's place in the gate: `overlapped` once another request was in flight beside it."""

    __slots__ = ("limit", "overlapped")

    def __init__(self, limit: int) -> None:
        self.limit, self.overlapped = limit, False


class _Gate:
    """How many requests may be in flight to the endpoint at once. Lowered (never below 1) when the
    server cuts answers because requests overlap; attempts wait here for a place."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._cond = threading.Condition()
        self._active: list[_Slot] = []

    def acquire(self) -> _Slot:
        with self._cond:
            while len(self._active) >= self.limit:
                self._cond.wait()
            slot = _Slot(self.limit)
            if self._active:  # both this one and those in flight now overlap another request
                slot.overlapped = True
                for other in self._active:
                    other.overlapped = True
            self._active.append(slot)
            return slot

    def release(self, slot: _Slot) -> bool:
        """Give the place back; whether another request was in flight beside this one."""
        with self._cond:
            self._active.remove(slot)
            self._cond.notify_all()
            return slot.overlapped

    def lower(self, slot: _Slot) -> tuple[int, int] | None:
        """Halve the limit (down to 1) for a cut seen by `slot`: `(old, new)`, or None when it is
        already 1 or was lowered since `slot` started (one overlap cuts several requests at once)."""
        with self._cond:
            if self.limit <= 1 or self.limit < slot.limit:
                return None
            old, self.limit = self.limit, max(1, self.limit // 2)
            return old, self.limit

    @property
    def in_flight(self) -> int:
        with self._cond:
            return len(self._active)


class _Attempt:
    """One HTTP attempt run in its own thread, so that the caller can abandon it at its deadline.
    Abandoning sets `cancelled` (the stream loop checks it after every chunk) and shuts down the
    attempt's socket once the response headers have come (the thread's blocked read then ends
    at once, and the server sees the client go); before that, the HTTP client's own per-read
    timeout ends the thread soon after the deadline."""

    def __init__(self) -> None:
        self.cancelled = threading.Event()
        self._lock = threading.Lock()
        self._socket: socket.socket | None = None
        self._finished = False

    def bind(self, response: Any) -> None:
        """The HTTP client's response hook: remember this attempt's socket."""
        stream = (getattr(response, "extensions", None) or {}).get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        with self._lock:
            if isinstance(sock, socket.socket) and not self._finished:
                self._socket = sock
                if self.cancelled.is_set():  # the deadline passed while the headers were on their way
                    self._shutdown()

    def finish(self) -> None:
        """The attempt is over (its response closed): its connection may serve others; hands off."""
        with self._lock:
            self._finished, self._socket = True, None

    def cancel(self) -> None:
        with self._lock:
            self.cancelled.set()
            if self._socket is not None and not self._finished:
                self._shutdown()

    def _shutdown(self) -> None:
        try:  # the OS-level shutdown (also under TLS): wakes the blocked read; the thread closes the rest
            socket.socket.shutdown(self._socket, socket.SHUT_RDWR)
        except OSError:
            pass


def retryable(err: BaseException) -> bool:
    import openai

    if isinstance(err, (AttemptTimeout, openai.APITimeoutError, openai.APIConnectionError, MalformedResponse,
                        openai.APIResponseValidationError, json.JSONDecodeError)):
        return True
    if isinstance(err, openai.APIStatusError):
        return err.status_code in RETRY_STATUS or err.status_code >= 500
    return False


def backoff_delay(attempt: int, base_s: float, max_s: float, retry_after_s: float | None = None,
                  rng: random.Random | None = None) -> float:
    """Seconds to wait before retry number `attempt` (0-based): exponential, capped, "equal jitter"
    (half fixed, half random), and never less than the server's Retry-After (itself capped)."""
    cap = min(max_s, base_s * (2 ** attempt))
    delay = cap / 2 + (rng or random).uniform(0, cap / 2)
    if retry_after_s is not None:
        delay = max(delay, min(retry_after_s, max_s))
    return delay


def _retry_after(err: BaseException) -> float | None:
    response = getattr(err, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def finish_reason(value: Any) -> str | None:
    """A server's finish_reason in the project's words: "stop", "length", or another as given; an
    empty one (TGI's completions chunks before the last) is None."""
    if not isinstance(value, str) or not value:
        return None
    return FINISH_REASONS.get(value, value)


def _error_body(err: BaseException) -> str | None:
    """What an HTTP error's body says: its message (`{"error": {"message": ...}}`, vLLM's top-level
    `message`, TGI's `{"error": "..."}`), or the start of a body that is not JSON (a proxy's HTML page)."""
    body = getattr(err, "body", None)  # the openai client's: the JSON's "error" (or all of it), else the text
    if isinstance(body, dict):
        body = body.get("message") or body.get("error") or body.get("detail") or json.dumps(body)
    if body is None or not str(body).strip():
        return None
    text = " ".join(str(body).split())
    return text[:200] + ("..." if len(text) > 200 else "")


def _body_text(err: Any) -> str:
    try:
        return err.response.text
    except Exception:  # noqa: BLE001 - a body never read (the client reads error bodies, but who knows)
        return ""


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _describe(err: BaseException) -> str:
    import openai

    status = getattr(err, "status_code", None)
    text = str(err).splitlines()[0][:200] if str(err) else ""
    if isinstance(err, openai.APIStatusError):
        detail = _error_body(err)
        if detail is not None and not _is_json(_body_text(err)):  # say what it was instead
            kind = err.response.headers.get("content-type", "").split(";")[0] or "untyped"
            detail = f"a {kind} body, not JSON: {detail}"
        text = detail or text
    return f"{type(err).__name__}" + (f" (HTTP {status})" if status else "") + (f": {text}" if text else "")


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


class OpenAICompatGenerator(Generator):
    def __init__(self, model: str, base_url: str | None = None, api_key_env: str | None = "OPENAI_API_KEY",
                 mode: str = "chat", tokenizer: str = "bundled:smollm2", context_window: int | None = None,
                 temperature: float = 0.0, top_p: float | None = None, seed: int | None = None,
                 stop: list[str] | None = None, max_concurrency: int = 8, timeout_s: float = 120.0,
                 max_retries: int = 6, backoff_base_s: float = 1.0, backoff_max_s: float = 60.0,
                 stream: bool = True, stream_usage: bool = True, extra_body: dict[str, Any] | None = None,
                 trust_remote_code: bool = False):
        from llm.transformers_backend import load_hf_tokenizer, tokenizer_context_window

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
        self._local = threading.local()  # .attempt: the _Attempt this thread is running
        self._count_lock = threading.Lock()
        self.attempts = 0  # HTTP requests sent, retries included
        self._rng = random.Random()
        self._gate = _Gate(self.max_concurrency)  # lowered when overlapping requests cut each other off
        self._lowered_logged = False
        self.concurrency_cuts = 0  # attempts cut off by an overlapping request, retried outside max_retries

    # -- interface ---------------------------------------------------------------------
    def prompt_tokens(self, prompt: Prompt) -> int:
        from llm.transformers_backend import count_prompt_tokens

        return count_prompt_tokens(self._hf_tok, prompt)

    def sampling_params(self) -> dict:
        return {"mode": self.mode, "temperature": self.temperature, "top_p": self.top_p, "seed": self.seed,
                "stop": self.stop, "extra_body": self.extra_body}

    @property
    def concurrency(self) -> int:
        """Requests allowed in flight now: `max_concurrency`, or less once overlapping requests were cut."""
        return self._gate.limit

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
                # (_attempt), which needs each response's socket: the response hook hands it over.
                http = DefaultHttpxClient(event_hooks={"response": [self._bind_response]})
                self._client = OpenAI(api_key=self._api_key, base_url=self.base_url or OPENAI_URL,
                                      timeout=self.timeout_s, max_retries=0, http_client=http)
        return self._client

    def request_body(self, prompt: Prompt) -> dict[str, Any]:
        """The request (besides model and stream flags) this prompt becomes."""
        from llm.transformers_backend import render_prompt

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
        return self._generate_with_retries(ChatRequest(user="", chat=list(messages), params=dict(params))).text

    def _generate_with_retries(self, prompt: Prompt) -> Generation:
        last: BaseException | None = None
        failures = 0  # attempts that used up the retry budget (cuts by overlapping requests do not)
        while True:
            slot = self._gate.acquire()
            try:
                return self._attempt(prompt)
            except Exception as err:  # classified below
                overlapped = self._gate.release(slot)
                done, slot = slot, None
                if not retryable(err):
                    raise GenerationError(f"{self.model_id} at {self.base_url or OPENAI_URL}: {_describe(err)} "
                                          "(not retried: retrying cannot fix this error)") from err
                if overlapped and is_cut(err):
                    self._concurrent_cut(err, done)
                    continue  # at once: the gate now lets fewer requests in
                last, failures = err, failures + 1
                if failures > self.max_retries:
                    break
                delay = backoff_delay(failures - 1, self.backoff_base_s, self.backoff_max_s, _retry_after(last),
                                      self._rng)
                log.warning("%s: %s; retry %d/%d in %.2fs", self.model_id, _describe(last), failures,
                            self.max_retries, delay)
                time.sleep(delay)
            finally:
                if slot is not None:
                    self._gate.release(slot)
        raise GenerationError(f"{self.model_id} at {self.base_url or OPENAI_URL}: gave up after "
                              f"{self.max_retries + 1} attempts; last error: {_describe(last)}") from last

    def _concurrent_cut(self, err: BaseException, slot: _Slot) -> None:
        """An answer cut off while another request was in flight: fewer requests at once, then retry."""
        with self._count_lock:
            self.concurrency_cuts += 1
        lowered = self._gate.lower(slot)
        if lowered is None:
            log.debug("%s: %s while another request was in flight; retrying (concurrency %d)", self.model_id,
                      _describe(err), self._gate.limit)
            return
        old, new = lowered
        with self._count_lock:
            first, self._lowered_logged = not self._lowered_logged, True
        log.log(logging.WARNING if first else logging.INFO,
                "%s at %s: %s while another request was in flight: the server seems to interrupt a request when "
                "a new one comes in (llama.cpp's server does, serving one at a time); lowering the concurrency "
                "from %d to %d and retrying (not counted against max_retries)%s", self.model_id,
                self.base_url or OPENAI_URL, _describe(err), old, new,
                "; set generator.max_concurrency=1 for this server" if first else "")

    def _bind_response(self, response: Any) -> None:
        attempt = getattr(self._local, "attempt", None)
        if attempt is not None:
            attempt.bind(response)

    def _attempt(self, prompt: Prompt) -> Generation:
        """One request, bounded as a whole by `timeout_s` (see the module docstring)."""
        attempt, result = _Attempt(), Future()

        def run() -> None:
            self._local.attempt = attempt
            try:
                result.set_result(self._request(prompt, attempt))
            except BaseException as err:  # noqa: BLE001 - handed to the waiting caller
                result.set_exception(err)
            finally:
                attempt.finish()
                self._local.attempt = None

        threading.Thread(target=run, name="openai-attempt", daemon=True).start()
        try:
            return result.result(timeout=self.timeout_s)
        except FutureTimeout:
            attempt.cancel()
            raise AttemptTimeout(f"no complete answer within timeout_s={self.timeout_s:g} s (the whole attempt: "
                                 "connecting, waiting and reading the full answer); abandoned") from None

    def _request(self, prompt: Prompt, attempt: _Attempt | None = None) -> Generation:
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
            return self._generation(prompt, text, getattr(response, "usage", None), latency, None, finish)
        if self.stream_usage:
            extra["stream_options"] = {"include_usage": True}
        pieces, usage, ttft, finish = [], None, None, None
        stream = api.create(model=self.model_id, stream=True, **body, **extra)
        try:
            for chunk in stream:
                if attempt is not None and attempt.cancelled.is_set():
                    raise AttemptTimeout("abandoned at the deadline")  # nobody waits for this one any more
                if getattr(chunk, "usage", None) is not None:  # a running total where sent in every chunk
                    usage = chunk.usage
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
            raise StreamCut(f"the connection closed mid-answer (cut off): {_describe(err)}") from err
        finally:
            stream.close()
        if finish is None:  # every complete answer ends with a finish_reason
            raise StreamCut("the stream ended without a finish_reason (cut off)")
        if finish in ABORTED:
            raise StreamCut(f"the server aborted the answer (finish_reason {finish!r}): cut off")
        return self._generation(prompt, "".join(pieces), usage, time.perf_counter() - t0, ttft, finish)

    def _text(self, response: Any) -> str:
        choices = getattr(response, "choices", None)
        if not isinstance(choices, list) or not choices:
            raise MalformedResponse(f"response has no choices: {str(response)[:200]!r}")
        if self.mode == "chat":
            message = getattr(choices[0], "message", None)
            text = getattr(message, "content", None)
            if text is None and getattr(message, "refusal", None):
                text = message.refusal
        else:
            text = getattr(choices[0], "text", None)
        if not isinstance(text, str):
            raise MalformedResponse(f"response choice has no text: {str(choices[0])[:200]!r}")
        return text

    def _generation(self, prompt: Prompt, text: str, usage: Any, latency: float, ttft: float | None,
                    finish: str | None) -> Generation:
        prompt_tokens = getattr(usage, "prompt_tokens", None)
        completion_tokens = getattr(usage, "completion_tokens", None)
        if not isinstance(prompt_tokens, int) or not isinstance(completion_tokens, int):
            # No usage from the server: count with the configured tokenizer.
            with self._count_lock:  # one tokenizer shared by the request threads
                prompt_tokens = self.prompt_tokens(prompt)
                completion_tokens = self.tokenizer.count(text) if text else 0
        return Generation(text=text.strip(), prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                          latency_s=latency, ttft_s=ttft, finish_reason=finish)
