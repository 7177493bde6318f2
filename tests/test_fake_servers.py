"""The test double testsupport/fake_servers.py (the product's server with faults, dialects and an
interrupting mode) over the scripted model (testsupport/scripted.py; conftest's shared `fake_server`), spoken to
in raw HTTP: the faults it injects. Its command line is started once, as perf/soak.py starts it, over the tiny
random-weight Llama. Its dialects are tested with the client in test_openai_dialects.py, its interrupting mode in
test_interrupting_server.py."""

from __future__ import annotations

import json
import socket
import time
import urllib.error
from types import SimpleNamespace

import pytest

from tests.conftest import SCRIPTED
from tests.test_server import _chat as _server_chat
from tests.test_server import _log_entries, _post, command_line_server
from testsupport.fake_servers import parse_fault


@pytest.fixture(scope="module")
def server(fake_server):
    return fake_server


def _chat(max_tokens=6, **extra):
    """test_server's chat request, to the scripted model."""
    return {**_server_chat(max_tokens, **extra), "model": SCRIPTED}


@pytest.fixture(autouse=True)
def _no_leftover_faults(server):
    server.clear_faults()
    yield
    server.clear_faults()


def test_faults_from_the_queue_and_from_a_header(server):
    status, _, raw = _post(server, "/_faults", {"faults": ["429", "500", "malformed"]})
    assert status == 200 and json.loads(raw)["faults_queued"] == ["429", "500", "malformed"]
    status, headers, raw = _post(server, "/v1/chat/completions", _chat(2))
    assert status == 429 and headers["Retry-After"] == "0" and json.loads(raw)["error"]["type"] == "rate_limit_error"
    assert _post(server, "/v1/chat/completions", _chat(2))[0] == 500
    status, _, raw = _post(server, "/v1/chat/completions", _chat(2))
    with pytest.raises(json.JSONDecodeError):
        json.loads(raw)
    assert status == 200
    assert _post(server, "/v1/chat/completions", _chat(2))[0] == 200  # queue empty: normal again
    assert _post(server, "/v1/chat/completions", _chat(2), headers={"X-Fault": "503"})[0] == 503
    status, _, raw = _post(server, "/v1/chat/completions", _chat(2), headers={"X-Fault": "no_usage"})
    assert status == 200 and "usage" not in json.loads(raw)
    t0 = time.perf_counter()
    with pytest.raises(OSError):  # urllib's timeout: the server hangs
        _post(server, "/v1/chat/completions", _chat(2), headers={"X-Fault": "hang:3"}, timeout=0.5)
    assert time.perf_counter() - t0 < 2.5
    with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
        _post(server, "/v1/chat/completions", _chat(2), headers={"X-Fault": "drop"})
    assert _post(server, "/_faults", {"faults": ["teapot"]})[0] == 400


@pytest.mark.parametrize("stream", [True, False])
def test_drip_never_finishes_and_ends_quietly_when_the_client_goes(server, stream):
    """`drip`: data keeps coming (every read is served within s seconds) but the answer never ends;
    when the client hangs up, the server's thread notices and ends, logged as "client gone"."""
    import http.client

    logged = len(_log_entries(server))
    host, port = server.httpd.server_address[:2]
    conn = http.client.HTTPConnection(host, port, timeout=5)
    conn.request("POST", "/v1/chat/completions", json.dumps(_chat(2, stream=stream)),
                 {"Content-Type": "application/json", "X-Fault": "drip:0.1"})
    resp = conn.getresponse()
    assert resp.status == 200 and resp.getheader("Transfer-Encoding") == "chunked"
    t0 = time.perf_counter()
    if stream:
        events = []
        while len(events) < 8:
            line = resp.readline()
            if line.startswith(b"data: "):
                events.append(line[len(b"data: "):].strip())
        assert b"[DONE]" not in events
        assert all(json.loads(e)["choices"][0] == {"index": 0, "delta": {"content": "."}, "finish_reason": None,
                                                   "logprobs": None} for e in events)
    else:
        body = b"".join(resp.read(1) for _ in range(8))
        assert body == b" " * 8  # valid JSON so far (leading whitespace), never complete
    assert 0.5 <= time.perf_counter() - t0 < 3, "one piece every 0.1 s"
    conn.sock.shutdown(socket.SHUT_RDWR)
    conn.close()
    deadline = time.time() + 3
    while not [e for e in _log_entries(server)[logged:] if e.get("fault") == "drip"] and time.time() < deadline:
        time.sleep(0.05)
    drips = [e for e in _log_entries(server)[logged:] if e.get("fault") == "drip"]
    assert [(e["status"], e["stream"]) for e in drips] == [("client gone", stream)], drips


def test_parse_fault():
    assert parse_fault("hang:2.5") == ("hang", 2.5) and parse_fault("slow") == ("slow", 0.5)
    assert parse_fault("drip") == ("drip", 0.3) and parse_fault("drip:0.05") == ("drip", 0.05)
    assert parse_fault("429") == ("429", None)
    for bad in ("418", "429:3", "hang:soon"):
        with pytest.raises(ValueError):
            parse_fault(bad)


def test_the_command_line_fake_server_injects_faults_in_a_dialect(tiny_llm):
    """`python -m testsupport.fake_servers` (as perf/soak.py starts it): the product's flags and its own."""
    with command_line_server("testsupport.fake_servers", "--faults", "429", "--dialect", "tgi", model=tiny_llm) as url:
        srv = SimpleNamespace(url=url)  # all _post needs of a server
        status, _, raw = _post(srv, "/v1/chat/completions", {**_server_chat(16), "model": str(tiny_llm)})
        assert status == 429 and json.loads(raw) == {"error": "rate limit reached (injected)",
                                                     "error_type": "rate_limit_error"}
        status, _, raw = _post(srv, "/v1/chat/completions", {**_server_chat(16), "model": str(tiny_llm)})
        assert status == 200 and json.loads(raw)["choices"][0]["finish_reason"] in ("eos_token", "length")
        status, _, raw = _post(srv, "/_faults", {"faults": ["503"]})
        assert status == 200 and json.loads(raw)["faults_queued"] == ["503"]
