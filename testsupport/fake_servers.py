"""A fault-injecting OpenAI-compatible server that can answer as five servers do: the test double
the tests and perf scripts run clients against. Built on the product's server (llm/server.py: a real
model behind the OpenAI API) by adding faults, dialects and an interrupting mode:

    python -m testsupport.fake_servers --model bundled:smollm2 --port 8000 --faults 429,500 --dialect vllm

(from the repository root; every flag of `python -m llm.server` too). In code: `FakeOpenAIServer(backend,
faults=..., dialect=..., interrupt_on_new_request=...)`, a context manager like `OpenAICompatServer`.

Fault injection. A fault applies to one generation request (`/v1/chat/completions` or
`/v1/completions`); they are taken in order from a queue:

- constructor `faults=["429", "500"]`, CLI `--faults 429,500`, or at run time
  `POST /_faults {"faults": ["429", "hang:5"]}` (appends; `{"clear": true}` empties the queue),
- or per request: the header `X-Fault: 429` (takes precedence over the queue).

Fault specs (`kind` or `kind:seconds`):

    429            HTTP 429 rate limit (with `Retry-After: 0`)
    500, 503       HTTP 500 / 503 with an error body in the dialect's shape (see below)
    502_html       HTTP 502 with an HTML page for a body, as a reverse proxy (nginx) sends when the
                   server behind it is down
    500_text       HTTP 500 with a plain-text body ("Internal Server Error"), as many web frameworks send
    malformed      HTTP 200 whose body is not valid JSON
    drop           close the connection without answering
    hang[:s]       wait s seconds (default 30) before answering normally (clients time out)
    slow[:s]       wait s seconds (default 0.5) before answering normally
    slow_stream[:s]  a streamed answer waits s seconds (default 0.2) before every chunk
    drip[:s]       an answer that never finishes: a streamed one sends a content chunk (".") every s
                   seconds (default 0.3), a non-streamed one sends its 200 headers and then one byte of
                   JSON whitespace every s seconds; either goes on until the client disconnects (the
                   server notices at its next write and stops quietly: status "client gone" in the
                   log), the server stops, or DRIP_MAX_S (10 minutes) pass. Every read a client makes
                   gets data within s seconds, so only a bound on the whole request ends it.
    no_usage       a normal answer without the `usage` field
    cut            the answer cut off, as an interrupted one (see interrupting mode): a streamed answer
                   ends after its first piece without a finish_reason, a non-streamed one closes the
                   connection without an answer
    abort          the answer ends early with finish_reason "abort", as vLLM's does when it aborts a
                   request (preempted, engine shutting down): its first piece only, streamed or not

Dialects: the OpenAI-compatible servers in use answer differently in details that a client must
tolerate. `dialect=` (CLI `--dialect`; per request the header `X-Dialect`, which takes precedence)
makes this server answer as one of them:

    openai    the OpenAI API (the default; llm/server.py's `OpenAIShapes`).
    vllm      `vllm serve`: as openai, and with `stream_options.continuous_usage_stats` (beside
              include_usage) every chunk carries the usage so far (the prompt's tokens, and as
              completion tokens the pieces sent so far, each at least one token; exact from the
              finish_reason chunk on). Error bodies are older vLLM's, at the top level:
              `{"object": "error", "message": ..., "type": ..., "code": ...}`.
    llamacpp  llama.cpp's llama-server: the role chunk is `{"role": "assistant", "content": null}`,
              and the chunk with the finish_reason carries the usage and llama.cpp's `timings`, asked
              or not, with no usage chunk after it (as releases did before they honoured
              stream_options). Non-streamed answers carry `timings` too.
    tgi       Hugging Face TGI 2.0-2.2: finish_reason `eos_token` (not `stop`) or `length`. A stream
              never sends usage (even when asked) nor a role or finish-only chunk: every delta is
              `{"role": "assistant", "content": piece}` and the last one carries the finish_reason;
              completions chunks say `finish_reason: ""` until the last. Non-streamed answers have
              usage. Error bodies are `{"error": "message", "error_type": ...}` (a string, not an object).
    azure     Azure OpenAI with its asynchronous content filter: a stream opens with a chunk whose
              `choices` is empty (only `prompt_filter_results`), then a role-only delta
              (`{"role": "assistant"}`), the pieces, the finish_reason, and then a choice without any
              `delta` (only `content_filter_results`); usage as openai.

The faults apply in every dialect (the chunk a `cut` stream sends has the dialect's shape).

Prompt caching, `--prompt-caching` (constructor `prompt_caching=True`): the usage bills as OpenAI's automatic
prompt caching does, in `usage.prompt_tokens_details.cached_tokens` (vLLM's server reports it in the same
field): the longest prefix of the prompt's tokens, in whole blocks of `cache_block` tokens (128) and at least
`cache_min_tokens` long (1,024), that an earlier request's prompt began with, counts as read from the cache;
every prompt's own prefixes are remembered for later requests. It is bookkeeping only (the model still reads
the whole prompt): the double prices what a provider would bill, for clients and cost code to be tested against.

Interrupting mode, `--interrupt-on-new-request` (constructor `interrupt_on_new_request=True`): like
llama.cpp's Python server (whose default it is), a request that comes in while another generates
interrupts that one: a streamed answer ends at once without a finish_reason (`data: [DONE]` after
the pieces sent so far), a non-streamed one closes its connection without an answer. Requests still
run one at a time, in turn. Clients that send requests concurrently see their answers cut off;
`GET /_stats` counts them as `interrupted`, beside the product server's counts and the faults still
queued (`faults_queued`). The request log's lines name each request's fault (`fault`).
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from llm.prompt import Generation, Prompt
from llm.server import (
    STOPPED,
    OpenAICompatServer,
    OpenAIHandler,
    OpenAIShapes,
    RequestError,
    answer_id,
    argument_parser,
    serve,
    usage_of,
)

FAULTS = {"429": None, "500": None, "503": None, "502_html": None, "500_text": None, "malformed": None, "drop": None,
          "no_usage": None, "cut": None, "abort": None, "hang": 30.0, "slow": 0.5, "slow_stream": 0.2, "drip": 0.3}
NGINX_502 = (b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1>"
             b"</center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n")
DRIP_MAX_S = 600.0  # a `drip` answer gives up (its thread ends) after this long even if the client stays
ERROR_FAULTS = {"429": "rate limit reached (injected)", "500": "internal error (injected)",
                "503": "service unavailable (injected)"}


class Interrupted(Exception):
    """A non-streamed generation interrupted by a newer request (interrupting mode)."""


def parse_fault(spec: str) -> tuple[str, float | None]:
    """`"hang:5"` -> `("hang", 5.0)`; `"429"` -> `("429", None)`. Unknown kinds raise ValueError."""
    kind, _, arg = str(spec).strip().partition(":")
    if kind not in FAULTS:
        raise ValueError(f"unknown fault {spec!r}; known: {', '.join(FAULTS)}")
    if FAULTS[kind] is None:
        if arg:
            raise ValueError(f"fault {kind!r} takes no argument, got {spec!r}")
        return kind, None
    try:
        seconds = float(arg) if arg else float(FAULTS[kind])  # type: ignore[arg-type]
    except ValueError as err:
        raise ValueError(f"fault {spec!r}: the argument must be seconds") from err
    return kind, seconds


def timings(gen: Generation) -> dict[str, Any]:
    """A few of llama.cpp's `timings` fields."""
    return {"prompt_n": gen.prompt_tokens, "predicted_n": gen.completion_tokens,
            "predicted_ms": round(gen.latency_s * 1000, 3)}


# -- dialects: how other servers shape the same answer (see the module docstring) --------------


class VLLMShapes(OpenAIShapes):
    name = "vllm"
    running = False  # every chunk carries the usage so far (`continuous_usage_stats`)
    n_prompt = sent = 0  # the prompt's tokens and the pieces sent (the running usage's completion tokens)

    def error_body(self, status: int, message: str, kind: str) -> dict[str, Any]:
        return {"object": "error", "message": message, "type": kind, "param": None, "code": status}

    def begin_stream(self, options: dict[str, Any], count_prompt: Callable[[], int]) -> None:
        super().begin_stream(options, count_prompt)
        self.running = self.include_usage and bool(options.get("continuous_usage_stats"))
        self.n_prompt = count_prompt() if self.running else 0
        self.sent = 0

    def chunk(self, choices: list, usage: dict[str, int] | None = None, **extra: Any) -> dict[str, Any]:
        if self.running and usage is None:
            usage = {"prompt_tokens": self.n_prompt, "completion_tokens": self.sent,
                     "total_tokens": self.n_prompt + self.sent}
        return super().chunk(choices, usage, **extra)

    def stream_piece(self, text: str) -> list[dict[str, Any]]:
        self.sent += 1
        return super().stream_piece(text)

    def stream_closing(self, gen: Generation, finish: str) -> list[dict[str, Any]]:
        out = [self.chunk([self.piece_choice(None, finish)], usage_of(gen) if self.running else None)]
        if self.include_usage:
            out.append(self.chunk([], usage_of(gen)))
        return out


class LlamaCppShapes(OpenAIShapes):
    name = "llamacpp"
    role_delta = {"role": "assistant", "content": None}

    def answer_extras(self, gen: Generation) -> dict[str, Any]:
        return {"timings": timings(gen)}

    def stream_closing(self, gen: Generation, finish: str) -> list[dict[str, Any]]:
        return [self.chunk([self.piece_choice(None, finish)], usage_of(gen) if self.with_usage else None,
                           timings=timings(gen))]


class TGIShapes(OpenAIShapes):
    name = "tgi"
    role_delta = None
    held: str | None = None  # each piece waits for the next, so that the last carries the finish_reason

    def error_body(self, status: int, message: str, kind: str) -> dict[str, Any]:
        return {"error": message, "error_type": kind}

    def finish_reason(self, gen: Generation, limit: int) -> str:
        return "length" if gen.completion_tokens >= limit else "eos_token"

    def piece_choice(self, text: str | None, finish: str | None) -> dict[str, Any]:
        if not self.chat:
            return super().piece_choice(text, "" if finish is None else finish)  # "" until the last chunk
        return {"index": 0, "delta": {"role": "assistant", "content": text or ""}, "finish_reason": finish,
                "logprobs": None}

    def begin_stream(self, options: dict[str, Any], count_prompt: Callable[[], int]) -> None:
        self.include_usage = False  # never, even when asked
        self.held = None

    def stream_piece(self, text: str) -> list[dict[str, Any]]:
        out = [] if self.held is None else [self.chunk([self.piece_choice(self.held, None)])]
        self.held = text
        return out

    def stream_stopped(self) -> list[dict[str, Any]]:
        return [] if self.held is None else [self.chunk([self.piece_choice(self.held, None)])]

    def stream_closing(self, gen: Generation, finish: str) -> list[dict[str, Any]]:
        return [self.chunk([self.piece_choice(self.held or "", finish)])]


class AzureShapes(OpenAIShapes):
    name = "azure"
    role_delta = {"role": "assistant"}

    def stream_opening(self) -> list[dict[str, Any]]:
        return [self.chunk([], prompt_filter_results=[{"prompt_index": 0, "content_filter_results": {}}]),
                *super().stream_opening()]

    def stream_closing(self, gen: Generation, finish: str) -> list[dict[str, Any]]:
        out = [self.chunk([self.piece_choice(None, finish)]),
               self.chunk([{"index": 0, "finish_reason": None, "content_filter_results": {},
                            "content_filter_offsets": {"check_offset": 0, "start_offset": 0,
                                                       "end_offset": len(gen.text)}}])]
        if self.include_usage:
            out.append(self.chunk([], usage_of(gen)))
        return out


SHAPES: dict[str, type[OpenAIShapes]] = {s.name: s for s in (OpenAIShapes, VLLMShapes, LlamaCppShapes, TGIShapes,
                                                              AzureShapes)}
DIALECTS = tuple(SHAPES)


def check_dialect(dialect: str) -> str:
    if dialect not in DIALECTS:
        raise ValueError(f"unknown dialect {dialect!r}; known: {', '.join(DIALECTS)}")
    return dialect


# -- the handler: faults and dialects per request ------------------------------------------------


class FakeHandler(OpenAIHandler):
    server_version = "raglc-fake-server/1"
    dialect = "openai"  # the current request's (set by do_GET / do_POST)
    with_usage = True  # False for the current request's `no_usage` fault
    chunk_delay: float | None = None  # the current request's `slow_stream` delay before every chunk

    @property
    def app(self) -> FakeOpenAIServer:
        return self.server.app  # type: ignore[attr-defined]

    def shapes(self, chat: bool = True) -> OpenAIShapes:
        return SHAPES[self.dialect](chat, with_usage=self.with_usage)

    def _event(self, payload: Any) -> None:
        if self.chunk_delay:
            self.app.wait(self.chunk_delay)
        super()._event(payload)

    def _take_dialect(self) -> str | None:
        """This request's dialect (its `X-Dialect` header, else the server's); an error message when unknown."""
        self.dialect = self.app.dialect
        try:
            self.dialect = check_dialect(self.headers.get("X-Dialect") or self.app.dialect)
        except ValueError as err:
            return str(err)
        return None

    def do_GET(self):
        if (problem := self._take_dialect()) is not None:
            return self._send_error(400, problem)
        super().do_GET()

    def do_POST(self):
        if (problem := self._take_dialect()) is not None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            return self._send_error(400, problem)
        if self.path == "/_faults":
            try:
                body = self._read_body()
                if body.get("clear"):
                    self.app.clear_faults()
                self.app.add_faults(body.get("faults", []))
            except (RequestError, ValueError) as err:
                return self._send_error(400, getattr(err, "message", str(err)))
            return self._send_json(200, self.app.snapshot())
        super().do_POST()

    def _generation_request(self, entry: dict[str, Any]) -> None:
        """The product's steps (read, parse, respond) with this request's fault applied between them."""
        app = self.app
        self.with_usage, self.chunk_delay = True, None
        try:
            fault = app.next_fault(self.headers.get("X-Fault"))
        except ValueError as err:
            entry["status"] = 400
            return self._send_error(400, str(err))
        kind, seconds = fault if fault else (None, None)
        entry["fault"] = kind
        body = self._logged_body(entry)
        if body is None:
            return None
        if kind is not None and self._fail_before_answering(kind, bool(body.get("stream")), entry):
            return
        if kind in ("hang", "slow"):
            app.wait(seconds or 0)
            if app.stopping:
                entry["status"] = "server stopped"
                self.close_connection = True
                return
        try:
            prompt, limit = self._parse_generation(body, entry)
        except RequestError as err:
            entry["status"] = err.status
            return self._send_error(err.status, err.message, err.kind)
        stream = bool(body.get("stream"))
        if kind == "drip":
            entry["status"] = 200
            return self._drip(prompt, stream, seconds or 0.0)
        if kind == "cut":
            entry["status"] = "cut"
            return self._cut(stream)
        if kind == "abort":
            entry["status"] = "abort"
            return self._abort(stream)
        self.with_usage = kind != "no_usage"
        self.chunk_delay = seconds if kind == "slow_stream" else None
        try:
            self._respond(prompt, limit, body, entry)
        except Interrupted:  # a non-streamed answer interrupted by a newer request: no answer at all
            entry["status"] = "interrupted"
            self._close_without_answer()

    def _close_without_answer(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _fail_before_answering(self, kind: str, stream: bool, entry: dict[str, Any]) -> bool:
        """The faults that answer without looking at the request (`drop`, HTTP errors, `malformed`): sent,
        True; any other kind: False."""
        if kind == "drop":
            entry["status"] = "dropped"
            self._close_without_answer()
        elif kind in ERROR_FAULTS:
            entry["status"] = int(kind)
            self._send_error(int(kind), ERROR_FAULTS[kind], "rate_limit_error" if kind == "429" else "server_error",
                             {"Retry-After": "0"} if kind == "429" else None)
        elif kind == "502_html":
            entry["status"] = 502
            self._send_raw(502, NGINX_502, content_type="text/html")
        elif kind == "500_text":
            entry["status"] = 500
            self._send_raw(500, b"Internal Server Error", content_type="text/plain; charset=utf-8")
        elif kind == "malformed":
            entry["status"] = 200
            if stream:  # an event stream whose event is cut off mid-JSON
                self._start_stream()
                self._chunk(b'data: {"id": "cmpl-broken", "choices": [{"index": 0, "delta": {"content": "a\n\n')
                self.wfile.write(b"0\r\n\r\n")
            else:
                self._send_raw(200, b'{"id": "cmpl-broken", "choices": [{"index": 0, "message": ')
        else:
            return False
        return True

    def _abort(self, stream: bool) -> None:
        """The `abort` fault: the first piece of an answer with finish_reason "abort" (vLLM's aborted request)."""
        chat = self.path == "/v1/chat/completions"
        head = {"id": answer_id(chat), "created": int(time.time()), "model": self.app.model_name}
        if not stream:
            choice = ({"index": 0, "message": {"role": "assistant", "content": "Par"}, "finish_reason": "abort"}
                      if chat else {"index": 0, "text": "Par", "finish_reason": "abort", "logprobs": None})
            return self._send_json(200, {**head, "object": "chat.completion" if chat else "text_completion",
                                         "choices": [choice]})
        shapes = self.shapes(chat)
        self._start_stream()
        for text, finish in (("Par", None), (None, "abort")):
            self._event({**head, "object": "chat.completion.chunk" if chat else "text_completion",
                         "choices": [shapes.piece_choice(text, finish)]})
        self._end_stream()

    def _cut(self, stream: bool) -> None:
        """The `cut` fault: an answer that ends early (as an interrupted one does)."""
        if not stream:
            return self._close_without_answer()
        self.close_connection = True
        chat = self.path == "/v1/chat/completions"
        choice = self.shapes(chat).piece_choice("Par", None)
        if chat:
            choice["delta"]["role"] = "assistant"
        self._start_stream()
        self._event({"id": answer_id(chat), "object": "chat.completion.chunk" if chat else "text_completion",
                     "created": int(time.time()), "model": self.app.model_name, "choices": [choice]})
        self._end_stream()

    def _drip(self, prompt: Prompt | str, stream: bool, every: float) -> None:
        """The `drip` fault: an answer that never finishes (see the module docstring). A client that
        went away makes a write raise OSError, which `do_POST` records as "client gone"."""
        app = self.app
        deadline = time.monotonic() + DRIP_MAX_S
        chat = isinstance(prompt, Prompt)
        if stream:
            self._start_stream()
            base = {"id": answer_id(chat), "object": "chat.completion.chunk" if chat else "text_completion",
                    "created": int(time.time()), "model": app.model_name}
            choice = ({"index": 0, "delta": {"content": "."}, "finish_reason": None, "logprobs": None} if chat
                      else {"index": 0, "text": ".", "finish_reason": None, "logprobs": None})
            data = b"data: " + json.dumps({**base, "choices": [choice]}).encode() + b"\n\n"
        else:  # a JSON body that is all leading whitespace so far: valid, just never complete
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            data = b" "
        while not app.stopping and time.monotonic() < deadline:
            self._chunk(data)
            app.wait(every)
        self.close_connection = True  # the answer was never completed: this connection is done


# -- prompt caching: what a provider bills as cached prompt tokens -----------------------------------


class PromptCache:
    """OpenAI's automatic prompt caching as billed: the prefixes (whole blocks, at least `min_tokens`) of the
    prompts seen so far; `read_and_remember(ids)` gives the cached tokens of a new prompt, then remembers it."""

    def __init__(self, min_tokens: int = 1024, block: int = 128):
        if min_tokens < block or block < 1:
            raise ValueError(f"prompt caching: min_tokens ({min_tokens}) must be >= block ({block}) >= 1")
        self.min_tokens, self.block = int(min_tokens), int(block)
        self._seen: set[bytes] = set()
        self._lock = threading.Lock()

    def _prefix_keys(self, ids: list[int]) -> list[tuple[int, bytes]]:
        """(length, key) of every cacheable prefix of `ids`, shortest first (keys chained block by block)."""
        out, digest = [], hashlib.sha256()
        for end in range(self.block, len(ids) + 1, self.block):
            digest.update(json.dumps(ids[end - self.block:end]).encode())
            if end >= self.min_tokens:
                out.append((end, digest.copy().digest()))
        return out

    def read_and_remember(self, ids: list[int]) -> int:
        keys = self._prefix_keys(list(ids))
        with self._lock:
            hit = max((n for n, key in keys if key in self._seen), default=0)
            self._seen.update(key for _, key in keys)
        return hit


# -- the server: the fault queue and interrupting mode -------------------------------------------


class FakeOpenAIServer(OpenAICompatServer):
    """The product's server with faults, dialects and an interrupting mode (see the module docstring)."""

    handler = FakeHandler

    def __init__(self, backend, model_name: str | None = None, host: str = "127.0.0.1", port: int = 0,
                 request_log: str | Path | None = None, api_key: str | None = None, *, faults: Iterable[str] = (),
                 dialect: str = "openai", interrupt_on_new_request: bool = False, prompt_caching: bool = False,
                 cache_min_tokens: int = 1024, cache_block: int = 128):
        self.dialect = check_dialect(dialect)
        self.prompt_cache = PromptCache(cache_min_tokens, cache_block) if prompt_caching else None
        self.interrupt_on_new_request = bool(interrupt_on_new_request)
        self._faults: deque[tuple[str, float | None]] = deque(parse_fault(f) for f in faults)
        self._waiting = 0  # generation requests waiting for their turn
        self._stopping = threading.Event()
        super().__init__(backend, model_name, host, port, request_log, api_key)
        self.stats["interrupted"] = 0

    def stop(self) -> None:
        self._stopping.set()
        super().stop()

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def wait(self, seconds: float) -> None:
        """Sleep, but wake up when the server stops (so hung requests don't outlive it)."""
        self._stopping.wait(seconds)

    # -- faults and bookkeeping --------------------------------------------------------
    def add_faults(self, faults: Iterable[str]) -> None:
        parsed = [parse_fault(f) for f in faults]
        with self._state_lock:
            self._faults.extend(parsed)

    def clear_faults(self) -> None:
        with self._state_lock:
            self._faults.clear()

    def next_fault(self, header: str | None) -> tuple[str, float | None] | None:
        if header:
            return parse_fault(header)
        with self._state_lock:
            return self._faults.popleft() if self._faults else None

    def snapshot(self) -> dict[str, Any]:
        with self._state_lock:
            return {**self.stats, "faults_queued": [k if s is None else f"{k}:{s}" for k, s in self._faults]}

    def describe_request(self, entry: dict[str, Any]) -> str:
        return super().describe_request(entry) + (f" (fault {entry['fault']})" if entry.get("fault") else "")

    def account(self, prompt: Prompt | str, gen: Generation) -> Generation:
        """With prompt caching: the prompt tokens a provider would bill as read from its cache."""
        if self.prompt_cache is None:
            return gen
        from llm.hf_tokenizer import render_prompt, uses_chat_template

        hf = self.backend.tokenizer.hf
        if isinstance(prompt, Prompt):
            ids = hf(render_prompt(hf, prompt), add_special_tokens=not uses_chat_template(hf, prompt))["input_ids"]
        else:
            ids = hf(prompt, add_special_tokens=True)["input_ids"]
        return replace(gen, cached_prompt_tokens=self.prompt_cache.read_and_remember(ids))

    # -- interrupting mode -------------------------------------------------------------
    @contextmanager
    def _turn(self):
        """One generation at a time; while waiting, a request counts as waiting (and so, in
        interrupting mode, interrupts the generation in flight)."""
        with self._state_lock:
            self._waiting += 1
        try:
            self._generation_lock.acquire()
        finally:
            with self._state_lock:
                self._waiting -= 1
        try:
            yield
        finally:
            self._generation_lock.release()

    def interrupted(self) -> bool:
        """Interrupting mode, and another generation request is waiting for its turn."""
        if not self.interrupt_on_new_request:
            return False
        with self._state_lock:
            if self._waiting:
                self.stats["interrupted"] += 1
                return True
            return False

    def generate(self, prompt: Prompt | str, limit: int) -> Generation:
        """The whole answer; raises Interrupted when a newer request interrupted it (interrupting mode)."""
        with self._turn():
            gen = self._generate_now(prompt, limit)
            if self.interrupted():
                raise Interrupted()
            return gen

    def stream(self, prompt: Prompt | str, limit: int) -> Iterator[Any]:
        """As the product's, but interrupted by a newer request (interrupting mode) it yields STOPPED
        instead of the rest (the decoding still in progress is then run to its end, out of sight, before
        the next request's turn)."""
        pieces = super().stream(prompt, limit)
        for piece in pieces:
            if not isinstance(piece, Generation) and self.interrupted():
                yield STOPPED
                for _ in pieces:  # the model is shared: let this decoding finish first
                    pass
                return
            yield piece


def main(argv: list[str] | None = None) -> None:
    parser = argument_parser("python -m testsupport.fake_servers", __doc__.split("\n\n")[0])
    parser.add_argument("--faults", default="", help="comma-separated faults for the first requests, e.g. 429,500")
    parser.add_argument("--interrupt-on-new-request", action="store_true",
                        help="a new request interrupts the one in flight, as llama.cpp's server does by default")
    parser.add_argument("--dialect", default="openai", choices=DIALECTS,
                        help="answer as this server does (see the module docstring): " + ", ".join(DIALECTS))
    parser.add_argument("--prompt-caching", action="store_true",
                        help="report cached prompt tokens as OpenAI's prompt caching bills them (1,024+ tokens, "
                             "128-token blocks)")
    args = parser.parse_args(argv)
    faults = [f for f in args.faults.split(",") if f.strip()]

    def make_server(*positional: Any) -> FakeOpenAIServer:
        return FakeOpenAIServer(*positional, faults=faults, dialect=args.dialect,
                                interrupt_on_new_request=args.interrupt_on_new_request,
                                prompt_caching=args.prompt_caching)

    serve(parser, args, make_server)


if __name__ == "__main__":
    main()
