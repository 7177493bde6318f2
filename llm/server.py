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
which is what the project sends. Answers have the OpenAI API's shapes (`OpenAIShapes`): a streamed
chat answer opens with a role chunk (`{"role": "assistant", "content": ""}`) and ends with a chunk
holding only the finish_reason (`stop` or `length`); `stream_options.include_usage` adds a last
chunk with `choices: []` and the usage. Error bodies are `{"error": {"message": ...}}`.

With `--api-key-env NAME` (constructor `api_key=`), generation requests must carry that key
(`Authorization: Bearer ...`), as `vllm serve --api-key` does.

`GET /_stats` reports requests served, the number in flight and the most ever in flight.
`--request-log FILE` appends one JSON line per request (path, model, stream, status, prompt size);
headers, and so API keys, are never logged.

A server that fails on purpose (injected faults) or answers as vLLM, llama.cpp, TGI or Azure do, for
testing clients, is a test double built on this one: `testsupport/fake_servers.py`.
"""

from __future__ import annotations

import argparse
import hmac
import itertools
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from llm.prompt import Generation, Prompt

log = logging.getLogger(__name__)

GENERATION_PATHS = ("/v1/chat/completions", "/v1/completions")
DEFAULT_MAX_TOKENS = 128
# What `OpenAICompatServer.stream` yields instead of the rest when a generation stops before its end (a test
# double's interrupting mode; this server never stops one): the answer ends without a finish_reason.
STOPPED = object()


class RequestError(Exception):
    def __init__(self, status: int, message: str, kind: str = "invalid_request_error"):
        super().__init__(message)
        self.status, self.message, self.kind = status, message, kind


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


def usage_of(gen: Generation) -> dict[str, Any]:
    """An answer's `usage`; with `prompt_tokens_details.cached_tokens` where the server knows how many prompt
    tokens it read from a prompt cache (a test double that bills as a provider does: testsupport/fake_servers.py)."""
    usage: dict[str, Any] = {"prompt_tokens": gen.prompt_tokens, "completion_tokens": gen.completion_tokens,
                             "total_tokens": gen.prompt_tokens + gen.completion_tokens}
    if gen.cached_prompt_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": gen.cached_prompt_tokens}
    return usage


def answer_id(chat: bool) -> str:
    return f"{'chatcmpl' if chat else 'cmpl'}-{uuid.uuid4().hex[:24]}"


class OpenAIShapes:
    """How one answer is shaped: the OpenAI API's error bodies, finish_reason words, non-streamed
    extras and stream framing. One per request (`chat`: a chat completion, else a text completion);
    a streamed answer calls `begin_stream`, then sends `stream_opening()`, `stream_piece(text)` per
    piece and `stream_closing(gen, finish)`, or `stream_stopped()` when the generation stopped before
    its end. Test doubles subclass it to answer as other servers do (testsupport/fake_servers.py)."""

    name = "openai"
    role_delta: dict[str, Any] | None = {"role": "assistant", "content": ""}  # how a streamed chat answer opens

    def __init__(self, chat: bool = True, with_usage: bool = True):
        self.chat = chat
        self.with_usage = with_usage  # False: answers carry no `usage` at all
        self.include_usage = False  # this stream ends with a usage chunk (`stream_options.include_usage`)

    def error_body(self, status: int, message: str, kind: str) -> dict[str, Any]:
        return {"error": {"message": message, "type": kind, "code": status}}

    def finish_reason(self, gen: Generation, limit: int) -> str:
        return "length" if gen.completion_tokens >= limit else "stop"

    def answer_extras(self, gen: Generation) -> dict[str, Any]:
        """Fields a non-streamed answer carries besides choices and usage."""
        return {}

    def piece_choice(self, text: str | None, finish: str | None) -> dict[str, Any]:
        """A streamed choice holding a piece of the answer (or none)."""
        if not self.chat:
            return {"index": 0, "text": text or "", "finish_reason": finish, "logprobs": None}
        return {"index": 0, "delta": {"content": text} if text else {}, "finish_reason": finish, "logprobs": None}

    def chunk(self, choices: list, usage: dict[str, int] | None = None, **extra: Any) -> dict[str, Any]:
        """A chunk's fields besides id, object, created and model."""
        return {"choices": choices, **extra, **({"usage": usage} if usage else {})}

    def begin_stream(self, options: dict[str, Any], count_prompt: Callable[[], int]) -> None:
        """Before the generation starts: read `stream_options` (`count_prompt` gives the prompt's tokens
        for shapes that report usage as it grows; it must not be called once the generation runs)."""
        self.include_usage = self.with_usage and bool(options.get("include_usage"))

    def stream_opening(self) -> list[dict[str, Any]]:
        if not self.chat or self.role_delta is None:
            return []
        return [self.chunk([{"index": 0, "delta": self.role_delta, "finish_reason": None, "logprobs": None}])]

    def stream_piece(self, text: str) -> list[dict[str, Any]]:
        return [self.chunk([self.piece_choice(text, None)])]

    def stream_stopped(self) -> list[dict[str, Any]]:
        """The chunks before `[DONE]` when the generation stopped before its end (no finish_reason)."""
        return []

    def stream_closing(self, gen: Generation, finish: str) -> list[dict[str, Any]]:
        out = [self.chunk([self.piece_choice(None, finish)])]
        if self.include_usage:
            out.append(self.chunk([], usage_of(gen)))
        return out


class OpenAIHandler(BaseHTTPRequestHandler):
    """One connection's requests. The generation route is split in steps (`_generation_request`:
    read, `_parse_generation`, `_respond`) that a test double's handler recombines with its faults."""

    protocol_version = "HTTP/1.1"
    server_version = "raglc-llm-server/1"

    @property
    def app(self) -> OpenAICompatServer:
        return self.server.app  # type: ignore[attr-defined]  # set on the server below, for its handlers

    def shapes(self, chat: bool = True) -> OpenAIShapes:
        """How this request's answer and errors are shaped."""
        return OpenAIShapes(chat)

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
        self._send_json(status, self.shapes().error_body(status, message, kind), headers)

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

    def _event(self, payload: Any) -> None:
        self._chunk(b"data: " + json.dumps(payload, ensure_ascii=False).encode() + b"\n\n")

    def _end_stream(self) -> None:
        self._chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    # -- routes ------------------------------------------------------------------------
    def do_GET(self):
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

    def _logged_body(self, entry: dict[str, Any]) -> dict[str, Any] | None:
        """The request's JSON body, its model and stream flag noted in `entry`; None once a bad body was
        answered with its error."""
        try:
            body = self._read_body()
        except RequestError as err:
            entry["status"] = err.status
            self._send_error(err.status, err.message, err.kind)
            return None
        entry.update(model=body.get("model"), stream=bool(body.get("stream")))
        return body

    def _generation_request(self, entry: dict[str, Any]) -> None:
        """Read, check and answer one generation request; `entry` (the request log's line) gets its model,
        stream flag, prompt size and status."""
        body = self._logged_body(entry)
        if body is None:
            return None
        try:
            prompt, limit = self._parse_generation(body, entry)
        except RequestError as err:
            entry["status"] = err.status
            return self._send_error(err.status, err.message, err.kind)
        self._respond(prompt, limit, body, entry)

    def _parse_generation(self, body: dict[str, Any], entry: dict[str, Any]) -> tuple[Prompt | str, int]:
        """The prompt (a Prompt for chat, the raw text for completions) and the token limit; RequestError
        when the request is not one this server answers."""
        app = self.app
        if body.get("model") != app.model_name:
            raise RequestError(404, f"model {body.get('model')!r} is not served here; this server serves "
                                    f"{app.model_name!r}", "not_found_error")
        limit = max_tokens(body)
        if self.path == "/v1/chat/completions":
            chat = chat_prompt(body)
            entry["prompt_chars"] = len(chat.user) + len(chat.system or "")
            return chat, limit
        prompt = body.get("prompt")
        if isinstance(prompt, list) and len(prompt) == 1:
            prompt = prompt[0]
        if not isinstance(prompt, str):
            raise RequestError(400, "`prompt` must be a string (or a list of one string)")
        entry["prompt_chars"] = len(prompt)
        return prompt, limit

    def _respond(self, prompt: Prompt | str, limit: int, body: dict[str, Any], entry: dict[str, Any]) -> None:
        """Generate and send the answer, streamed or whole."""
        shapes = self.shapes(chat=isinstance(prompt, Prompt))
        try:
            if body.get("stream"):
                complete = self._stream_answer(prompt, limit, body.get("stream_options") or {}, shapes)
                entry["status"] = 200 if complete else "interrupted"
            else:
                self._answer(prompt, limit, shapes)
                entry["status"] = 200
        except ValueError as err:  # e.g. the prompt does not fit the model's window
            entry["status"] = 400
            return self._send_error(400, str(err))

    def _answer(self, prompt: Prompt | str, limit: int, shapes: OpenAIShapes) -> None:
        gen = self.app.generate(prompt, limit)
        chat = shapes.chat
        choice: dict[str, Any] = {"index": 0, "finish_reason": shapes.finish_reason(gen, limit), "logprobs": None}
        if chat:
            choice["message"] = {"role": "assistant", "content": gen.text}
        else:
            choice["text"] = gen.text
        payload = {"id": answer_id(chat), "object": "chat.completion" if chat else "text_completion",
                   "created": int(time.time()), "model": self.app.model_name, "choices": [choice]}
        if shapes.with_usage:
            payload["usage"] = usage_of(gen)
        payload.update(shapes.answer_extras(gen))
        self._send_json(200, payload)

    def _stream_answer(self, prompt: Prompt | str, limit: int, options: dict[str, Any], shapes: OpenAIShapes) -> bool:
        """Stream the answer in `shapes`' framing; False when the generation stopped before its end (STOPPED:
        the stream then ends without a finish_reason)."""
        chat = shapes.chat
        shapes.begin_stream(options, lambda: self.app.prompt_tokens(prompt))
        base = {"id": answer_id(chat), "object": "chat.completion.chunk" if chat else "text_completion",
                "created": int(time.time()), "model": self.app.model_name}

        def send(chunks: list[dict[str, Any]]) -> None:
            for chunk in chunks:
                self._event({**base, **chunk})

        pieces = self.app.stream(prompt, limit)
        first = next(pieces)  # generation errors surface before the 200 is sent
        self._start_stream()
        send(shapes.stream_opening())
        gen: Generation | None = None
        for piece in itertools.chain([first], pieces):
            if piece is STOPPED:  # [DONE] after what was sent, no finish_reason
                send(shapes.stream_stopped())
                self._end_stream()
                for _ in pieces:  # the stopped decoding runs to its end before the next turn
                    pass
                return False
            if isinstance(piece, Generation):
                gen = piece
                break
            send(shapes.stream_piece(piece))
        assert gen is not None, "a stream ends with its Generation"
        send(shapes.stream_closing(gen, shapes.finish_reason(gen, limit)))
        self._end_stream()
        return True


class OpenAICompatServer:
    """The HTTP server; `start()` serves from a background thread, `serve_forever()` in this one."""

    handler: type[OpenAIHandler] = OpenAIHandler  # answers each connection's requests

    def __init__(self, backend, model_name: str | None = None, host: str = "127.0.0.1", port: int = 0,
                 request_log: str | Path | None = None, api_key: str | None = None):
        self.backend = backend
        self.api_key = api_key  # when set, generation requests must send `Authorization: Bearer <key>`
        self.model_name = model_name or backend.model_id
        self._generation_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self.stats = {"requests": 0, "in_flight": 0, "max_in_flight": 0}
        self.request_log = Path(request_log) if request_log else None
        self.httpd = ThreadingHTTPServer((host, port), self.handler)
        self.httpd.daemon_threads = True
        self.httpd.app = self  # type: ignore[attr-defined]  # the handlers' way back to this server
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> OpenAICompatServer:
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self.httpd.serve_forever()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> OpenAICompatServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- bookkeeping -------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        with self._state_lock:
            return dict(self.stats)

    def enter(self) -> None:
        with self._state_lock:
            self.stats["requests"] += 1
            self.stats["in_flight"] += 1
            self.stats["max_in_flight"] = max(self.stats["max_in_flight"], self.stats["in_flight"])

    def leave(self) -> None:
        with self._state_lock:
            self.stats["in_flight"] -= 1

    def describe_request(self, entry: dict[str, Any]) -> str:
        """The log line of a request (its entry in the request log)."""
        return f"{entry.get('path')} {entry.get('model')} -> {entry.get('status')}"

    def log_request(self, entry: dict[str, Any]) -> None:
        log.info("%s", self.describe_request(entry))
        if self.request_log is not None:
            line = json.dumps({"time": round(time.time(), 3), **entry}, ensure_ascii=False)
            with self._state_lock, self.request_log.open("a", encoding="utf-8") as fh:
                fh.write(line + "\n")

    # -- generation --------------------------------------------------------------------
    @contextmanager
    def _turn(self):
        """One generation at a time."""
        with self._generation_lock:
            yield

    def _generate_now(self, prompt: Prompt | str, limit: int) -> Generation:
        """The whole answer, in the caller's turn."""
        if isinstance(prompt, Prompt):
            return self.account(prompt, self.backend.generate([prompt])[0])
        return self.account(prompt, self.backend.complete(prompt, max_new_tokens=limit))

    def account(self, prompt: Prompt | str, gen: Generation) -> Generation:
        """The answer as its usage reports it (a test double adds what a provider would bill: cached tokens)."""
        return gen

    def generate(self, prompt: Prompt | str, limit: int) -> Generation:
        """The whole answer, when its turn comes."""
        with self._turn():
            return self._generate_now(prompt, limit)

    def prompt_tokens(self, prompt: Prompt | str) -> int:
        """The prompt's tokens as the usage counts them (a raw completions prompt gets the tokenizer's
        special tokens). Waits while a generation decodes: they share the tokenizer."""
        with self._generation_lock:
            return self.backend.prompt_tokens(prompt if isinstance(prompt, Prompt) else Prompt(prompt, chat=False))

    def stream(self, prompt: Prompt | str, limit: int) -> Iterator[Any]:
        """Text pieces, then the finished Generation last, when its turn comes (a backend that cannot
        stream gives one piece); or STOPPED instead of the rest, after which the pieces left are drained."""
        with self._turn():
            if hasattr(self.backend, "stream"):
                pieces = self.backend.stream(prompt, max_new_tokens=limit)
                yield from pieces
                yield self.account(prompt, pieces.generation)
            else:
                gen = self._generate_now(prompt, limit)
                yield gen.text
                yield gen


def argument_parser(prog: str, description: str) -> argparse.ArgumentParser:
    """The command line of `python -m llm.server` (test doubles add their own flags to it)."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--model", default="bundled:smollm2", help="bundled:NAME, a local path or .gguf, or a hub id")
    parser.add_argument("--served-model-name", default=None, help="the `model` clients send (default: --model)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--context-window", type=int, default=None)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--request-log", default=None, help="append one JSON line per request (no headers)")
    parser.add_argument("--api-key-env", default=None,
                        help="require the key held by this environment variable "
                             "(a key on the command line would show in ps)")
    return parser


def serve(parser: argparse.ArgumentParser, args: argparse.Namespace,
          make_server: Callable[..., OpenAICompatServer] = OpenAICompatServer) -> None:
    """Load the model named by `args`, then serve it until interrupted. `make_server(backend, model_name,
    host, port, request_log, api_key)` builds the server (a test double passes its own)."""
    api_key = None
    if args.api_key_env:
        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            parser.error(f"--api-key-env {args.api_key_env}: that environment variable is not set")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    from llm.transformers_backend import TransformersGenerator

    backend = TransformersGenerator(model=args.model, context_window=args.context_window, dtype=args.dtype,
                                    device=args.device, threads=args.threads)
    _ = backend.model  # load the weights before the port opens: clients see a ready server or none
    server = make_server(backend, args.served_model_name, args.host, args.port, args.request_log, api_key)
    log.info("serving %s at %s", server.model_name, server.url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.httpd.server_close()


def main(argv: list[str] | None = None) -> None:
    parser = argument_parser("python -m llm.server", __doc__.split("\n\n")[0])
    serve(parser, parser.parse_args(argv))


if __name__ == "__main__":
    main()
