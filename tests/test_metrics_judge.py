"""The LLM judge against a real local HTTP server speaking the OpenAI chat-completions API."""

from __future__ import annotations

import json
import logging
import multiprocessing as mp
import sqlite3
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from eval.metrics import NoJudgment, score
from eval.metrics.judge import (
    JudgmentCache,
    loong_question,
    loong_reference,
    parse_loong_score,
    parse_true_false,
)
from eval.sample import Reference
from experiments.score import main
from llm.judge_backend import build_judge

SECRET = "sk-test-secret-value"


class _Handler(BaseHTTPRequestHandler):
    """Replies by what the prediction in the prompt asks for: a rating, garbage, an error, bad JSON."""

    def log_message(self, *args):  # keep pytest output clean
        pass

    def do_POST(self):
        server = self.server
        length = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(length))
        server.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        if self.path != "/v1/chat/completions":
            return self._send(404, {"error": {"message": "not found"}})
        text = "\n".join(m["content"] for m in body["messages"])
        if "FAIL500" in text:
            return self._send(500, {"error": {"message": "boom"}})
        if "BADJSON" in text:
            return self._send(200, None, raw=b"{this is not json")
        if "NOCONTENT" in text:
            return self._send(200, {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                                    "choices": [{"index": 0, "message": {"role": "assistant", "content": None},
                                                 "finish_reason": "stop"}]})
        if "NOCHOICES" in text:
            return self._send(200, {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                                    "choices": []})
        if "groudtruth" in text:  # LooGLE QA
            reply = "True." if "predict_answer = Paris" in text else "false"
        elif "MALFORMED" in text:
            reply = "Evaluation evidence: fine.\nRating: excellent"
        elif "PERFECT" in text:
            reply = "Evaluation evidence: matches.\nRating: [[100]]"
        else:
            reply = "Evaluation evidence: partly right.\nRating: [[ 60 ]]"
        self._send(200, {
            "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        })

    def _send(self, status, payload, raw=None):
        data = raw if raw is not None else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.requests = []
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def judge(server, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.delenv("JUDGE_API_KEY", raising=False)
    return build_judge("judge-model", f"http://127.0.0.1:{server.server_port}/v1", tmp_path / "cache.sqlite",
                       timeout_s=10, max_retries=0)


def _loong(pred, judge):
    return score("loong_judge", pred, Reference(["42"], extra={"question": "What is it?", "answer": "42"}), judge=judge)


def test_loong_judgments_parsed_failed_and_cached(judge, server, caplog):
    assert _loong("PERFECT answer", judge) == {"score": 1.0, "judge_score": 100.0, "perfect": 1.0}
    partial = _loong("some answer", judge)
    assert partial["score"] == 0.6 and partial["perfect"] == 0.0
    assert _loong("MALFORMED", judge) == NoJudgment(NoJudgment.UNPARSABLE, "no verdict in the reply",
                                                    "Evaluation evidence: fine.\nRating: excellent")
    assert _loong("FAIL500", judge).kind == NoJudgment.FAILED
    assert _loong("BADJSON", judge).kind == NoJudgment.FAILED
    assert _loong("NOCHOICES", judge).kind == NoJudgment.FAILED
    sent = len(server.requests)
    assert _loong("some answer", judge) == partial  # cached: no new request
    assert len(server.requests) == sent and judge.calls == sent
    assert _loong("FAIL500", judge).kind == NoJudgment.FAILED and len(server.requests) == sent + 1  # not cached
    req = server.requests[0]
    assert req["auth"] == f"Bearer {SECRET}" and req["body"]["model"] == "judge-model"
    assert req["body"]["temperature"] == 0.0
    assert "[Gold Answer]\n42" in req["body"]["messages"][0]["content"]
    assert SECRET not in caplog.text


def test_cache_survives_a_new_judge(judge, server, tmp_path):
    _loong("some answer", judge)
    again = build_judge("judge-model", judge.base_url, tmp_path / "cache.sqlite", max_retries=0)
    assert _loong("some answer", again)["score"] == 0.6 and again.calls == 0
    assert len(JudgmentCache(tmp_path / "cache.sqlite")) == 1
    other = build_judge("another-model", judge.base_url, tmp_path / "cache.sqlite", max_retries=0)
    _loong("some answer", other)
    assert other.calls == 1  # the model is part of the key


def test_cli_loong_reports_avg_perfect_and_unparsable(judge, server, tmp_path, capsys):
    f = tmp_path / "loong.jsonl"
    lines = [
        {"id": "1", "question": "Q1", "answer": ["a", "b"], "generate_response": "PERFECT"},
        {"id": "2", "question": "Q2", "answer": {"k": 1}, "generate_response": "so-so"},
        {"id": "3", "question": "Q3", "answer": "x", "generate_response": "MALFORMED"},
        {"id": "4", "question": "Q4", "answer": "x", "generate_response": "FAIL500"},
    ]
    f.write_text("".join(json.dumps(x) + "\n" for x in lines))
    code = main(["--benchmark", "loong", "--task", "all", "--judge-model", "judge-model",
                 "--judge-base-url", judge.base_url, "--judge-retries", "0",
                 "--judge-cache", str(tmp_path / "c2.sqlite"),
                 "--per-sample", str(tmp_path / "per.jsonl"), str(f)])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["n"] == 4 and out["n_parsed"] == 2 and out["n_unparsable"] == 1 and out["n_failed"] == 1
    assert out["score"] == 80.0  # Avg Score over parsable judgments: (100 + 60) / 2
    assert out["perfect"] == 50.0  # Perfect Rate
    per = [json.loads(line) for line in (tmp_path / "per.jsonl").read_text().splitlines()]
    assert [r.get("score") for r in per] == [1.0, 0.6, None, None]  # no judgment is no score, not a 0
    assert per[2]["no_judgment"] == "unparsable" and per[2]["reply_excerpt"].endswith("Rating: excellent")
    assert per[3]["no_judgment"] == "failed" and per[3]["reason"] == "InternalServerError (HTTP 500)"
    assert "[Gold Answer]\n['a', 'b']" in server.requests[0]["body"]["messages"][0]["content"]


def test_loogle_true_false_judge(judge, server):
    ref = Reference(["Paris"], task="shortdep_qa", extra={"question": "Capital of France?"})
    assert score("loogle_judge", "Paris", ref, judge=judge)["score"] == 1.0
    assert score("loogle_judge", "Lyon", ref, judge=judge) == {"score": 0.0, "judge_score": 0.0, "perfect": 0.0}
    body = server.requests[0]["body"]
    assert body["messages"][0]["role"] == "system" and body["max_tokens"] == 10


def test_parsers():
    assert parse_loong_score("Rating: [[85]]") == 85
    assert parse_loong_score("I give [7.5] points") == 7.5
    assert parse_loong_score("Rating: 90") == 90
    assert parse_loong_score("Rating: [[150]]") is None
    assert parse_loong_score("no score") is None and parse_loong_score(None) is None
    assert parse_true_false("'True'") is True and parse_true_false("False.") is False
    assert parse_true_false("Maybe") is None


def test_loong_question_follows_released_template_filling():
    rec = {"type": "financial", "question": "Q?", "instruction": "Do X.",
           "prompt_template": "{docs}{instruction}\n{question}"}
    assert loong_question(rec) == "Do X.\nQ?"
    assert loong_question({**rec, "type": "paper"}) == "{docs}Do X.\nQ?"
    assert loong_reference({"question": "q", "answer": {"a": 1}}).extra["answer"] == {"a": 1}


# ---------------------------------------------------------------------------------------------
# The judgment cache: checksums, parallel writers, damaged files, old files; why a call failed


def test_a_corrupted_judgment_is_detected_and_asked_again(judge, server, tmp_path, caplog):
    assert _loong("some answer", judge)["score"] == 0.6 and len(server.requests) == 1
    with sqlite3.connect(tmp_path / "cache.sqlite") as db:  # a hand-edited row: the checksum is left as it was
        assert db.execute("UPDATE judgment_replies SET value = replace(value, '60', '99')").rowcount == 1
    again = build_judge("judge-model", judge.base_url, tmp_path / "cache.sqlite", max_retries=0)
    with caplog.at_level(logging.WARNING, logger="eval.metrics.judge"):
        assert _loong("some answer", again)["score"] == 0.6  # not the tampered 99
    assert len(server.requests) == 2 and again.calls == 1 and again.cache.corrupted == 1
    assert "checksum mismatch" in caplog.text
    third = build_judge("judge-model", judge.base_url, tmp_path / "cache.sqlite", max_retries=0)
    assert _loong("some answer", third)["score"] == 0.6 and third.calls == 0 and len(server.requests) == 2  # repaired


JOBS, PER_JOB, SHARED_KEYS = 4, 30, 8


def _judgment_writer(path: str, job: int, start, results) -> None:
    """One job of a parallel sweep writing judgments into the shared cache as fast as it can; a tiny busy
    timeout makes lock contention surface as "database is locked" (retried)."""
    try:
        cache = JudgmentCache(path, busy_timeout_s=0.01, lock_retries=60)
        start.wait(60)
        for i in range(PER_JOB):
            key = f"shared-{i}" if i < SHARED_KEYS else f"j{job}-{i}"
            cache.put(key, "judge-model", f"Rating: [[{i}]] for {key}")
            assert cache.get(key) == f"Rating: [[{i}]] for {key}"
        results.put((job, "ok"))
    except BaseException as err:  # noqa: BLE001 - reported to the parent
        results.put((job, f"{type(err).__name__}: {err}"))


def test_judgment_cache_shared_by_parallel_processes(tmp_path):
    ctx = mp.get_context("spawn")
    path = tmp_path / "judgments.sqlite"
    start, results = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_judgment_writer, args=(str(path), j, start, results)) for j in range(JOBS)]
    for p in procs:
        p.start()
    time.sleep(0.5)
    start.set()  # all at once
    outcomes = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert sorted(o[1] for o in outcomes) == ["ok"] * JOBS, outcomes
    cache = JudgmentCache(path)
    keys = ([f"shared-{i}" for i in range(SHARED_KEYS)]
            + [f"j{j}-{i}" for j in range(JOBS) for i in range(SHARED_KEYS, PER_JOB)])
    assert len(cache) == len(keys)
    for key in keys:
        assert cache.get(key) == f"Rating: [[{key.split('-')[-1]}]] for {key}"
    assert cache.corrupted == 0
    cache.close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_judgment_cache_file_that_is_not_a_database_is_rebuilt(server, tmp_path, caplog):
    path = tmp_path / "judgments.sqlite"
    garbage = b"\x00\x01 not sqlite at all " * 300
    path.write_bytes(garbage)
    with caplog.at_level(logging.WARNING, logger="eval.metrics.judge"):
        j = build_judge("judge-model", f"http://127.0.0.1:{server.server_port}/v1", path, timeout_s=10, max_retries=0)
    (moved,) = tmp_path.glob("judgments.sqlite.corrupt-*")
    assert moved.read_bytes() == garbage and "not a usable SQLite database" in caplog.text
    assert len(j.cache) == 0
    assert _loong("PERFECT", j)["score"] == 1.0 and _loong("PERFECT", j)["score"] == 1.0
    assert j.calls == 1 and len(JudgmentCache(path)) == 1


def test_a_judgment_cache_of_the_old_format_is_migrated(tmp_path):
    path = tmp_path / "judgments.sqlite"
    with sqlite3.connect(path) as db:  # as the cache wrote it before checksums
        db.execute("CREATE TABLE judgments (key TEXT PRIMARY KEY, model TEXT, reply TEXT)")
        db.executemany("INSERT INTO judgments VALUES (?, ?, ?)", [("k1", "m", "Rating: [[70]]"), ("k2", "m", "False")])
    db.close()
    cache = JudgmentCache(path)
    assert len(cache) == 2 and cache.get("k1") == "Rating: [[70]]" and cache.get("k2") == "False"
    cache.close()
    with sqlite3.connect(path) as db:
        tables = {t for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert tables == {"judgment_replies"}  # the unchecked table is gone
        db.execute("UPDATE judgment_replies SET value = replace(value, '70', '90')")  # now checked
    db.close()
    reopened = JudgmentCache(path)
    assert reopened.get("k1") is None and reopened.corrupted == 1 and reopened.get("k2") == "False"


def test_a_failing_cache_never_fails_the_judgment(judge, server, tmp_path, caplog):
    path = tmp_path / "cache.sqlite"
    judge.cache = JudgmentCache(path, busy_timeout_s=0.01, lock_retries=1)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another job holds the write lock for longer than we wait
    try:
        with caplog.at_level(logging.WARNING, logger="eval.metrics.judge"):
            assert _loong("some answer", judge)["score"] == 0.6
    finally:
        holder.execute("COMMIT")
    assert "write failed" in caplog.text and "still locked" in caplog.text
    assert len(judge.cache) == 0  # not cached, so asked again next time
    holder.execute("DROP TABLE judgment_replies")  # a cache that cannot even be read
    holder.close()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="eval.metrics.judge"):
        assert _loong("some answer", judge)["score"] == 0.6
    assert "read failed" in caplog.text and "write failed" in caplog.text
    assert judge.calls == 2 and len(server.requests) == 2


def test_a_failed_judgment_says_why_in_its_outcome(judge, server):
    """No module state: each judgment's outcome carries its own failure reason (the root error's type
    and HTTP status, looked through the backend's GenerationError; never the key)."""
    assert _loong("FAIL500", judge) == NoJudgment(NoJudgment.FAILED, "InternalServerError (HTTP 500)")
    assert _loong("some answer", judge) == {"score": 0.6, "judge_score": 60.0, "perfect": 0.0}
    # a 200 without text: the backend's malformed-response check (retried like any malformed body)
    assert _loong("NOCONTENT", judge) == NoJudgment.failed("MalformedResponse")
    assert _loong("NOCHOICES", judge).reason == "MalformedResponse"
    assert _loong("some answer", judge)["score"] == 0.6 and judge.calls == 4  # a cached judgment is a success too
    bad = _loong("BADJSON", judge)
    assert isinstance(bad, NoJudgment) and bad.reason and SECRET not in bad.reason and bad.reply_excerpt is None


def test_no_judgment_is_a_type_with_a_kind_a_reason_and_a_short_excerpt():
    """What a record's reason says for each kind; a long reply is cut; an unknown kind is refused."""
    failed = NoJudgment.failed(None)
    assert (failed.kind, failed.reason, failed.describe()) == ("failed", "no reply", "judge call failed: no reply")
    long_reply = "I think " * 100
    unparsable = NoJudgment.unparsable(long_reply)
    assert unparsable.reply_excerpt == long_reply[:NoJudgment.EXCERPT_CHARS]
    assert unparsable.describe() == f"judge reply unparsable: {long_reply[:NoJudgment.EXCERPT_CHARS]!r}"
    with pytest.raises(ValueError, match="NoJudgment.kind"):
        NoJudgment("zero", "a score of 0 is no kind of no-judgment")


def test_a_judged_metric_without_a_judge_is_a_clear_error():
    with pytest.raises(ValueError, match="asks an LLM judge"):
        score("loong_judge", "x", Reference(["42"], extra={"question": "q", "answer": "42"}))
