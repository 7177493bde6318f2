"""The OpenAI-compatible generator against a real local HTTP server (testsupport.fake_servers over the scripted
model of testsupport/scripted.py: its answers a fixed function of the prompt, counted with SmolLM2's tokenizer),
including the failures a remote endpoint produces: 429s, 5xx, hangs, malformed bodies."""

from __future__ import annotations

import json
import logging
import time

import pytest

from llm.openai_backend import GenerationError, OpenAICompatGenerator, resolve_api_key
from llm.prompt import Prompt
from llm.retrying import backoff_delay
from tests.conftest import SCRIPTED
from testsupport.fake_servers import FakeOpenAIServer

MODEL = SCRIPTED  # the served model's name
TOKENIZER = "bundled:smollm2"  # the client counts with SmolLM2's tokenizer, as the scripted model does
SECRET = "sk-client-secret-value-42"
KEY_ENV = "RAGLC_TEST_LLM_KEY"
PROMPT = Prompt("What is the capital of France? Answer in one word.", max_new_tokens=5)


@pytest.fixture(scope="module")
def server(scripted_model, tmp_path_factory):
    log = tmp_path_factory.mktemp("openai") / "requests.jsonl"
    with FakeOpenAIServer(scripted_model, request_log=log, api_key=SECRET) as srv:  # this one wants a key
        yield srv


@pytest.fixture(autouse=True)
def _key_and_clean_queue(server, monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    server.clear_faults()
    yield
    server.clear_faults()


def client(server, **settings) -> OpenAICompatGenerator:
    base = dict(model=MODEL, base_url=server.url, api_key_env=KEY_ENV, tokenizer=TOKENIZER, context_window=8192,
                timeout_s=60, max_retries=3, backoff_base_s=0.01, backoff_max_s=0.05, stream=False)
    return OpenAICompatGenerator(**{**base, **settings})


def _requests(server) -> int:
    return server.snapshot()["requests"]


@pytest.fixture(scope="module")
def expected(scripted_model):
    return scripted_model.generate([PROMPT])[0]


@pytest.mark.parametrize("stream", [False, True])
def test_chat_answers_with_the_servers_usage(server, expected, stream):
    gen = client(server, stream=stream).generate([PROMPT])[0]
    assert gen.text == expected.text
    assert (gen.prompt_tokens, gen.completion_tokens) == (expected.prompt_tokens, expected.completion_tokens)
    assert gen.latency_s > 0 and not gen.cached
    assert (gen.ttft_s is not None) == stream


def test_completions_mode_sends_the_rendered_template(server, expected):
    c = client(server, mode="completions", stream=True)
    assert c.request_body(PROMPT)["prompt"].startswith("<|im_start|>system")
    gen = c.generate([PROMPT])[0]
    # the same tokens the chat template gives: same answer and usage as the chat route
    assert gen.text == expected.text and gen.prompt_tokens == expected.prompt_tokens


@pytest.mark.parametrize("stream", [False, True])
def test_missing_usage_is_counted_with_the_tokenizer(server, expected, stream):
    server.add_faults(["no_usage"])
    gen = client(server, stream=stream).generate([PROMPT])[0]
    assert not server.snapshot()["faults_queued"], "the fault was used"
    assert gen.prompt_tokens == expected.prompt_tokens
    assert gen.completion_tokens == len(client(server).tokenizer.hf(gen.text, add_special_tokens=False)["input_ids"])


def test_streaming_measures_time_to_first_token(server):
    server.add_faults(["slow_stream:0.3"])  # 0.3 s before every chunk
    gen = client(server, stream=True).generate([PROMPT])[0]
    assert 0.3 <= gen.ttft_s < gen.latency_s
    assert gen.latency_s >= 0.3 * 3  # role chunk, first piece, ..., finish chunk: each delayed


@pytest.mark.parametrize("faults", [["429", "429"], ["500", "503"], ["malformed", "drop"]])
@pytest.mark.parametrize("stream", [False, True])
def test_transient_failures_are_retried(server, expected, faults, stream):
    server.add_faults(faults)
    before = _requests(server)
    c = client(server, stream=stream)
    gen = c.generate([PROMPT])[0]
    assert gen.text == expected.text
    assert _requests(server) - before == len(faults) + 1 and c.attempts == len(faults) + 1


def test_per_request_timeout_is_honoured_and_retried(server, expected):
    server.add_faults(["hang:10"])
    c = client(server, timeout_s=3.0)
    t0 = time.perf_counter()
    gen = c.generate([PROMPT])[0]
    assert time.perf_counter() - t0 < 9, "the hung request was abandoned after its timeout"
    assert gen.text == expected.text and c.attempts >= 2


def _logged(server) -> list[dict]:
    return [json.loads(line) for line in server.request_log.read_text().splitlines()]


def _drips_logged(server, since: int, n: int, seconds: float) -> list[dict]:
    """The `drip` requests logged after entry `since`, waiting up to `seconds` for n of them (a request
    is logged when its handler ends)."""
    deadline = time.time() + seconds
    while True:
        drips = [e for e in _logged(server)[since:] if e.get("fault") == "drip"]
        if len(drips) >= n or time.time() > deadline:
            return drips
        time.sleep(0.05)


@pytest.mark.parametrize("stream", [True, False])
def test_timeout_bounds_the_whole_attempt_not_each_read(server, stream):
    """A server that answers a little every 0.3 s but never finishes (every read is well within the
    per-read limit) is abandoned after `timeout_s` per attempt, retried, then fails naming the timeout."""
    server.add_faults(["drip:0.3", "drip:0.3"])
    before, logged_before = _requests(server), len(_logged(server))
    c = client(server, stream=stream, timeout_s=1, max_retries=1)
    t0 = time.perf_counter()
    with pytest.raises(GenerationError, match=r"gave up after 2 attempts; last error: AttemptTimeout: "
                                              r"no complete answer within timeout_s=1 s"):
        c.generate([PROMPT])
    elapsed = time.perf_counter() - t0
    assert 2.0 <= elapsed < 6, elapsed  # two attempts of 1 s each (plus a short backoff), not forever
    assert _requests(server) - before == 2 and c.attempts == 2
    assert not server.snapshot()["faults_queued"]
    # the abandoned connections are shut: the server notices at its next write and its threads end
    drips = _drips_logged(server, logged_before, 2, seconds=3.0)
    assert [(e["stream"], e["status"]) for e in drips] == [(stream, "client gone")] * 2, drips


def test_a_slow_stream_that_finishes_within_the_deadline_succeeds(server, expected):
    server.add_faults(["slow_stream:0.15"])  # each read waits 0.15 s; the whole answer takes ~1-1.5 s
    c = client(server, stream=True, timeout_s=4, max_retries=0)
    gen = c.generate([PROMPT])[0]
    assert gen.text == expected.text and c.attempts == 1
    assert 0.15 * 3 <= gen.latency_s < 4


def test_retries_are_bounded_then_fail_clearly(server):
    server.add_faults(["429"] * 10)
    before = _requests(server)
    with pytest.raises(GenerationError, match=r"gave up after 3 attempts; last error: RateLimitError \(HTTP 429\)"):
        client(server, max_retries=2).generate([PROMPT])
    assert _requests(server) - before == 3


def test_errors_retrying_cannot_fix_fail_at_once(server, monkeypatch):
    before = _requests(server)
    with pytest.raises(GenerationError, match=r"NotFoundError \(HTTP 404\).*not retried"):
        client(server, model="gpt-4o").generate([PROMPT])
    monkeypatch.setenv(KEY_ENV, "sk-wrong")
    with pytest.raises(GenerationError, match=r"HTTP 401"):
        client(server).generate([PROMPT])
    assert _requests(server) - before == 1  # the 404 reached the generation route once; 401s are refused earlier


def test_concurrency_limit_is_respected_and_order_kept(server, scripted_model):
    prompts = [Prompt(f"Repeat the number {n}.", max_new_tokens=3) for n in range(6)]
    expected = [g.text for g in scripted_model.generate(prompts)]
    assert len(set(expected)) > 1, "answers that tell the prompts apart, so the order is checked"
    deadline = time.time() + 30
    while server.snapshot()["in_flight"] and time.time() < deadline:  # e.g. a hung request of an earlier test
        time.sleep(0.1)
    server.stats["max_in_flight"] = 0
    server.add_faults(["slow:0.4"] * len(prompts))  # each request waits before generating
    gens = client(server, max_concurrency=2).generate(prompts)
    assert [g.text for g in gens] == expected
    assert server.snapshot()["max_in_flight"] == 2


def test_backoff_grows_exponentially_with_jitter_and_a_cap():
    import random

    rng = random.Random(0)
    delays = [backoff_delay(a, 1.0, 60.0, rng=rng) for a in range(8)]
    for attempt, d in enumerate(delays):
        cap = min(60.0, 2 ** attempt)
        assert cap / 2 <= d <= cap
    assert len({round(d / min(60.0, 2 ** a), 6) for a, d in enumerate(delays)}) > 1, "jittered"
    assert backoff_delay(0, 1.0, 60.0, retry_after_s=7.0) >= 7.0
    assert backoff_delay(0, 1.0, 5.0, retry_after_s=3600) == 5.0


def test_api_key_comes_from_the_environment_and_is_never_logged(server, caplog, monkeypatch):
    caplog.set_level(logging.DEBUG)
    server.add_faults(["500"])
    gen = client(server, stream=True).generate([PROMPT])[0]  # the server refuses requests without SECRET
    assert gen.text
    assert SECRET not in caplog.text
    log_text = server.request_log.read_text()
    assert log_text and SECRET not in log_text and "Authorization" not in log_text
    assert all(set(json.loads(line)) <= {"time", "path", "model", "stream", "status", "fault", "prompt_chars"}
               for line in log_text.splitlines())
    assert SECRET not in json.dumps(client(server).sampling_params())


def test_the_openai_api_needs_a_key_in_the_environment(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ValueError, match="set the environment variable OPENAI_API_KEY"):
        resolve_api_key("OPENAI_API_KEY", None)
    assert resolve_api_key("UNSET_LOCAL_KEY_VAR", "http://127.0.0.1:8000/v1") == "EMPTY"


def test_factory_builds_it_from_the_config(server):
    from omegaconf import OmegaConf

    from llm.factory import build_generator
    from tests.conftest import compose

    cfg = OmegaConf.to_container(compose(["generator=smollm2_server", f"generator.base_url={server.url}",
                                          f"generator.model={MODEL}", f"generator.api_key_env={KEY_ENV}"]).generator,
                                 resolve=True)
    gen = build_generator(cfg)
    assert isinstance(gen, OpenAICompatGenerator) and gen.generates and gen.context_window == 8192
    assert gen.generate([PROMPT])[0].text
    with pytest.raises(ValueError, match="generator.max_concurency is not a setting of the openai backend"):
        build_generator({**cfg, "max_concurency": 4})


def test_a_run_records_what_the_endpoint_failed_and_retries_it_on_resume(server, tmp_path):
    """A real run against the faulty server: the sample whose retries all fail is recorded as failed
    with the reason and counted; the run goes on; the next resume retries it and only it."""
    from experiments.run import run
    from tests.conftest import compose

    overrides = ["generator=smollm2_server", f"generator.base_url={server.url}", f"generator.model={MODEL}",
                 f"generator.api_key_env={KEY_ENV}", "generator.max_concurrency=1", "generator.max_retries=1",
                 "generator.backoff_base_s=0.01", "generator.backoff_max_s=0.02", "generator.stream=false",
                 "benchmark.languages=[en]",
                 "benchmark.levels=[100]", "benchmark.haystacks_per_level=3", "benchmark.questions_per_haystack=1",
                 "run.progress=false", f"run.cache_dir={tmp_path / 'cache'}"]
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    server.add_faults(["500", "503"])  # the first sample's request and its one retry
    first = run(compose(overrides), run_dir)
    records = [json.loads(line) for line in (run_dir / "records.jsonl").read_text().splitlines()]
    failed = [r for r in records if r["status"] == "failed"]
    assert (first["n"], first["n_ok"], first["n_failed"]) == (3, 2, 1), first
    assert len(failed) == 1 and "503" in failed[0]["reason"], failed
    assert json.loads((run_dir / "metrics.json").read_text())["n_failed"] == 1

    before = _requests(server)
    second = run(compose(overrides), run_dir)
    records = [json.loads(line) for line in (run_dir / "records.jsonl").read_text().splitlines()]
    assert (second["n_ok"], second["n_failed"]) == (3, 0), second
    assert len(records) == 4 and records[-1]["id"] == failed[0]["id"] and records[-1]["status"] == "ok"
    assert _requests(server) - before == 1, "only the failed sample is asked again"


def test_overlapping_requests_are_charged_machine_time_not_waiting_time(server):
    """Issue 38 item 4: at concurrency 4 each request is charged its share of the wall clock among the requests in
    flight; their charges add up to the wall time, not to 4x it. What its user waited stays `user_latency_s`."""
    prompts = [Prompt(f"Repeat the number {n}.", max_new_tokens=3) for n in range(4)]
    deadline = time.time() + 30
    while server.snapshot()["in_flight"] and time.time() < deadline:
        time.sleep(0.1)
    server.add_faults(["slow:0.5"] * len(prompts))
    t0 = time.perf_counter()
    gens = client(server, max_concurrency=4).generate(prompts)
    wall = time.perf_counter() - t0
    assert all(g.user_latency_s >= 0.5 for g in gens)
    # machine time never exceeds the wall clock the client kept the server busy (before: each request was charged its
    # whole wait, up to 4x the wall time when they overlap); the split itself: test_service_shares_split_a_queue...
    assert sum(g.latency_s for g in gens) <= wall + 1e-6
    assert all(g.latency_s <= g.user_latency_s for g in gens)


def test_service_shares_split_a_queue_as_the_machine_served_it():
    from llm.service_time import ServiceShares

    now = [0.0]
    shares = ServiceShares(clock=lambda: now[0])
    tickets = [shares.start() for _ in range(4)]  # a serial server: answers at 0.54, 1.09, 1.64, 2.18 s
    charged = []
    for ticket, end in zip(tickets, (0.54, 1.09, 1.64, 2.18), strict=True):
        now[0] = end
        charged.append(shares.stop(ticket))
    assert sum(charged) == pytest.approx(2.18)  # the machine time, against 5.45 s of waits
    assert charged[0] == pytest.approx(0.54 / 4) and shares.most_in_flight == 4
    one = shares.start()
    now[0] += 1.5
    assert shares.stop(one) == pytest.approx(1.5)  # alone: its wall time
