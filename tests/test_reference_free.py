"""Questions without reference answers: the evidence judge, and the pairwise judge asked in both orders.

The judge is a paid remote service, so its double is a real HTTP server on 127.0.0.1 that the project's
OpenAI-compatible client talks to; its replies follow a rule of the prompt (which answer holds a fact),
so each judge outcome is known."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from eval.metrics import NoJudgment, score
from eval.metrics.reference_free import LOSS, TIE, WIN, compare, outcome_of, parse_choice
from eval.sample import Reference
from llm.judge_backend import build_judge

FACT = "24 months"


def _answers(user: str) -> tuple[str, str]:
    first = user.split("Answer 1: ", 1)[1].split("\n\nAnswer 2: ", 1)
    return first[0], first[1].split("\n\nWhich answer", 1)[0]


def fact_judge(messages: list[dict]) -> str:
    """Prefers the answer holding FACT (whatever its position); grades evidence answers by it too."""
    system, user = messages[0]["content"], messages[-1]["content"]
    if system.startswith("You grade"):
        answer = user.rsplit("Answer: ", 1)[1]
        return "True." if FACT in answer else "False"
    one, two = _answers(user)
    if (FACT in one) == (FACT in two):
        return "tie"
    return "1" if FACT in one else "2"


def first_judge(messages: list[dict]) -> str:
    """Always prefers whatever is shown first: a position bias."""
    return "1" if not messages[0]["content"].startswith("You grade") else "maybe"


class _Judge(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        self.server.requests.append(body)
        text = self.server.policy(body["messages"])
        out = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": body.get("model", "judge"),
                          "choices": [{"index": 0, "finish_reason": "stop",
                                       "message": {"role": "assistant", "content": text}}],
                          "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


@pytest.fixture
def serve(tmp_path):
    servers = []

    def start(policy):
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Judge)
        server.policy, server.requests = policy, []
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        judge = build_judge("judge-model", f"http://127.0.0.1:{server.server_port}/v1",
                            tmp_path / f"judgments-{len(servers)}.sqlite", max_retries=0)
        return judge, server

    yield start
    for s in servers:
        s.shutdown()


@pytest.mark.parametrize("a_first, b_first, outcome, flipped", [
    ("1", "2", WIN, False), ("2", "1", LOSS, False), ("1", "1", TIE, True), ("2", "2", TIE, True),
    ("tie", "2", TIE, False), ("1", "tie", TIE, False), ("tie", "tie", TIE, False),
])
def test_a_preference_counts_only_when_both_orders_agree(a_first, b_first, outcome, flipped):
    assert outcome_of(a_first, b_first) == (outcome, flipped)


@pytest.mark.parametrize("reply, choice", [
    ("1", "1"), ("2.", "2"), ("Answer 2 is better", "2"), ("TIE", "tie"), ("It's a tie.", "tie"),
    ("Sure! I prefer answer one", "1"), ("", None), ("neither", None), ("12 apples", None),
])
def test_the_judges_choice_is_read_from_its_reply(reply, choice):
    assert parse_choice(reply) == choice


def test_the_evidence_judge_grades_an_answer_against_the_quotes(serve):
    judge, server = serve(fact_judge)
    ref = Reference([], extra={"question": "How long is the warranty?",
                               "evidence": ["The warranty lasts 24 months from the date of delivery."]})
    assert score("evidence_judge", "It lasts 24 months.", ref, judge=judge)["score"] == 1.0
    assert score("evidence_judge", "Two years, I think.", ref, judge=judge)["score"] == 0.0
    user = server.requests[0]["messages"][-1]["content"]
    assert "[1] The warranty lasts 24 months" in user and "Question: How long is the warranty?" in user
    with pytest.raises(ValueError, match="needs the question's evidence"):
        score("evidence_judge", "x", Reference([], extra={"question": "q"}), judge=judge)


def test_an_unreadable_evidence_judgment_is_no_judgment_never_a_zero(serve):
    judge, _ = serve(first_judge)  # replies "maybe" to graders
    ref = Reference([], extra={"question": "q", "evidence": ["e"]})
    values = score("evidence_judge", "an answer", ref, judge=judge)
    assert isinstance(values, NoJudgment) and values.kind == NoJudgment.UNPARSABLE
    assert values.reply_excerpt == "maybe"


def test_the_pairwise_judge_is_asked_both_orders_with_the_arms_hidden(serve):
    judge, server = serve(fact_judge)
    win = compare(judge, "How long is the warranty?", "It is 24 months.", "One year.")
    loss = compare(judge, "How long is the warranty?", "One year.", "24 months, from delivery.")
    tie = compare(judge, "How long?", "No idea.", "Not stated.")
    assert (win.outcome, win.a_first, win.b_first) == (WIN, "1", "2")
    assert (loss.outcome, tie.outcome) == (LOSS, TIE) and not win.flipped
    prompts = [r["messages"][-1]["content"] for r in server.requests[:2]]
    assert prompts[0].index("It is 24 months.") < prompts[0].index("One year.")  # RAG's answer first ...
    assert prompts[1].index("One year.") < prompts[1].index("It is 24 months.")  # ... then second
    assert not any(word in json.dumps(server.requests).lower() for word in ("rag", "long context", "retriev"))


def test_a_judge_that_prefers_a_position_yields_ties_marked_flipped(serve):
    judge, _ = serve(first_judge)
    c = compare(judge, "How long is the warranty?", "It is 24 months.", "One year.")
    assert (c.outcome, c.flipped) == (TIE, True)


def test_pairwise_judge_refuses_to_score_one_answer():
    with pytest.raises(ValueError, match="experiments.pairwise"):
        score("pairwise_judge", "an answer", Reference([]))


# -- the whole path: runner -> experiments.pairwise -> report ---------------------------------------

DOCS = {"warranty.txt": "Warranty terms. The warranty lasts 24 months from the date of delivery. Repairs are free.",
        "billing.md": "# Billing\nInvoices are sent on the first Monday of each month by email.",
        "support.txt": "Support hours are nine to five on weekdays. The hotline number is 555-0100."}
BARE = [{"id": "w", "question": "How long is the warranty?", "documents": ["warranty.txt"]},
        {"id": "b", "question": "When are invoices sent?", "documents": ["billing.md"]},
        {"id": "s", "question": "What is the hotline number?", "documents": ["support.txt"]}]


def longer_judge(messages: list[dict]) -> str:
    """Prefers the longer answer, wherever it is shown (a known bias, here a known rule)."""
    one, two = _answers(messages[-1]["content"])
    return "tie" if len(one.split()) == len(two.split()) else "1" if len(one.split()) > len(two.split()) else "2"


@pytest.fixture(scope="module")
def bare_sweep(tmp_path_factory, tiny_llm):
    """Both arms over the bare questions, answered by the tiny random-weight Llama (what is judged here is the
    pairwise path, by rules that read the answers, whatever they say)."""
    from experiments.run import run
    from tests.conftest import compose

    tmp = tmp_path_factory.mktemp("pairwise")
    docs = tmp / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    questions = tmp / "questions.jsonl"
    questions.write_text("".join(json.dumps(q) + "\n" for q in BARE), encoding="utf-8")
    common = ["benchmark=corpus", f"benchmark.path={docs}", f"benchmark.questions={questions}",
              f"benchmark.cache_dir={tmp / 'cache'}", "benchmark.max_new_tokens=12", "run.progress=false",
              f"run.cache_dir={tmp / 'cache'}", f"generator.model={tiny_llm}"]
    run(compose([*common, "arm=longctx"]), tmp / "sweep" / "lc")
    rag = ["arm=rag", "retriever=bm25", "rag.chunk_size=32", "rag.chunk_overlap=8", "rag.top_k=1"]
    run(compose([*common, *rag]), tmp / "sweep" / "rag")
    return tmp / "sweep"


def test_answers_without_references_are_recorded_unscored_then_judged_in_pairs(bare_sweep, serve, tmp_path):
    from experiments import pairwise
    from experiments.records import RECORD_KEYS, read_records

    lc, rag = read_records(bare_sweep / "lc" / "records.jsonl"), read_records(bare_sweep / "rag" / "records.jsonl")
    assert set(lc) == set(rag) == {"w", "b", "s"}
    assert all(r["status"] == "ok" and r["scoring"] == "pairwise" and "score" not in r for r in lc.values())
    assert rag["w"]["question"] == "How long is the warranty?"
    assert all(set(r) <= RECORD_KEYS for r in [*lc.values(), *rag.values()])  # the schema documents every key
    judge, server = serve(longer_judge)
    url = f"http://127.0.0.1:{server.server_port}/v1"
    argv = [str(bare_sweep), "--judge-model", "judge-model", "--judge-base-url", url,
            "--cache-dir", str(tmp_path / "jc"), "--no-progress"]
    assert pairwise.main(argv) == 0
    lines = read_records(bare_sweep / "rag" / pairwise.PAIRWISE_FILE)
    same = sum(rag[q]["prediction"] == lc[q]["prediction"] for q in lines)  # one prompt: the second order is cached
    assert set(lines) == {"w", "b", "s"} and len(server.requests) == 2 * 3 - same  # two orders per question
    for qid, line in lines.items():
        words = len(rag[qid]["prediction"].split()), len(lc[qid]["prediction"].split())
        assert line["outcome"] == ("tie" if words[0] == words[1] else "win" if words[0] > words[1] else "loss")
        assert (line["words_rag"], line["words_longctx"]) == words and not line["flipped"]
    assert pairwise.main(argv) == 0 and len(server.requests) == 2 * 3 - same  # resumed: nothing judged twice


def test_the_report_reads_pairwise_judgments_into_the_verdict(bare_sweep, serve, tmp_path):
    import csv

    from experiments import pairwise
    from experiments.report.page.build import build_report
    from experiments.report.settings import load_settings

    judge, server = serve(longer_judge)
    assert pairwise.main([str(bare_sweep), "--judge-model", "judge-model", "--no-progress", "--judge-base-url",
                          f"http://127.0.0.1:{server.server_port}/v1", "--cache-dir", str(tmp_path / "jc")]) == 0
    lines = json.loads("[" + ",".join((bare_sweep / "rag" / pairwise.PAIRWISE_FILE).read_text().split("\n")[:-1]) + "]")
    outcomes = {j["id"]: j["outcome"] for j in lines}
    want = 100 * sum({"win": 1.0, "tie": 0.5, "loss": 0.0}[o] for o in outcomes.values()) / 3
    files = build_report([str(bare_sweep)], tmp_path / "report", load_settings(resamples=200))
    with open(files["verdict.csv"], newline="", encoding="utf-8") as f:
        row = next(r for r in csv.DictReader(f) if r["level"] != "all")
    assert float(row["rag_score"]) == pytest.approx(want, abs=0.01) and float(row["longctx_score"]) == 50.0
    text = files["report.md"].read_text()
    assert "wins − losses" in text and "order flips" in text


def test_pairwise_needs_one_long_context_run_to_compare_against(bare_sweep, tmp_path, capsys):
    import shutil

    from experiments import pairwise

    two = tmp_path / "two"
    shutil.copytree(bare_sweep, two)
    shutil.copytree(two / "lc", two / "lc2")
    metrics = json.loads((two / "lc2" / "metrics.json").read_text())
    metrics["config_hash"] = "another"
    metrics["knobs"]["truncation"] = "start"
    (two / "lc2" / "metrics.json").write_text(json.dumps(metrics))
    assert pairwise.main([str(two), "--judge-model", "m", "--judge-base-url", "http://127.0.0.1:9/v1"]) == 2
    assert "needs one long-context run" in capsys.readouterr().err
