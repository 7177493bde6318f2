"""The judge is handed a way to ask (llm's OpenAI-compatible backend), and hands its outcome back.

Real HTTP servers on 127.0.0.1: one that always fails, one that drips a body forever. No module
state is read: the runner's record carries the failure reason from the metric's own outcome."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from eval.metrics import NoJudgment
from eval.sample import PromptTemplate, Sample
from experiments import redact
from experiments.arms import Answer
from experiments.importers import predictions
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
    assert "score" not in rec and "scores" not in rec and rec["prediction"] == "forty-two"  # no judgment, no 0
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
    assert values == NoJudgment(NoJudgment.FAILED, "AttemptTimeout")
    assert dripping.hits == retries + 1
    assert elapsed < timeout_s * (retries + 1) + 2.0, elapsed  # the SDK's per-read timeout alone would wait forever


class _Replying(BaseHTTPRequestHandler):
    """A judge that answers every request with the server's `reply` text."""

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.server.hits += 1
        body = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "judge-model",
                           "choices": [{"index": 0, "message": {"role": "assistant", "content": self.server.reply},
                                        "finish_reason": "stop"}],
                           "usage": {"prompt_tokens": 5, "completion_tokens": 6, "total_tokens": 11}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def replying():
    httpd = _serve(_Replying)
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def test_an_unparsable_judge_reply_is_its_own_outcome_not_a_zero(tmp_path):
    httpd = _serve(_Replying)
    httpd.reply = "Both answers look reasonable to me."  # no rating anywhere
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
    assert "score" not in rec and "scores" not in rec and rec["prompt_tokens"] == 10


USAGE = {"prompt_tokens": 10, "completion_tokens": 2, "latency_s": 0.5, "generation_s": 0.5}


def _runner_and_importer_records(judge, secrets=frozenset()):
    """The record of one answer as the runner writes it, and as the importer writes the same prediction."""
    sample = _loong_sample()
    runner = _record(Answer(sample, text="forty-two", usage=dict(USAGE)), {"arm": "longctx"}, "h", None, judge,
                     secrets)
    imported = predictions.Prediction(
        "preds.jsonl:1", sample.id, "longctx", "label", "forty-two", benchmark=sample.benchmark, task=sample.task,
        level=sample.length_level, language=sample.language, group=sample.group, answers=list(sample.answers),
        reference=sample.reference(), metric=sample.metric, usage=dict(USAGE), question=sample.question)
    return runner, predictions._record(imported, "h", judge)


@pytest.mark.parametrize("reply, status", [("Rating: [[80]]", "ok"), ("No idea.", "failed")])
def test_the_runner_and_the_importer_build_one_record_for_one_outcome(replying, tmp_path, reply, status):
    """Both go through the schema's constructors: the same keys and values, judged or not."""
    replying.reply = reply
    judge = build_judge("judge-model", f"http://127.0.0.1:{replying.server_port}/v1", tmp_path / "j.sqlite",
                        timeout_s=5, max_retries=0)
    runner, imported = _runner_and_importer_records(judge)
    assert runner["status"] == status and runner == imported
    assert list(runner) == list(imported)


def test_a_failed_judge_call_is_one_record_on_both_paths(failing, tmp_path):
    judge = build_judge("judge-model", f"http://127.0.0.1:{failing.server_port}/v1", tmp_path / "j.sqlite",
                        timeout_s=5, max_retries=0)
    runner, imported = _runner_and_importer_records(judge)
    assert runner["status"] == "failed" and runner == imported and "score" not in runner


def test_a_secret_in_a_judge_reply_is_masked_in_the_reason_on_both_paths(replying, tmp_path, monkeypatch):
    """An unparsable reply is quoted in the record's reason: a key it echoes (an environment secret, a
    `key=value` credential, a value of the run config) is masked by the record constructors."""
    env_secret, config_secret = "env-judge-secret-8f3a1c", "config-secret-41b7e2"
    monkeypatch.setenv("JUDGE_API_KEY", env_secret)
    replying.reply = f"Invalid request from {env_secret}; api_key=sk-live-5d9e0c7a; note {config_secret}"
    judge = build_judge("judge-model", f"http://127.0.0.1:{replying.server_port}/v1", tmp_path / "j.sqlite",
                        timeout_s=5, max_retries=0)
    runner, imported = _runner_and_importer_records(judge, secrets=frozenset({config_secret}))
    for rec in (runner, imported):
        assert rec["status"] == "failed" and rec["reason"].startswith("judge reply unparsable: 'Invalid request")
        assert env_secret not in rec["reason"] and "sk-live-5d9e0c7a" not in rec["reason"], rec["reason"]
        assert rec["reason"].count(redact.MASK) >= 2
    assert config_secret not in runner["reason"]  # the importer has no run config to name one
