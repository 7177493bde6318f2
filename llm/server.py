"""A small OpenAI-compatible HTTP server over the transformers backend.

Serves the embedded model (or any local causal LM) to anything that speaks the OpenAI API,
including this project's own `openai` generator backend:

    python -m llm.server --model bundled:smollm2 --port 8000
    python -m experiments.run generator=smollm2_server        # the client side

Endpoints: `GET /v1/models`, `POST /v1/chat/completions` and `POST /v1/completions`, both with
`stream: true` (server-sent events; `stream_options.include_usage` adds a usage chunk) and
`usage` in every non-streamed answer. One generation runs at a time (the model is shared);
requests wait their turn. The server decodes as its backend is configured (greedy by default):
a request's `temperature` is ignored. Chat requests are single-turn (system + one user message),
which is what the project sends.

Fault injection, for testing clients against a real server. A fault applies to one generation
request (`/v1/chat/completions` or `/v1/completions`); they are taken in order from a queue:

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

    openai    the OpenAI API (the default). A streamed chat answer opens with a role chunk
              (`{"role": "assistant", "content": ""}`) and ends with a chunk holding only the
              finish_reason (`stop` or `length`); `stream_options.include_usage` adds a last chunk
              with `choices: []` and the usage. Error bodies are `{"error": {"message": ...}}`.
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

Interrupting mode, `--interrupt-on-new-request` (constructor `interrupt_on_new_request=True`): like
llama.cpp's Python server (whose default it is), a request that comes in while another generates
interrupts that one: a streamed answer ends at once without a finish_reason (`data: [DONE]` after
the pieces sent so far), a non-streamed one closes its connection without an answer. Requests still
run one at a time, in turn. Clients that send requests concurrently see their answers cut off;
`GET /_stats` counts them as `interrupted`.

With `--api-key-env NAME` (constructor `api_key=`), generation requests must carry that key
(`Authorization: Bearer ...`), as `vllm serve --api-key` does.

`GET /_stats` reports requests served, the number in flight and the most ever in flight, and the
faults still queued. `--request-log FILE` appends one JSON line per request (path, model, stream,
status, fault, prompt size); headers, and so API keys, are never logged.

Longer than most modules on purpose: the OpenAI-compatible server and its fault and dialect modes
(used by the tests as a real endpoint) are one program.
"""

from __future__ import annotations

import argparse
import hmac
import json
import os
import logging
import socket
import threading
import time
import uuid
from collections import deque
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterable, Iterator

from llm.prompt import Generation, Prompt

log = logging.getLogger(__name__)

FAULTS = {"429": None, "500": None, "503": None, "502_html": None, "500_text": None, "malformed": None, "drop": None,
          "no_usage": None, "cut": None, "abort": None, "hang": 30.0, "slow": 0.5, "slow_stream": 0.2, "drip": 0.3}
DIALECTS = ("openai", "vllm", "llamacpp", "tgi", "azure")
# how a dialect's streamed chat answer opens (tgi sends no role chunk)
ROLE_DELTA = {"openai": {"role": "assistant", "content": ""}, "vllm": {"role": "assistant", "content": ""},
              "llamacpp": {"role": "assistant", "content": None}, "azure": {"role": "assistant"}}
NGINX_502 = (b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1>"
             b"</center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n")
GENERATION_PATHS = ("/v1/chat/completions", "/v1/completions")
DEFAULT_MAX_TOKENS = 128
DRIP_MAX_S = 600.0  # a `drip` answer gives up (its thread ends) after this long even if the client stays


INTERRUPTED = object()  # what `OpenAICompatServer.stream` yields when a new request interrupts it


class Interrupted(Exception):
    """A non-streamed generation interrupted by a newer request (interrupting mode)."""


class RequestError(Exception):
    def __init__(self, status: int, message: str, kind: str = "invalid_request_error"):
        super().__init__(message)
        self.status, self.message, self.kind = status, message, kind


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


def _message_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # [{"type": "text", "text": ...}, ...]
        parts = [p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        if len(parts) == len(content):
            return "".join(parts)
    raise RequestError(400, "message content must be a string or a list of text parts")


def chat_prompt(body: dict[str, Any]) -> Prompt:
    """An OpenAI chat request body -> the project's single-turn Prompt."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestError(400, "`messages` must be a non-empty list")
    system, user = [], []
    for m in messages:
        role = m.get("role") if isinstance(m, dict) else None
        if role in ("system", "developer"):
            system.append(_message_text(m.get("content")))
        elif role == "user":
            user.append(_message_text(m.get("content")))
        else:
            raise RequestError(400, f"unsupported message role {role!r}: this server answers single-turn chats")
    if not user and len(system) == 1:  # a system message alone is the prompt (LooGLE's summary judge sends one)
        user, system = system, []
    if len(user) != 1:
        raise RequestError(400, f"expected exactly one user message, got {len(user)}")
    return Prompt(user=user[0], system="\n\n".join(system) or None, max_new_tokens=max_tokens(body))


def max_tokens(body: dict[str, Any]) -> int:
    value = body.get("max_completion_tokens", body.get("max_tokens"))
    if value is None:
        return DEFAULT_MAX_TOKENS
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise RequestError(400, f"max_tokens must be a positive integer, got {value!r}")
    return value


def _usage(gen: Generation) -> dict[str, int]:
    return {"prompt_tokens": gen.prompt_tokens, "completion_tokens": gen.completion_tokens,
            "total_tokens": gen.prompt_tokens + gen.completion_tokens}


def _finish_reason(gen: Generation, limit: int, dialect: str = "openai") -> str:
    if gen.completion_tokens >= limit:
        return "length"
    return "eos_token" if dialect == "tgi" else "stop"


def _timings(gen: Generation) -> dict[str, Any]:
    """A few of llama.cpp's `timings` fields."""
    return {"prompt_n": gen.prompt_tokens, "predicted_n": gen.completion_tokens,
            "predicted_ms": round(gen.latency_s * 1000, 3)}


def check_dialect(dialect: str) -> str:
    if dialect not in DIALECTS:
        raise ValueError(f"unknown dialect {dialect!r}; known: {', '.join(DIALECTS)}")
    return dialect


class OpenAICompatServer:
    """The HTTP server; `start()` serves from a background thread, `serve_forever()` in this one."""

    def __init__(self, backend, model_name: str | None = None, host: str = "127.0.0.1", port: int = 0,
                 faults: Iterable[str] = (), request_log: str | Path | None = None, api_key: str | None = None,
                 interrupt_on_new_request: bool = False, dialect: str = "openai"):
        self.backend = backend
        self.dialect = check_dialect(dialect)
        self.interrupt_on_new_request = bool(interrupt_on_new_request)
        self._waiting = 0  # generation requests waiting for their turn
        self.api_key = api_key  # when set, generation requests must send `Authorization: Bearer <key>`
        self.model_name = model_name or backend.model_id
        self._faults: deque[tuple[str, float | None]] = deque(parse_fault(f) for f in faults)
        self._generation_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._stopping = threading.Event()
        self.stats = {"requests": 0, "in_flight": 0, "max_in_flight": 0, "interrupted": 0}
        self.request_log = Path(request_log) if request_log else None
        self.httpd = ThreadingHTTPServer((host, port), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.app = self  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> "OpenAICompatServer":
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self.httpd.serve_forever()

    def stop(self) -> None:
        self._stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> "OpenAICompatServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

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

    def enter(self) -> None:
        with self._state_lock:
            self.stats["requests"] += 1
            self.stats["in_flight"] += 1
            self.stats["max_in_flight"] = max(self.stats["max_in_flight"], self.stats["in_flight"])

    def leave(self) -> None:
        with self._state_lock:
            self.stats["in_flight"] -= 1

    def log_request(self, entry: dict[str, Any]) -> None:
        log.info("%s %s -> %s%s", entry.get("path"), entry.get("model"), entry.get("status"),
                 f" (fault {entry['fault']})" if entry.get("fault") else "")
        if self.request_log is not None:
            line = json.dumps({"time": round(time.time(), 3), **entry}, ensure_ascii=False)
            with self._state_lock, self.request_log.open("a", encoding="utf-8") as fh:
                fh.write(line + "\n")

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def wait(self, seconds: float) -> None:
        """Sleep, but wake up when the server stops (so hung requests don't outlive it)."""
        self._stopping.wait(seconds)

    # -- generation --------------------------------------------------------------------
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
            if isinstance(prompt, Prompt):
                gen = self.backend.generate([prompt])[0]
            else:
                gen = self.backend.complete(prompt, max_new_tokens=limit)
            if self.interrupted():
                raise Interrupted()
            return gen

    def prompt_tokens(self, prompt: Prompt | str) -> int:
        """The prompt's tokens as the usage counts them (a raw completions prompt gets the tokenizer's
        special tokens). Waits while a generation decodes, without interrupting it: they share the tokenizer."""
        with self._generation_lock:
            return self.backend.prompt_tokens(prompt if isinstance(prompt, Prompt) else Prompt(prompt, chat=False))

    def stream(self, prompt: Prompt | str, limit: int) -> Iterator[Any]:
        """Text pieces, then the finished Generation last; or, interrupted by a newer request
        (interrupting mode), `INTERRUPTED` instead of the rest (the decoding still in progress is
        then run to its end, out of sight, before the next request's turn)."""
        with self._turn():
            if hasattr(self.backend, "stream"):
                pieces = self.backend.stream(prompt, max_new_tokens=limit)
                for piece in pieces:
                    if self.interrupted():
                        yield INTERRUPTED
                        for _ in pieces:  # the model is shared: let this decoding finish first
                            pass
                        return
                    yield piece
                yield pieces.generation
            else:  # a backend that cannot stream: one piece
                gen = self.backend.generate([prompt])[0] if isinstance(prompt, Prompt) else \
                    self.backend.complete(prompt, max_new_tokens=limit)
                if self.interrupted():
                    yield INTERRUPTED
                    return
                yield gen.text
                yield gen


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "raglc-llm-server/1"
    dialect = "openai"  # the current request's (set by do_GET / do_POST)

    @property
    def app(self) -> OpenAICompatServer:
        return self.server.app  # type: ignore[attr-defined]

    def log_message(self, fmt, *args):  # the app logs requests itself, without headers
        log.debug("%s " + fmt, self.address_string(), *args)

    # -- plumbing ----------------------------------------------------------------------
    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self._send_raw(status, json.dumps(payload, ensure_ascii=False).encode(), headers)

    def _send_raw(self, status: int, data: bytes, headers: dict[str, str] | None = None,
                  content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _send_error(self, status: int, message: str, kind: str = "invalid_request_error",
                    headers: dict[str, str] | None = None) -> None:
        if self.dialect == "tgi":
            body: dict[str, Any] = {"error": message, "error_type": kind}
        elif self.dialect == "vllm":
            body = {"object": "error", "message": message, "type": kind, "param": None, "code": status}
        else:
            body = {"error": {"message": message, "type": kind, "code": status}}
        self._send_json(status, body, headers)

    def _read_body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError as err:
            raise RequestError(400, f"request body is not JSON: {err}") from err
        if not isinstance(body, dict):
            raise RequestError(400, "request body must be a JSON object")
        return body

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _event(self, payload: Any, delay: float | None) -> None:
        if delay:
            self.app.wait(delay)
        self._chunk(b"data: " + json.dumps(payload, ensure_ascii=False).encode() + b"\n\n")

    def _end_stream(self) -> None:
        self._chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _take_dialect(self) -> str | None:
        """This request's dialect (its `X-Dialect` header, else the server's); an error message when unknown."""
        self.dialect = self.app.dialect
        try:
            self.dialect = check_dialect(self.headers.get("X-Dialect") or self.app.dialect)
        except ValueError as err:
            return str(err)
        return None

    # -- routes ------------------------------------------------------------------------
    def do_GET(self):
        if (problem := self._take_dialect()) is not None:
            return self._send_error(400, problem)
        if self.path.rstrip("/") == "/v1/models":
            return self._send_json(200, {"object": "list", "data": [
                {"id": self.app.model_name, "object": "model", "created": 0, "owned_by": "raglc",
                 "max_model_len": getattr(self.app.backend, "context_window", None)}]})
        if self.path == "/_stats":
            return self._send_json(200, self.app.snapshot())
        if self.path in ("/health", "/v1/health"):
            return self._send_json(200, {"status": "ok"})
        self._send_error(404, f"no route GET {self.path}", "not_found_error")

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
        if self.path not in GENERATION_PATHS:
            return self._send_error(404, f"no route POST {self.path}", "not_found_error")
        app = self.app
        if app.api_key is not None and not hmac.compare_digest(self.headers.get("Authorization", ""),
                                                               f"Bearer {app.api_key}"):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            app.log_request({"path": self.path, "status": 401})
            return self._send_error(401, "missing or wrong API key", "authentication_error")
        app.enter()
        entry: dict[str, Any] = {"path": self.path}
        try:
            self._generation_request(entry)
        except OSError:  # the client went away (timed out, or the server is stopping)
            entry["status"] = "client gone"
            self.close_connection = True
        finally:
            app.leave()
            app.log_request(entry)

    def _generation_request(self, entry: dict[str, Any]) -> None:
        app = self.app
        try:
            fault = app.next_fault(self.headers.get("X-Fault"))
        except ValueError as err:
            entry["status"] = 400
            return self._send_error(400, str(err))
        kind, seconds = fault if fault else (None, None)
        entry["fault"] = kind
        try:
            body = self._read_body()
        except RequestError as err:
            entry["status"] = err.status
            return self._send_error(err.status, err.message, err.kind)
        entry.update(model=body.get("model"), stream=bool(body.get("stream")))
        if kind == "drop":
            entry["status"] = "dropped"
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)  # no answer at all
            except OSError:
                pass
            return
        if kind in ("429", "500", "503"):
            entry["status"] = int(kind)
            headers = {"Retry-After": "0"} if kind == "429" else None
            messages = {"429": "rate limit reached (injected)", "500": "internal error (injected)",
                        "503": "service unavailable (injected)"}
            return self._send_error(int(kind), messages[kind], "rate_limit_error" if kind == "429" else "server_error",
                                    headers)
        if kind == "502_html":
            entry["status"] = 502
            return self._send_raw(502, NGINX_502, content_type="text/html")
        if kind == "500_text":
            entry["status"] = 500
            return self._send_raw(500, b"Internal Server Error", content_type="text/plain; charset=utf-8")
        if kind == "malformed":
            entry["status"] = 200
            if body.get("stream"):  # an event stream whose event is cut off mid-JSON
                self._start_stream()
                self._chunk(b'data: {"id": "cmpl-broken", "choices": [{"index": 0, "delta": {"content": "a\n\n')
                self.wfile.write(b"0\r\n\r\n")
                return
            return self._send_raw(200, b'{"id": "cmpl-broken", "choices": [{"index": 0, "message": ')
        if kind in ("hang", "slow"):
            app.wait(seconds or 0)
            if app.stopping:
                entry["status"] = "server stopped"
                self.close_connection = True
                return
        try:
            if body.get("model") != app.model_name:
                raise RequestError(404, f"model {body.get('model')!r} is not served here; this server serves "
                                        f"{app.model_name!r}", "not_found_error")
            limit = max_tokens(body)
            if self.path == "/v1/chat/completions":
                prompt: Prompt | str = chat_prompt(body)
                entry["prompt_chars"] = len(prompt.user) + len(prompt.system or "")
            else:
                prompt = body.get("prompt")
                if isinstance(prompt, list) and len(prompt) == 1:
                    prompt = prompt[0]
                if not isinstance(prompt, str):
                    raise RequestError(400, "`prompt` must be a string (or a list of one string)")
                entry["prompt_chars"] = len(prompt)
        except RequestError as err:
            entry["status"] = err.status
            return self._send_error(err.status, err.message, err.kind)
        if kind == "drip":
            entry["status"] = 200
            return self._drip(prompt, bool(body.get("stream")), seconds or 0.0)
        if kind == "cut":
            entry["status"] = "cut"
            return self._cut(bool(body.get("stream")))
        if kind == "abort":
            entry["status"] = "abort"
            return self._abort(bool(body.get("stream")))
        usage = kind != "no_usage"
        try:
            if body.get("stream"):
                complete = self._stream_answer(prompt, limit, body, usage, seconds if kind == "slow_stream" else None)
                entry["status"] = 200 if complete else "interrupted"
            else:
                self._answer(prompt, limit, usage)
                entry["status"] = 200
        except Interrupted:  # a non-streamed answer interrupted by a newer request: no answer at all
            entry["status"] = "interrupted"
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        except ValueError as err:  # e.g. the prompt does not fit the model's window
            entry["status"] = 400
            return self._send_error(400, str(err))

    def _answer(self, prompt: Prompt | str, limit: int, usage: bool) -> None:
        gen = self.app.generate(prompt, limit)
        chat = isinstance(prompt, Prompt)
        finish = _finish_reason(gen, limit, self.dialect)
        choice: dict[str, Any] = {"index": 0, "finish_reason": finish, "logprobs": None}
        if chat:
            choice["message"] = {"role": "assistant", "content": gen.text}
        else:
            choice["text"] = gen.text
        payload = {"id": f"{'chatcmpl' if chat else 'cmpl'}-{uuid.uuid4().hex[:24]}",
                   "object": "chat.completion" if chat else "text_completion", "created": int(time.time()),
                   "model": self.app.model_name, "choices": [choice]}
        if usage:
            payload["usage"] = _usage(gen)
        if self.dialect == "llamacpp":
            payload["timings"] = _timings(gen)
        self._send_json(200, payload)

    def _stream_answer(self, prompt: Prompt | str, limit: int, body: dict[str, Any], usage: bool,
                       delay: float | None) -> bool:
        """Stream the answer in the request's dialect (see the module docstring); False when a newer
        request interrupted it (it then ends without a finish_reason)."""
        dialect, chat = self.dialect, isinstance(prompt, Prompt)
        options = body.get("stream_options") or {}
        asked = usage and bool(options.get("include_usage")) and dialect != "tgi"
        running = asked and dialect == "vllm" and bool(options.get("continuous_usage_stats"))
        n_prompt = self.app.prompt_tokens(prompt) if running else 0
        base = {"id": f"{'chatcmpl' if chat else 'cmpl'}-{uuid.uuid4().hex[:24]}",
                "object": "chat.completion.chunk" if chat else "text_completion",
                "created": int(time.time()), "model": self.app.model_name}
        sent = 0  # pieces sent: vllm's running usage counts them as completion tokens

        def send(choices: list, usage_now: dict[str, int] | None = None, **extra: Any) -> None:
            if running and usage_now is None:
                usage_now = {"prompt_tokens": n_prompt, "completion_tokens": sent, "total_tokens": n_prompt + sent}
            self._event({**base, "choices": choices, **extra, **({"usage": usage_now} if usage_now else {})}, delay)

        pieces = self.app.stream(prompt, limit)
        first = next(pieces)  # generation errors surface before the 200 is sent
        self._start_stream()
        if dialect == "azure":
            send([], prompt_filter_results=[{"prompt_index": 0, "content_filter_results": {}}])
        if chat and dialect in ROLE_DELTA:
            send([{"index": 0, "delta": ROLE_DELTA[dialect], "finish_reason": None, "logprobs": None}])
        gen: Generation | None = None
        held: str | None = None  # tgi: each piece waits for the next, so that the last carries the finish_reason
        for piece in _chain([first], pieces):
            if piece is INTERRUPTED:  # as llama.cpp's server: [DONE] after what was sent, no finish_reason
                if held is not None:
                    send([self._piece_choice(chat, held, None)])
                self._end_stream()
                for _ in pieces:  # the interrupted decoding runs to its end before the next turn
                    pass
                return False
            if isinstance(piece, Generation):
                gen = piece
                break
            if dialect == "tgi":
                if held is not None:
                    send([self._piece_choice(chat, held, None)])
                held = piece
            else:
                sent += 1
                send([self._piece_choice(chat, piece, None)])
        assert gen is not None
        finish = _finish_reason(gen, limit, dialect)
        if dialect == "tgi":
            send([self._piece_choice(chat, held or "", finish)])
        elif dialect == "llamacpp":
            send([self._piece_choice(chat, None, finish)], _usage(gen) if usage else None, timings=_timings(gen))
        else:
            send([self._piece_choice(chat, None, finish)], _usage(gen) if running else None)
        if dialect == "azure":
            send([{"index": 0, "finish_reason": None, "content_filter_results": {},
                   "content_filter_offsets": {"check_offset": 0, "start_offset": 0, "end_offset": len(gen.text)}}])
        if asked and dialect != "llamacpp":
            send([], _usage(gen))
        self._end_stream()
        return True

    def _piece_choice(self, chat: bool, text: str | None, finish: str | None) -> dict[str, Any]:
        """A streamed choice holding a piece of the answer (or none) in the request's dialect."""
        if not chat:
            if finish is None and self.dialect == "tgi":
                finish = ""  # TGI's completions chunks before the last
            return {"index": 0, "text": text or "", "finish_reason": finish, "logprobs": None}
        if self.dialect == "tgi":
            delta: dict[str, Any] = {"role": "assistant", "content": text or ""}
        else:
            delta = {"content": text} if text else {}
        return {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}

    def _abort(self, stream: bool) -> None:
        """The `abort` fault: the first piece of an answer with finish_reason "abort" (vLLM's aborted request)."""
        chat = self.path == "/v1/chat/completions"
        head = {"id": f"{'chatcmpl' if chat else 'cmpl'}-{uuid.uuid4().hex[:24]}", "created": int(time.time()),
                "model": self.app.model_name}
        if not stream:
            choice = ({"index": 0, "message": {"role": "assistant", "content": "Par"}, "finish_reason": "abort"}
                      if chat else {"index": 0, "text": "Par", "finish_reason": "abort", "logprobs": None})
            return self._send_json(200, {**head, "object": "chat.completion" if chat else "text_completion",
                                         "choices": [choice]})
        self._start_stream()
        for text, finish in (("Par", None), (None, "abort")):
            self._event({**head, "object": "chat.completion.chunk" if chat else "text_completion",
                         "choices": [self._piece_choice(chat, text, finish)]}, None)
        self._end_stream()

    def _cut(self, stream: bool) -> None:
        """The `cut` fault: an answer that ends early (as an interrupted one does)."""
        self.close_connection = True
        if not stream:
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        chat = self.path == "/v1/chat/completions"
        choice = self._piece_choice(chat, "Par", None)
        if chat:
            choice["delta"]["role"] = "assistant"
        self._start_stream()
        self._event({"id": f"{'chatcmpl' if chat else 'cmpl'}-{uuid.uuid4().hex[:24]}",
                     "object": "chat.completion.chunk" if chat else "text_completion",
                     "created": int(time.time()), "model": self.app.model_name, "choices": [choice]}, None)
        self._end_stream()

    def _drip(self, prompt: Prompt | str, stream: bool, every: float) -> None:
        """The `drip` fault: an answer that never finishes (see the module docstring). A client that
        went away makes a write raise OSError, which `do_POST` records as "client gone"."""
        app = self.app
        deadline = time.monotonic() + DRIP_MAX_S
        chat = isinstance(prompt, Prompt)
        if stream:
            self._start_stream()
            base = {"id": f"{'chatcmpl' if chat else 'cmpl'}-{uuid.uuid4().hex[:24]}",
                    "object": "chat.completion.chunk" if chat else "text_completion",
                    "created": int(time.time()), "model": app.model_name}
            choice = ({"index": 0, "delta": {"content": "."}, "finish_reason": None, "logprobs": None} if chat
                      else {"index": 0, "text": ".", "finish_reason": None, "logprobs": None})
            data = b"data: " + json.dumps({**base, "choices": [choice]}).encode() + b"\n\n"
            send = lambda: self._chunk(data)  # noqa: E731
        else:  # a JSON body that is all leading whitespace so far: valid, just never complete
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            send = lambda: self._chunk(b" ")  # noqa: E731
        while not app.stopping and time.monotonic() < deadline:
            send()
            app.wait(every)
        self.close_connection = True  # the answer was never completed: this connection is done


def _chain(head: list, tail: Iterator) -> Iterator:
    yield from head
    yield from tail


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m llm.server", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="bundled:smollm2", help="bundled:NAME, a local path or .gguf, or a hub id")
    parser.add_argument("--served-model-name", default=None, help="the `model` clients send (default: --model)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--context-window", type=int, default=None)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--request-log", default=None, help="append one JSON line per request (no headers)")
    parser.add_argument("--faults", default="", help="comma-separated faults for the first requests, e.g. 429,500")
    parser.add_argument("--interrupt-on-new-request", action="store_true",
                        help="a new request interrupts the one in flight, as llama.cpp's server does by default")
    parser.add_argument("--dialect", default="openai", choices=DIALECTS,
                        help="answer as this server does (see the module docstring): " + ", ".join(DIALECTS))
    parser.add_argument("--api-key-env", default=None,
                        help="require the key held by this environment variable "
                             "(a key on the command line would show in ps)")
    args = parser.parse_args(argv)
    api_key = None
    if args.api_key_env:
        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            parser.error(f"--api-key-env {args.api_key_env}: that environment variable is not set")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    from llm.transformers_backend import TransformersGenerator

    backend = TransformersGenerator(model=args.model, context_window=args.context_window, dtype=args.dtype,
                                    device=args.device, threads=args.threads)
    faults = [f for f in args.faults.split(",") if f.strip()]
    backend.model  # load the weights before the port opens: clients see a ready server or none
    server = OpenAICompatServer(backend, args.served_model_name, args.host, args.port, faults, args.request_log,
                                api_key, interrupt_on_new_request=args.interrupt_on_new_request, dialect=args.dialect)
    log.info("serving %s at %s (%s dialect)", server.model_name, server.url, server.dialect)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.httpd.server_close()


if __name__ == "__main__":
    main()
