"""Retries, a concurrency gate and whole-attempt deadlines for the requests of one HTTP endpoint
(the OpenAI-compatible generator's, llm/openai_backend.py; `RetryingCalls` runs each of its requests).

- Up to `max_concurrency` requests in flight: each attempt passes a gate (`_Gate`).
- Servers that answer one request at a time and let a new request interrupt the one in flight
  (llama.cpp's server, by default) cut streams when requests overlap. A stream cut off (ended
  without a finish_reason, or its connection closed mid-answer) while another request to the
  endpoint was in flight lowers the concurrency (halved, down to 1; logged once with the reason)
  and is retried at once, without using up `max_retries`: that budget is for a broken server. The
  retries end: at concurrency 1 no attempt overlaps another, and a cut with nothing else in flight
  is an ordinary retryable fault.
- Failures worth retrying (HTTP 429, 408, 409, 5xx, timeouts, connection errors, bodies that are
  not the expected JSON) are retried up to `max_retries` times with exponential backoff and
  jitter (a server's `Retry-After` is honoured up to `backoff_max_s`); then `GenerationError`.
  Other HTTP errors (400, 401, 404, ...) fail at once: retrying cannot fix them.
- `timeout_s` bounds the whole of each attempt: connecting, waiting for the answer and reading all
  of it (the full body, or the stream to its end). An attempt still unfinished after `timeout_s`
  seconds is abandoned (its connection is shut: `_Attempt`) and counts as a timeout: retried like
  one, and when it was the last attempt, `GenerationError` names the timeout. So a server that
  keeps sending but never finishes (a stream that drips chunks forever, a body that trickles)
  cannot hold a request longer than `timeout_s` per attempt.
- An HTTP error's message names the status and the body's message, or for a body that is not JSON
  (a proxy's HTML page, a plain-text 500) its first 200 characters (`describe_error`).

Errors are the openai client's (its own copy of httpx underneath); the client is imported only to
classify them.
"""

from __future__ import annotations

import json
import logging
import random
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

log = logging.getLogger(__name__)

RETRY_STATUS = {408, 409, 429}  # and every 5xx
T = TypeVar("T")


class GenerationError(RuntimeError):
    """A request failed for good (retries exhausted, or an error retrying cannot fix)."""


class MalformedResponse(ValueError):
    """The server answered 200 with a body that is not a usable completion."""


class AttemptTimeout(TimeoutError):
    """An attempt did not finish (connect, wait, whole body or stream) within `timeout_s`."""


class StreamCut(MalformedResponse):
    """The answer was cut off: the stream ended without a finish_reason, or the server closed the
    connection mid-answer (as a server does that interrupts a request when a new one comes in)."""


# -- what an error is ------------------------------------------------------------------------


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


def describe_error(err: BaseException) -> str:
    """One line: the error's type, its HTTP status, and what the server said (see the module docstring)."""
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


# -- the gate and the attempt ------------------------------------------------------------------


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


class Attempt:
    """One HTTP attempt run in its own thread, so that the caller can abandon it at its deadline.
    Abandoning sets `cancelled` (a stream loop checks it after every chunk) and shuts down the
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
                    self._shutdown(sock)

    def finish(self) -> None:
        """The attempt is over (its response closed): its connection may serve others; hands off."""
        with self._lock:
            self._finished, self._socket = True, None

    def cancel(self) -> None:
        with self._lock:
            self.cancelled.set()
            if self._socket is not None and not self._finished:
                self._shutdown(self._socket)

    @staticmethod
    def _shutdown(sock: socket.socket) -> None:
        try:  # the OS-level shutdown (also under TLS): wakes the blocked read; the thread closes the rest
            socket.socket.shutdown(sock, socket.SHUT_RDWR)
        except OSError:
            pass


# -- the calls ---------------------------------------------------------------------------------


class RetryingCalls:
    """Runs an endpoint's requests: each through the gate, each attempt bounded by `timeout_s`, failures
    retried with backoff (see the module docstring). `name` and `where` (the model and the endpoint's
    URL) name the endpoint in logs and errors; `bind_response` is the HTTP client's response hook."""

    def __init__(self, name: str, where: str, max_concurrency: int, timeout_s: float, max_retries: int,
                 backoff_base_s: float, backoff_max_s: float):
        self.name, self.where = name, where
        self.timeout_s, self.max_retries = timeout_s, max_retries
        self.backoff_base_s, self.backoff_max_s = backoff_base_s, backoff_max_s
        self._gate = _Gate(max_concurrency)  # lowered when overlapping requests cut each other off
        self._local = threading.local()  # .attempt: the Attempt this thread is running
        self._lock = threading.Lock()
        self._rng = random.Random()
        self._lowered_logged = False
        self.concurrency_cuts = 0  # attempts cut off by an overlapping request, retried outside max_retries

    @property
    def concurrency(self) -> int:
        """Requests allowed in flight now: `max_concurrency`, or less once overlapping requests were cut."""
        return self._gate.limit

    def call(self, send: Callable[[Attempt], T]) -> T:
        """`send(attempt)`'s result, retried as the module docstring says; GenerationError when none came."""
        last: BaseException | None = None
        failures = 0  # attempts that used up the retry budget (cuts by overlapping requests do not)
        while True:
            done = self._gate.acquire()
            slot: _Slot | None = done  # None once given back
            try:
                return self._attempt(send)
            except Exception as err:  # classified below
                overlapped = self._gate.release(done)
                slot = None
                if not retryable(err):
                    raise GenerationError(f"{self.name} at {self.where}: {describe_error(err)} "
                                          "(not retried: retrying cannot fix this error)") from err
                if overlapped and is_cut(err):
                    self._concurrent_cut(err, done)
                    continue  # at once: the gate now lets fewer requests in
                last, failures = err, failures + 1
                if failures > self.max_retries:
                    break
                delay = backoff_delay(failures - 1, self.backoff_base_s, self.backoff_max_s, _retry_after(last),
                                      self._rng)
                log.warning("%s: %s; retry %d/%d in %.2fs", self.name, describe_error(last), failures,
                            self.max_retries, delay)
                time.sleep(delay)
            finally:
                if slot is not None:
                    self._gate.release(slot)
        raise GenerationError(f"{self.name} at {self.where}: gave up after {self.max_retries + 1} attempts; "
                              f"last error: {describe_error(last)}") from last

    def _concurrent_cut(self, err: BaseException, slot: _Slot) -> None:
        """An answer cut off while another request was in flight: fewer requests at once, then retry."""
        with self._lock:
            self.concurrency_cuts += 1
        lowered = self._gate.lower(slot)
        if lowered is None:
            log.debug("%s: %s while another request was in flight; retrying (concurrency %d)", self.name,
                      describe_error(err), self._gate.limit)
            return
        old, new = lowered
        with self._lock:
            first, self._lowered_logged = not self._lowered_logged, True
        log.log(logging.WARNING if first else logging.INFO,
                "%s at %s: %s while another request was in flight: the server seems to interrupt a request when "
                "a new one comes in (llama.cpp's server does, serving one at a time); lowering the concurrency "
                "from %d to %d and retrying (not counted against max_retries)%s", self.name, self.where,
                describe_error(err), old, new, "; set generator.max_concurrency=1 for this server" if first else "")

    def bind_response(self, response: Any) -> None:
        """The HTTP client's response hook: hands the response's socket to the attempt of this thread."""
        attempt = getattr(self._local, "attempt", None)
        if attempt is not None:
            attempt.bind(response)

    def _attempt(self, send: Callable[[Attempt], T]) -> T:
        """One request, bounded as a whole by `timeout_s` (see the module docstring)."""
        attempt = Attempt()
        result: Future[T] = Future()

        def run() -> None:
            self._local.attempt = attempt
            try:
                result.set_result(send(attempt))
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
