"""The OpenAI-compatible generator against the dialects of real servers (vLLM, llama.cpp's
llama-server, TGI, Azure OpenAI), as `testsupport.fake_servers --dialect` speaks them over the scripted model
(testsupport/scripted.py, conftest's `scripted_model`: SmolLM2's tokenizer, its answer to the question below):
usage in a last chunk, in every chunk, in the finish chunk or nowhere; chunks with no choices or
choices with no delta; TGI's finish_reason words; error bodies that are not OpenAI's JSON."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from contextlib import ExitStack

import pytest

from llm.openai_backend import GenerationError, OpenAICompatGenerator
from llm.prompt import Prompt
from tests.conftest import SCRIPTED
from testsupport.fake_servers import DIALECTS, FakeOpenAIServer, main

MODEL = SCRIPTED  # the served model's name
TOKENIZER = "bundled:smollm2"
QUESTION = "What is the capital of France? Answer in one word."
STOPS = Prompt(QUESTION, max_new_tokens=16)  # "The capital of France is Paris." and the end of sequence
LIMITED = Prompt(QUESTION, max_new_tokens=5)  # cut at the limit: "The capital of France is"


@pytest.fixture(scope="module")
def servers(scripted_model):
    with ExitStack() as stack:
        yield {d: stack.enter_context(FakeOpenAIServer(scripted_model, dialect=d)) for d in DIALECTS}


@pytest.fixture(autouse=True)
def _no_leftover_faults(servers):
    for srv in servers.values():
        srv.clear_faults()
    yield
    for srv in servers.values():
        srv.clear_faults()


@pytest.fixture(scope="module")
def expected(scripted_model):
    """What the model answers, with the usage the server reports (the openai dialect's, see test_openai_backend)."""
    return {p.max_new_tokens: scripted_model.generate([p])[0] for p in (STOPS, LIMITED)}


def client(server, **settings) -> OpenAICompatGenerator:
    base = dict(model=MODEL, base_url=server.url, api_key_env=None, tokenizer=TOKENIZER, context_window=8192,
                timeout_s=60, max_retries=2, backoff_base_s=0.01, backoff_max_s=0.05, stream=False)
    return OpenAICompatGenerator(**{**base, **settings})


def _post(server, path: str, body: dict, headers: dict | None = None) -> tuple[int, dict, bytes]:
    req = urllib.request.Request(server.url.removesuffix("/v1") + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


def _events(raw: bytes) -> list[dict]:
    lines = [ln[len("data: "):] for ln in raw.decode().split("\n") if ln.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    return [json.loads(ln) for ln in lines[:-1]]


def _stream(server, prompt: Prompt = STOPS, completions: bool = False, headers: dict | None = None,
            **extra) -> list[dict]:
    body = {"model": MODEL, "max_tokens": prompt.max_new_tokens, "stream": True, **extra}
    if completions:
        body["prompt"] = "The capital of France is"
    else:
        body["messages"] = prompt.messages()
    status, _, raw = _post(server, "/v1/completions" if completions else "/v1/chat/completions", body, headers)
    assert status == 200, raw
    return _events(raw)


def _finishes(events: list[dict]) -> list:
    return [c.get("finish_reason") for e in events for c in e["choices"]]


# -- the generator in every dialect ----------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_dialect_gives_the_answer_and_its_usage(servers, expected, dialect, stream):
    c = client(servers[dialect], stream=stream)
    for prompt in (STOPS, LIMITED):
        gen = c.generate([prompt])[0]
        want = expected[prompt.max_new_tokens]
        assert gen.text == want.text
        assert gen.prompt_tokens == want.prompt_tokens
        if dialect == "tgi" and stream:  # TGI streams no usage: counted locally (the end of sequence is not text)
            assert gen.completion_tokens == c.tokenizer.count(gen.text)
            assert want.completion_tokens - 1 <= gen.completion_tokens <= want.completion_tokens
        else:  # the server's usage, wherever the dialect puts it
            assert gen.completion_tokens == want.completion_tokens
        assert (gen.ttft_s is not None) == stream
    assert c.attempts == 2, "no retry was needed"


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_finish_reason_is_recorded_in_the_projects_words(servers, dialect, stream):
    c = client(servers[dialect], stream=stream)
    stops, limited = c.generate([STOPS, LIMITED])
    assert (stops.finish_reason, limited.finish_reason) == ("stop", "length")  # TGI says eos_token for stop


@pytest.mark.parametrize("dialect", ["openai", "tgi", "llamacpp"])
def test_completions_mode_in_the_dialects(servers, expected, dialect):
    gen = client(servers[dialect], mode="completions", stream=True).generate([STOPS])[0]
    assert gen.text == expected[16].text and gen.finish_reason == "stop"


def test_vllm_running_usage_is_taken_from_the_last_chunk_not_summed(servers, expected):
    options = {"stream_options": {"include_usage": True, "continuous_usage_stats": True}}
    events = _stream(servers["vllm"], **options)
    assert all("usage" in e for e in events), "usage in every chunk"
    summed = sum(e["usage"]["completion_tokens"] for e in events)
    want = expected[16]
    assert summed > want.completion_tokens, "a client that adds the chunks' usage up would be wrong here"
    gen = client(servers["vllm"], stream=True, extra_body=options).generate([STOPS])[0]
    assert (gen.prompt_tokens, gen.completion_tokens) == (want.prompt_tokens, want.completion_tokens)


def test_llamacpp_usage_in_the_finish_chunk_is_taken_unasked(servers, expected):
    """llama.cpp sends usage with the finish_reason even when the client did not ask: it counts the
    end-of-sequence token, which a local count of the text cannot see."""
    gen = client(servers["llamacpp"], stream=True, stream_usage=False).generate([STOPS])[0]
    want = expected[16]
    assert (gen.prompt_tokens, gen.completion_tokens) == (want.prompt_tokens, want.completion_tokens)
    assert gen.completion_tokens != client(servers["llamacpp"]).tokenizer.count(gen.text), \
        "the server's count, not the local one"


def test_a_tgi_completions_stream_cut_off_is_seen_as_cut(servers, expected):
    """TGI's completions chunks say `finish_reason: ""` until the last: an empty finish_reason is none,
    so a stream that ends after such a chunk is cut off (and retried), not a complete answer."""
    servers["tgi"].add_faults(["cut"])
    c = client(servers["tgi"], mode="completions", stream=True, max_retries=1)
    gen = c.generate([STOPS])[0]
    assert gen.text == expected[16].text and gen.finish_reason == "stop"
    assert c.attempts == 2, "the cut answer was asked again"


@pytest.mark.parametrize("stream", [False, True])
def test_an_answer_vllm_aborted_is_cut_off_and_asked_again(servers, expected, stream):
    """vLLM ends an aborted request with finish_reason "abort" and the text so far: not an answer."""
    servers["vllm"].add_faults(["abort"])
    c = client(servers["vllm"], stream=stream, max_retries=1)
    gen = c.generate([STOPS])[0]
    assert gen.text == expected[16].text and gen.finish_reason == "stop"
    assert c.attempts == 2, "the aborted answer was asked again"
    servers["vllm"].add_faults(["abort", "abort"])
    with pytest.raises(GenerationError, match="aborted the answer"):
        client(servers["vllm"], stream=stream, max_retries=1).generate([STOPS])


# -- error bodies -------------------------------------------------------------------------------


@pytest.mark.parametrize("dialect", DIALECTS)
def test_error_messages_carry_the_servers_message_in_every_dialect(servers, dialect):
    srv = servers[dialect]
    with pytest.raises(GenerationError, match=r"NotFoundError \(HTTP 404\).*model 'gpt-4o' is not served here.*"
                                              r"not retried"):
        client(srv, model="gpt-4o").generate([LIMITED])
    srv.add_faults(["503", "503"])
    with pytest.raises(GenerationError, match=r"gave up after 2 attempts; last error: InternalServerError "
                                              r"\(HTTP 503\).*service unavailable \(injected\)$"):
        client(srv, max_retries=1).generate([LIMITED])


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_a_proxys_html_502_is_retried_and_reported_with_its_body(servers, expected, stream):
    srv = servers["openai"]
    srv.add_faults(["502_html"])
    c = client(srv, stream=stream)
    assert c.generate([LIMITED])[0].text == expected[5].text and c.attempts == 2
    srv.add_faults(["502_html"] * 2)
    with pytest.raises(GenerationError) as info:
        client(srv, stream=stream, max_retries=1).generate([LIMITED])
    message = str(info.value)
    assert "gave up after 2 attempts" in message
    assert "(HTTP 502): a text/html body, not JSON: <html> <head><title>502 Bad Gateway</title>" in message


def test_a_plain_text_500_is_reported_with_its_body(servers):
    srv = servers["vllm"]
    srv.add_faults(["500_text", "500_text"])
    with pytest.raises(GenerationError, match=r"\(HTTP 500\): a text/plain body, not JSON: Internal Server Error$"):
        client(srv, max_retries=1).generate([LIMITED])


# -- the server speaks each dialect as documented -----------------------------------------------


def test_openai_dialect_usage_chunk_only_when_asked(servers):
    events = _stream(servers["openai"], stream_options={"include_usage": True})
    assert events[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert events[-2]["choices"][0] == {"index": 0, "delta": {}, "finish_reason": "stop", "logprobs": None}
    assert events[-1]["choices"] == [] and set(events[-1]["usage"]) >= {"prompt_tokens", "completion_tokens"}
    assert not any("usage" in e for e in _stream(servers["openai"]))


def test_llamacpp_dialect_puts_usage_and_timings_in_the_finish_chunk(servers):
    for options in ({}, {"stream_options": {"include_usage": True}}):
        events = _stream(servers["llamacpp"], **options)
        assert events[0]["choices"][0]["delta"] == {"role": "assistant", "content": None}
        assert all(e["choices"] for e in events), "no usage chunk (with no choices)"
        last = events[-1]
        assert last["choices"][0]["finish_reason"] == "stop" and {"usage", "timings"} <= set(last)
        assert not any("usage" in e for e in events[:-1])
    _, _, raw = _post(servers["llamacpp"], "/v1/chat/completions",
                      {"model": MODEL, "messages": STOPS.messages(), "max_tokens": 16})
    assert {"usage", "timings"} <= set(json.loads(raw))


def test_tgi_dialect_streams_no_usage_and_says_eos_token(servers):
    events = _stream(servers["tgi"], stream_options={"include_usage": True})
    assert not any("usage" in e for e in events), "no usage even when asked"
    assert all(e["choices"][0]["delta"]["role"] == "assistant" and e["choices"][0]["delta"]["content"] for e in events)
    assert _finishes(events)[-1] == "eos_token" and set(_finishes(events)[:-1]) == {None}
    assert _finishes(_stream(servers["tgi"], LIMITED))[-1] == "length"
    finishes = _finishes(_stream(servers["tgi"], completions=True))
    assert finishes[-1] in ("eos_token", "length") and set(finishes[:-1]) == {""}
    status, _, raw = _post(servers["tgi"], "/v1/chat/completions", {"model": "gpt-4o", "messages": STOPS.messages()})
    assert status == 404 and isinstance(json.loads(raw)["error"], str) and "error_type" in json.loads(raw)


def test_azure_dialect_sends_empty_choices_and_choices_without_delta(servers):
    events = _stream(servers["azure"], stream_options={"include_usage": True})
    assert events[0]["choices"] == [] and "prompt_filter_results" in events[0]
    assert events[1]["choices"][0]["delta"] == {"role": "assistant"}
    assert any(c.get("finish_reason") is None and "delta" not in c and "content_filter_results" in c
               for e in events[2:] for c in e["choices"])
    assert events[-1]["choices"] == [] and "usage" in events[-1]


def test_the_dialect_can_be_chosen_per_request(servers):
    events = _stream(servers["openai"], headers={"X-Dialect": "tgi"})
    assert _finishes(events)[-1] == "eos_token"
    status, _, raw = _post(servers["openai"], "/v1/chat/completions", {"model": MODEL, "messages": STOPS.messages()},
                           headers={"X-Dialect": "klingon"})
    assert status == 400 and "unknown dialect 'klingon'" in json.loads(raw)["error"]["message"]
    with pytest.raises(ValueError, match="unknown dialect"):
        FakeOpenAIServer(object(), model_name="m", dialect="klingon")
    with pytest.raises(SystemExit):  # refused before any weights load
        main(["--dialect", "klingon"])
