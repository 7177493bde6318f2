"""The judge is handed a way to ask (llm's OpenAI-compatible backend), and hands its outcome back.

Real HTTP servers on 127.0.0.1: one that always fails, one that drips a body forever. No module
state is read: the runner's record carries the failure reason from the metric's own outcome."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from eval.sample import PromptTemplate, Sample
from experiments.arms import Answer
from experiments.run import _record
from llm.judge_backend import build_judge


class _Failing(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.server.hits += 1
        body = b'{"error": {"message": "overloaded"}}'
        self.send_response(503)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Dripping(BaseHTTPRequestHandler):
    """Headers at once, then one byte of a never-ending body every 0.1 s: no single read times out."""

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.server.hits += 1
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "100000000")
        self.end_headers()
        try:
            while not self.server.stop.is_set():
                self.wfile.write(b" ")
                self.wfile.flush()
                time.sleep(0.1)
        except OSError:  # the client gave up and shut the connection
            pass


def _serve(handler):
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    httpd.hits, httpd.stop = 0, threading.Event()
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


@pytest.fixture
def failing():
    httpd = _serve(_Failing)
    yield httpd
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def dripping():
    httpd = _serve(_Dripping)
    yield httpd
    httpd.stop.set()
    httpd.shutdown()
    httpd.server_close()


def _loong_sample() -> Sample:
    return Sample(id="s1", benchmark="loong", task="t", language="en", length_level="1", context="doc",
                  question="What is it?", answers=["42"], template=PromptTemplate("{context}\n{question}"),
                  metric="loong_judge", group="g", reference_extra={"question": "What is it?", "answer": "42"})


def test_a_failing_judge_endpoint_fails_the_record_with_its_reason(failing, tmp_path, monkeypatch):
    monkeypatch.delenv("JUDGE_API_KEY", raising=False)
    judge = build_judge("judge-model", f"http://127.0.0.1:{failing.server_port}/v1", tmp_path / "j.sqlite",
                        timeout_s=5, max_retries=1, backoff_base_s=0.01, backoff_max_s=0.02)
    usage = {"prompt_tokens": 10, "completion_tokens": 2, "latency_s": 0.5, "generation_s": 0.5}
    rec = _record(Answer(_loong_sample(), text="forty-two", usage=usage), {"arm": "longctx"}, "h", None, judge)
    assert rec["status"] == "failed"
    assert rec["reason"] == "judge call failed: InternalServerError (HTTP 503)"
    assert "failed_reason" not in rec["scores"] and rec["scores"]["failed"] == 1.0
    assert failing.hits == 2  # the backend's retries: 1 + max_retries
    # a second judge on another endpoint is independent: nothing was left behind in a module
    other = build_judge("judge-model", f"http://127.0.0.1:{failing.server_port}/v1", tmp_path / "j.sqlite",
                        timeout_s=5, max_retries=0)
    assert other.calls == 0 and judge.calls == 1


def test_the_judge_gives_up_on_a_dripping_server_within_timeout_times_attempts(dripping, tmp_path):
    timeout_s, retries = 1.0, 1
    judge = build_judge("judge-model", f"http://127.0.0.1:{dripping.server_port}/v1", tmp_path / "j.sqlite",
                        timeout_s=timeout_s, max_retries=retries, backoff_base_s=0.01, backoff_max_s=0.02)
    from eval.metrics import score
    from eval.sample import Reference

    t0 = time.perf_counter()
    values = score("loong_judge", "x", Reference(["42"], extra={"question": "q", "answer": "42"}), judge=judge)
    elapsed = time.perf_counter() - t0
    assert values["failed"] == 1.0 and values["failed_reason"] == "AttemptTimeout"
    assert dripping.hits == retries + 1
    assert elapsed < timeout_s * (retries + 1) + 2.0, elapsed  # the SDK's per-read timeout alone would wait forever


class _Rambling(BaseHTTPRequestHandler):
    """A judge that answers, but without a rating anywhere in its reply."""

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.server.hits += 1
        body = (b'{"id": "x", "object": "chat.completion", "created": 0, "model": "judge-model", "choices": '
                b'[{"index": 0, "message": {"role": "assistant", "content": "Both answers look reasonable to me."}, '
                b'"finish_reason": "stop"}], "usage": {"prompt_tokens": 5, "completion_tokens": 6, '
                b'"total_tokens": 11}}')
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_an_unparsable_judge_reply_is_its_own_outcome_not_a_zero(tmp_path):
    httpd = _serve(_Rambling)
    try:
        judge = build_judge("judge-model", f"http://127.0.0.1:{httpd.server_port}/v1", tmp_path / "j.sqlite",
                            timeout_s=5, max_retries=0)
        usage = {"prompt_tokens": 10, "completion_tokens": 2, "latency_s": 0.5, "generation_s": 0.5}
        rec = _record(Answer(_loong_sample(), text="forty-two", usage=usage), {"arm": "longctx"}, "h", None, judge)
    finally:
        httpd.shutdown()
        httpd.server_close()
    # failed: out of the arm's mean (and so out of the paired comparison), counted, and asked again on resume
    assert rec["status"] == "failed" and rec["reason"].startswith("judge reply unparsable: 'Both answers look")
    assert rec["scores"]["unparsable"] == 1.0 and "unparsable_reply" not in rec["scores"]
