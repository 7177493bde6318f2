"""The project's OpenAI-compatible server over the real SmolLM2, spoken to in raw HTTP: the one server test over
the real model (its weights are the session's `generator`'s). Its command line (`python -m llm.server`) is
started as a user starts it, over the tiny random-weight Llama (conftest's `tiny_llm`), which it loads as any
local model. (Its test double with faults and other servers' dialects, testsupport/fake_servers.py, is tested
over the scripted model in test_fake_servers.py.)"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from llm.prompt import Prompt
from llm.server import OpenAICompatServer
from tests.conftest import ROOT

MODEL = "bundled:smollm2"
QUESTION = "What is the capital of France? Answer in one word."


@pytest.fixture(scope="module")
def server(generator, tmp_path_factory):
    _ = generator.model  # load the weights before timing anything
    log = tmp_path_factory.mktemp("server") / "requests.jsonl"
    with OpenAICompatServer(generator, request_log=log) as srv:
        yield srv


def _post(server, path, body, headers=None, raw=None, timeout=120):
    data = raw if raw is not None else json.dumps(body).encode()
    req = urllib.request.Request(server.url.removesuffix("/v1") + path, data=data, method="POST",
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


def _events(raw: bytes) -> list:
    lines = [ln[len("data: "):] for ln in raw.decode().split("\n") if ln.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    return [json.loads(ln) for ln in lines[:-1]]


def _chat(max_tokens=6, **extra):
    return {"model": MODEL, "messages": [{"role": "user", "content": QUESTION}], "max_tokens": max_tokens, **extra}


def test_models_lists_the_served_model(server):
    with urllib.request.urlopen(server.url + "/models", timeout=10) as resp:
        listed = json.loads(resp.read())
    assert [m["id"] for m in listed["data"]] == [MODEL] and listed["data"][0]["max_model_len"] == 8192


def test_chat_answer_and_usage_match_the_backend(server, generator):
    status, _, raw = _post(server, "/v1/chat/completions", _chat())
    body = json.loads(raw)
    direct = generator.generate([Prompt(QUESTION, max_new_tokens=6)])[0]
    assert status == 200 and body["object"] == "chat.completion" and body["model"] == MODEL
    assert body["choices"][0]["message"] == {"role": "assistant", "content": direct.text}
    assert body["usage"] == {"prompt_tokens": direct.prompt_tokens, "completion_tokens": direct.completion_tokens,
                             "total_tokens": direct.prompt_tokens + direct.completion_tokens}
    assert body["choices"][0]["finish_reason"] == ("length" if direct.completion_tokens >= 6 else "stop")


def test_chat_stream_sends_the_same_answer_piece_by_piece(server):
    _, _, raw = _post(server, "/v1/chat/completions", _chat())
    whole = json.loads(raw)
    status, headers, raw = _post(server, "/v1/chat/completions",
                                 _chat(stream=True, stream_options={"include_usage": True}))
    events = _events(raw)
    assert status == 200 and headers["Content-Type"] == "text/event-stream"
    assert events[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    text = "".join(e["choices"][0]["delta"].get("content", "") for e in events if e["choices"])
    assert text.strip() == whole["choices"][0]["message"]["content"]
    assert events[-2]["choices"][0]["finish_reason"] in ("stop", "length")
    assert events[-1]["choices"] == [] and events[-1]["usage"] == whole["usage"]
    _, _, raw = _post(server, "/v1/chat/completions", _chat(stream=True))
    assert all("usage" not in e for e in _events(raw)), "usage chunk only when asked for"


def test_completions_continue_raw_text(server, generator):
    text = "The capital of France is"
    status, _, raw = _post(server, "/v1/completions", {"model": MODEL, "prompt": text, "max_tokens": 4})
    body = json.loads(raw)
    direct = generator.complete(text, max_new_tokens=4)
    assert status == 200 and body["object"] == "text_completion"
    assert body["choices"][0]["text"] == direct.text
    assert body["usage"]["prompt_tokens"] == len(generator.tokenizer.hf(text)["input_ids"])
    _, _, raw = _post(server, "/v1/completions", {"model": MODEL, "prompt": [text], "max_tokens": 4, "stream": True,
                                                  "stream_options": {"include_usage": True}})
    events = _events(raw)
    assert "".join(e["choices"][0]["text"] for e in events if e["choices"]).strip() == direct.text
    assert events[-1]["usage"] == body["usage"]


@pytest.mark.parametrize("body, status, message", [
    ({**_chat(), "model": "gpt-4o"}, 404, "not served"),
    ({"model": MODEL, "messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
                                   {"role": "user", "content": "c"}]}, 400, "single-turn"),
    ({"model": MODEL, "messages": []}, 400, "messages"),
    ({**_chat(), "max_tokens": 0}, 400, "max_tokens"),
    ({**_chat(), "messages": [{"role": "user", "content": "word " * 9000}]}, 400, "exceeds"),
])
def test_bad_requests_get_openai_style_errors(server, body, status, message):
    got, _, raw = _post(server, "/v1/chat/completions", body)
    assert got == status and message in json.loads(raw)["error"]["message"]


def test_chat_prompt_single_turn_shapes():
    from llm.server import RequestError, chat_prompt

    alone = chat_prompt({"messages": [{"role": "system", "content": "Rate this summary."}], "max_tokens": 3})
    assert (alone.user, alone.system, alone.max_new_tokens) == ("Rate this summary.", None, 3)
    both = chat_prompt({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]})
    assert (both.user, both.system) == ("U", "S")
    with pytest.raises(RequestError, match="exactly one user message"):
        chat_prompt({"messages": [{"role": "system", "content": "S1"}, {"role": "system", "content": "S2"}]})


def test_a_body_that_is_not_json_is_a_400(server):
    status, _, raw = _post(server, "/v1/chat/completions", None, raw=b"{nope")
    assert status == 400 and "not JSON" in json.loads(raw)["error"]["message"]


def test_the_product_server_injects_no_faults(server):
    """Faults live in the test double only: no `/_faults` route, an `X-Fault` header is an ordinary header."""
    assert _post(server, "/_faults", {"faults": ["429"]})[0] == 404
    status, _, raw = _post(server, "/v1/chat/completions", _chat(2), headers={"X-Fault": "500", "X-Dialect": "tgi"})
    assert status == 200 and json.loads(raw)["choices"][0]["finish_reason"] in ("stop", "length")
    assert set(server.snapshot()) == {"requests", "in_flight", "max_in_flight"}
    assert all("fault" not in entry for entry in _log_entries(server))


def _log_entries(server) -> list[dict]:
    log = server.request_log
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_api_key_is_required_when_set_and_never_logged(generator, tmp_path):
    secret = "sk-server-side-secret-123"
    log = tmp_path / "requests.jsonl"
    with OpenAICompatServer(generator, request_log=log, api_key=secret) as srv:
        assert _post(srv, "/v1/chat/completions", _chat(2))[0] == 401
        assert _post(srv, "/v1/chat/completions", _chat(2), headers={"Authorization": "Bearer wrong"})[0] == 401
        assert _post(srv, "/v1/chat/completions", _chat(2), headers={"Authorization": f"Bearer {secret}"})[0] == 200
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert [e["status"] for e in entries] == [401, 401, 200]
    assert secret not in log.read_text() and "Bearer" not in log.read_text()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def command_line_server(module: str, *args: str, model: str = MODEL):
    """`python -m MODULE --model MODEL --port PORT ARGS` as a user starts it: a separate process, a real port;
    yields its base URL once it answers."""
    port = _free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    proc = subprocess.Popen([sys.executable, "-m", module, "--model", str(model), "--port", str(port), *args],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        url = f"http://127.0.0.1:{port}/v1"
        deadline = time.time() + 300
        while True:
            try:
                with urllib.request.urlopen(url + "/models", timeout=5) as resp:
                    assert json.loads(resp.read())["data"][0]["id"] == str(model)
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
                assert time.time() < deadline, "server did not come up"
                time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_the_command_line_server_answers(tmp_path, tiny_llm):
    """`python -m llm.server` as a user starts it (over a local model folder: the tiny Llama)."""
    with command_line_server("llm.server", "--request-log", str(tmp_path / "log.jsonl"), model=tiny_llm) as url:
        body = {**_chat(3), "model": str(tiny_llm)}
        req = urllib.request.Request(url + "/chat/completions", data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=120) as resp:
            body = json.loads(resp.read())
        assert body["usage"]["completion_tokens"] >= 1 and body["choices"][0]["message"]["content"]
        log_file, until = tmp_path / "log.jsonl", time.time() + 10
        # the server logs a request after answering it: wait for the line, not only the file (created first)
        while not (log_file.exists() and log_file.read_text().strip()) and time.time() < until:
            time.sleep(0.1)
        assert json.loads(log_file.read_text().splitlines()[-1])["status"] == 200


def test_a_run_against_the_server_logs_no_line_per_request_unless_asked(fake_server, tmp_path, caplog):
    """httpx writes `HTTP Request: POST ... 200 OK` at INFO for every call: kept out of a run's log at the
    default `run.log_level=info`, shown with `run.log_level=debug`. (The client's logging is what is checked:
    the server is conftest's fake one over the scripted model.)"""
    from experiments.run import run
    from tests.conftest import SCRIPTED, compose

    server = fake_server

    def lines_per_request(level: str) -> list[str]:
        caplog.clear()
        overrides = ["generator=smollm2_server", f"generator.base_url={server.url}", f"generator.model={SCRIPTED}",
                     "arm=closedbook",
                     "benchmark.languages=[en]", "benchmark.levels=[1k]", "benchmark.haystacks_per_level=1",
                     "benchmark.questions_per_haystack=2", "run.progress=false", f"run.log_level={level}",
                     f"run.cache_dir={tmp_path / level}"]  # a cache each, so both runs send their requests
        run_dir = tmp_path / f"run_{level}"
        run_dir.mkdir()
        with caplog.at_level(logging.DEBUG):
            result = run(compose(overrides), run_dir)
        assert result["n_ok"] == 2
        return [r.getMessage() for r in caplog.records if r.getMessage().startswith("HTTP Request:")]

    assert lines_per_request("info") == []
    assert len(lines_per_request("debug")) >= 2
