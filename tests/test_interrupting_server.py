"""A server that lets a new request interrupt the one in flight (llama.cpp's server does by default),
reproduced by testsupport.fake_servers' interrupting mode over the scripted model (testsupport/scripted.py, 20 ms
a token: requests sent together overlap, as they did over SmolLM2), and the OpenAI-compatible backend's answer to
it: fewer requests at once, retries that do not use up `max_retries`."""

from __future__ import annotations

import json
import logging
import threading
import urllib.request

import pytest

from llm.openai_backend import GenerationError, OpenAICompatGenerator
from llm.prompt import Prompt
from tests.conftest import FRANCE, SCRIPTED
from testsupport.fake_servers import FakeOpenAIServer
from testsupport.scripted import ScriptedModel

MODEL = SCRIPTED  # the served model's name
TOKENIZER = "bundled:smollm2"
TOKEN_S = 0.02  # decoding time a token: a 12-token answer takes ~0.25 s, so requests sent together overlap
PROMPTS = [Prompt(f"Repeat the number {n}, then count to ten.", max_new_tokens=12) for n in range(4)]


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer(ScriptedModel(FRANCE, model_id=MODEL, token_s=TOKEN_S),
                          interrupt_on_new_request=True) as srv:
        yield srv


@pytest.fixture(autouse=True)
def _clean(server):
    server.clear_faults()
    yield
    server.clear_faults()


@pytest.fixture(scope="module")
def expected(scripted_model):
    answers = [g.text for g in scripted_model.generate(PROMPTS)]  # the same script, without the decoding time
    assert len(set(answers)) == len(PROMPTS), "answers that tell the prompts apart, so the order is checked"
    return answers


def client(server, **settings) -> OpenAICompatGenerator:
    base = dict(model=MODEL, base_url=server.url, api_key_env=None, tokenizer=TOKENIZER, context_window=8192,
                timeout_s=120, max_retries=0, backoff_base_s=0.01, backoff_max_s=0.05, stream=True)
    return OpenAICompatGenerator(**{**base, **settings})


def _stream_raw(server, body: dict, out: list, i: int) -> None:
    req = urllib.request.Request(server.url + "/chat/completions", data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as resp:
        out[i] = resp.read().decode()


def test_a_new_request_cuts_the_stream_in_flight(server):
    """Two streams at once: the first ends ([DONE]) without a finish_reason, as llama.cpp's does."""
    before = server.snapshot()["interrupted"]
    body = {"model": MODEL, "stream": True, "max_tokens": 40,
            "messages": [{"role": "user", "content": "Count from one to forty in words."}]}
    out: list = [None, None]
    first = threading.Thread(target=_stream_raw, args=(server, body, out, 0))
    first.start()
    while not server.snapshot()["in_flight"]:  # the first one holds the model
        pass
    second = threading.Thread(target=_stream_raw, args=(server, body, out, 1))
    second.start()
    first.join(120)
    second.join(120)
    events = [[json.loads(ln[6:]) for ln in raw.split("\n") if ln.startswith("data: {")] for raw in out]
    finishes = [[c["finish_reason"] for e in ev for c in e["choices"] if c["finish_reason"]] for ev in events]
    assert all(raw.rstrip().endswith("data: [DONE]") for raw in out)
    assert finishes[0] == [] and finishes[1] != [], finishes  # cut off; the newer one completes
    assert server.snapshot()["interrupted"] - before == 1


@pytest.mark.parametrize("stream", [True, False])
def test_overlapping_requests_lower_the_concurrency_and_every_answer_comes(server, expected, stream, caplog):
    """Concurrency 2 against the interrupting server, with no retry budget at all: every answer
    comes, in order and identical to the model's own; the backend ended at concurrency 1 and said
    so once, with the reason."""
    caplog.set_level(logging.INFO, logger="llm.retrying")
    before = server.snapshot()["interrupted"]
    gen = client(server, max_concurrency=2, stream=stream)
    answers = gen.generate(PROMPTS)
    assert [a.text for a in answers] == expected
    assert server.snapshot()["interrupted"] > before, "the requests did overlap and get cut"
    assert gen.concurrency == 1 and gen.concurrency_cuts >= 1
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "interrupt a request when a new one comes in" in warnings[0].getMessage()
    assert "from 2 to 1" in warnings[0].getMessage()
    cuts = gen.concurrency_cuts
    assert [a.text for a in gen.generate(PROMPTS)] == expected  # later batches: one at a time, no cuts
    assert gen.concurrency_cuts == cuts


def test_higher_concurrency_is_halved_down_to_one(server, expected):
    gen = client(server, max_concurrency=4)
    assert [a.text for a in gen.generate(PROMPTS)] == expected
    assert gen.concurrency <= 2 and gen.concurrency_cuts >= 1


@pytest.mark.parametrize("stream", [True, False])
def test_a_cut_with_nothing_else_in_flight_is_an_ordinary_fault(server, expected, stream):
    """No other request in flight: a cut answer is a fault of the server, retried within max_retries
    (and the concurrency stays)."""
    server.add_faults(["cut"])
    gen = client(server, max_concurrency=2, max_retries=1, stream=stream)
    assert gen.generate(PROMPTS[:1])[0].text == expected[0]
    assert gen.concurrency == 2 and gen.concurrency_cuts == 0
    server.add_faults(["cut"])
    with pytest.raises(GenerationError, match="gave up after 1 attempts.*cut off|gave up after 1 attempts.*Connection"):
        client(server, max_concurrency=2, max_retries=0, stream=stream).generate(PROMPTS[:1])


def test_a_rag_run_at_concurrency_two_answers_every_sample(server, tmp_path):
    """Issue 17's sweep point, against the interrupting server instead of llama.cpp: arm=rag through
    the real runner with the preset's concurrency 2; every sample answered."""
    from experiments.run import run
    from tests.conftest import compose

    overrides = ["generator=smollm2_server", f"generator.base_url={server.url}", f"generator.model={MODEL}",
                 "generator.max_concurrency=2",
                 "generator.max_retries=1", "generator.backoff_base_s=0.01", "generator.backoff_max_s=0.02",
                 "arm=rag", "benchmark.languages=[en]", "benchmark.levels=[1k]", "benchmark.haystacks_per_level=1",
                 "benchmark.questions_per_haystack=4", "run.progress=false", f"run.cache_dir={tmp_path / 'cache'}"]
    before = server.snapshot()["interrupted"]
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    result = run(compose(overrides), run_dir)
    records = [json.loads(line) for line in (run_dir / "records.jsonl").read_text().splitlines()]
    assert (result["n"], result["n_ok"], result["n_failed"]) == (4, 4, 0), result
    assert all(r["status"] == "ok" for r in records)
    assert server.snapshot()["interrupted"] > before, "the run's requests overlapped and were cut"
