"""The question viewer (questions.html), why each answer was lost, and the evidence text records keep."""

import csv
import re
import shutil
import subprocess

import pytest

from eval.evidence_text import answer_in_text, evidence_quotes, window_around
from eval.sample import Span
from experiments.report.agreement import agreements
from experiments.report.page.build import build_report
from experiments.report.page.questions_html import questions_html, questions_link, read_viewer
from experiments.report.questions.reasons import loss_reason, loss_rows
from experiments.report.questions.rows import question_rows
from experiments.report.runs import find_runs
from experiments.simulate.sweeps import write_run

TEXT = "Intro text. The vault code is 4417. More filler here. Outro."


def test_evidence_quotes_windows_and_answer_in_text():
    start = TEXT.index("The vault")
    span = Span(start, start + len("The vault code is 4417."))
    assert evidence_quotes(TEXT, [Span(doc_id="d1"), span]) == [
        {"start": span.start, "end": span.end, "text": "The vault code is 4417."}]
    w = window_around(TEXT, [span], chars=5)
    assert w == {"start": span.start - 5, "end": span.end + 5, "text": TEXT[span.start - 5:span.end + 5]}
    assert window_around(TEXT, [Span(doc_id="d1")]) is None
    assert answer_in_text(["4417"], TEXT) is True
    assert answer_in_text(["441"], TEXT) is False  # whole words, not a piece of one
    assert answer_in_text(["The Vault code"], TEXT) is True  # normalised as the metrics do
    assert answer_in_text(["", "  "], TEXT) is None
    assert answer_in_text(["金库"], "这是金库的密码", "zh") is True


RAG = {"arm": "rag", "status": "ok", "score": 0.0, "retrieved": []}
LC = {"arm": "longctx", "status": "ok", "score": 0.0, "kept_spans": [[0, 10]]}


@pytest.mark.parametrize("rec,top_k,expected", [
    ({**RAG, "evidence_in_prompt": 1.0}, 4, ("reading miss", "evidence")),
    ({**RAG, "evidence_in_prompt": 0.0, "evidence_in_top_k": 1.0}, 4, ("cut by the prompt budget", "evidence")),
    ({**RAG, "evidence_in_prompt": 0.0, "evidence_in_top_k": 0.0}, 4, ("retrieval miss", "evidence")),
    ({**RAG, "evidence_in_prompt": 0.5, "evidence_recall": {"3": 1.0}}, 3, ("cut by the prompt budget", "evidence")),
    ({**RAG, "evidence_in_prompt": None, "answer_in_context": True}, 4, ("reading miss", "answer in context")),
    ({**RAG, "evidence_in_prompt": None, "answer_in_context": False}, 4, ("retrieval miss", "answer in context")),
    ({**RAG}, 4, ("no evidence known", None)),
    ({**LC, "evidence_retained": 0.0, "truncated": True}, None, ("truncated away", "evidence")),
    ({**LC, "evidence_retained": 1.0, "truncated": True}, None, ("reading miss", "evidence")),
    ({**LC, "answer_in_context": False, "truncated": True}, None, ("truncated away", "answer in context")),
    ({**LC, "answer_in_context": False, "truncated": False}, None, ("no evidence known", None)),
    ({**LC, "route": "longctx", "evidence_in_prompt": 0.0, "evidence_retained": 1.0}, None,
     ("reading miss", "evidence")),
    ({"status": "skipped", "score": 0.0}, None, ("not served", None)),
    # enough of the evidence's characters in the chunk to count, but the border cut the answer it holds
    ({**RAG, "evidence_in_prompt": 1.0, "answer_in_context": False, "answers": ["1408567"],
      "evidence_quotes": [{"start": 0, "end": 40, "text": "The archive is locked with the code 1408567."}]}, 1,
     ("retrieval miss", "evidence")),
    ({**RAG, "evidence_in_prompt": 1.0, "answer_in_context": False, "answers": ["yes"],
      "evidence_quotes": [{"start": 0, "end": 40, "text": "The archive is locked."}]}, 1,
     ("reading miss", "evidence")),  # an answer the evidence does not quote says nothing about a cut
])
def test_each_wrong_answer_gets_one_reason(rec, top_k, expected):
    assert loss_reason(rec, 1.0, top_k) == expected


def _records(arm, rows, **extra):
    out = []
    for i, (score, fields) in enumerate(rows):
        out.append({"id": f"q{i}", "benchmark": "b", "task": "kv", "language": "en", "length_level": "1k",
                    "group": f"doc{i // 2}", "arm": arm, "answers": ["4417"], "question": f"What is code {i}?",
                    "status": "ok", "prediction": "4417" if score else "no idea", "score": float(score),
                    "prompt_tokens": 100, "completion_tokens": 5, "latency_s": 0.5, **extra, **fields})
    return out


def _evidence(i):
    start = TEXT.index("The vault")
    return {"evidence_quotes": [{"start": start, "end": start + 23, "text": "The vault code is 4417."}],
            "context_chars": len(TEXT)}


def _two_runs(root):
    start = TEXT.index("The vault")
    chunk = {"chunk": 1, "start": start - 5, "end": start + 30, "rank": 1, "score": 1.0,
             "text": TEXT[start - 5:start + 30]}
    other = {"chunk": 0, "start": 0, "end": 11, "rank": 1, "score": 1.0, "text": TEXT[0:11]}
    rag_rows = [(1, {"retrieved": [chunk], "evidence_in_prompt": 1.0}),
                (0, {"retrieved": [chunk], "evidence_in_prompt": 1.0}),  # reading miss
                (0, {"retrieved": [other], "evidence_in_prompt": 0.0, "evidence_in_top_k": 0.0}),  # retrieval miss
                (1, {"retrieved": [chunk], "evidence_in_prompt": 1.0}),
                (0, {"retrieved": [other], "dropped": [chunk], "evidence_in_prompt": 0.0, "evidence_in_top_k": 1.0}),
                (1, {"retrieved": [chunk], "evidence_in_prompt": 1.0})]
    lc_rows = [(1, {"evidence_retained": 1.0, "truncated": False}),
               (1, {"evidence_retained": 1.0, "truncated": False}),
               (0, {"evidence_retained": 0.0, "truncated": True, "kept_spans": [[0, 20]]}),  # truncated away
               (0, {"evidence_retained": 1.0, "truncated": False}),  # reading miss
               (1, {"evidence_retained": 1.0, "truncated": False}),
               (1, {"evidence_retained": 1.0, "truncated": False})]
    rag = [{**r, **_evidence(0)} for r in _records("rag", rag_rows)]
    lc = [{**r, **_evidence(0), "evidence_window": {"start": 0, "end": len(TEXT), "text": TEXT},
           "kept_spans": r.get("kept_spans") or [[0, len(TEXT)]]} for r in _records("longctx", lc_rows)]
    write_run(root / "rag", {"arm": "rag", "benchmark": "b", "generator": "g", "retriever": "bm25",
                             "chunk_size": 64, "top_k": 1, "order": "document"}, rag)
    write_run(root / "lc", {"arm": "longctx", "benchmark": "b", "generator": "g"}, lc)
    return root


def test_loss_table_counts_each_wrong_answer_once(tmp_path):
    runs = find_runs([_two_runs(tmp_path / "runs")], with_records=True)
    by = {r.config: r for r in loss_rows(runs, 0.5, 1.0)}
    rag = by["rag bm25 c64 k1"]
    assert (rag.scored, rag.wrong) == (6, 3)
    assert dict(rag.reasons) == {"reading miss": 1, "retrieval miss": 1, "cut by the prompt budget": 1}
    lc = by["longctx"]
    assert dict(lc.reasons) == {"truncated away": 1, "reading miss": 1} and lc.signal == "evidence"


def _with_oracle(root):
    """The two runs and the oracle retriever's run: the evidence chunk for every question."""
    _two_runs(root)
    start = TEXT.index("The vault")
    chunk = {"chunk": 1, "start": start - 5, "end": start + 30, "rank": 1, "score": 23.0,
             "text": TEXT[start - 5:start + 30]}
    rows = [(s, {"retrieved": [chunk], "evidence_in_prompt": 1.0, "evidence_in_top_k": 1.0})
            for s in (1, 1, 0, 1, 1, 1)]
    write_run(root / "oracle", {"arm": "rag", "benchmark": "b", "generator": "g", "retriever": "oracle",
                                "chunk_size": 64, "top_k": 1, "order": "document"},
              [{**r, **_evidence(0)} for r in _records("rag", rows)])
    return root


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("viewer")
    return build_report([str(_with_oracle(root / "runs"))], root / "out", export=("details",))


def test_report_writes_the_viewer_with_every_question_and_links_to_it(built):
    files = built
    page = files["questions.html"].read_text()
    data = read_viewer(files["questions.html"])
    assert [q["id"] for q in data["questions"]] == [f"q{i}" for i in range(6)]
    cells = {q["id"]: q["cell"] for q in data["questions"]}
    assert cells == {"q0": "both_right", "q1": "only_lc", "q2": "both_wrong", "q3": "only_rag", "q4": "only_lc",
                     "q5": "both_right"}
    q4 = data["questions"][4]
    rag = next(a for a in q4["a"] if data["configs"][a["c"]]["role"] == "rag")
    assert rag["r"] == "cut by the prompt budget" and len(rag["dr"]) == 1
    dropped = rag["dr"][0]
    marked = data["texts"][dropped[1]][dropped[2][0][0]:dropped[2][0][1]]
    assert marked == "The vault code is 4417."  # the evidence marked inside the chunk the budget dropped
    lc = next(a for a in data["questions"][2]["a"] if data["configs"][a["c"]]["role"] == "longctx")
    text_id, ev, cuts = lc["w"]
    assert data["texts"][text_id] == TEXT and cuts == [[20, len(TEXT)]]  # truncation kept the first 20 chars
    assert data["texts"][text_id][ev[0][0]:ev[0][1]] == "The vault code is 4417."
    md, html_page = files["report.md"].read_text(), files["report.html"].read_text()
    assert "What costs the chosen RAG config its answers" in md
    assert "(questions.html#bench=b&level=all&cell=only_rag)" in md or "cell=only_rag" in md
    assert '<a href="questions.html#bench=b' in html_page
    assert "Why answers were lost" in md
    assert files["lost_answers.csv"].exists()
    assert "</script><script>alert" not in page


def test_oracle_is_shown_as_what_retrieval_costs_and_never_chosen(built):
    md = built["report.md"].read_text()
    verdict = {r["level"]: r for r in csv.DictReader(built["verdict.csv"].open())}
    assert "oracle" not in verdict["1k"]["rag_config"]
    line = next(ln for ln in md.splitlines() if ln.startswith("| b | 1k | rag oracle c64 k1 |"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    # oracle 5 of 6 right (83.3), recall@k 1.00; the chosen RAG (bm25) 3 of 6 (50.0); long context 4 of 6
    assert cells[3:] == ["83.3", "1.00", "rag bm25 c64 k1", "50.0", "66.7", "+33.3", "200%"]


def test_details_export_loads_with_datasets_and_pandas(built):
    import datasets
    import pandas

    path = built["details/rag_bm25_c64_k1.parquet"]
    ds = datasets.load_dataset("parquet", data_files=str(path))["train"]
    assert ds.num_rows == 6 and ds["knob_top_k"] == [1] * 6 and ds["knob_retriever"] == ["bm25"] * 6
    assert ds["loss_reason"] == [None, "reading miss", "retrieval miss", None, "cut by the prompt budget", None]
    df = pandas.read_parquet(path)
    assert list(df["id"]) == [f"q{i}" for i in range(6)] and df["answers"][0].tolist() == ["4417"]
    card = built["details/README.md"].read_text()
    assert "rag_bm25_c64_k1.parquet" in card and "load_dataset" in card and "loss_reason" in card


def test_viewer_survives_hostile_text(tmp_path):
    data = {"configs": [], "questions": [{"id": "x", "bench": "b", "level": "1k", "task": "t",
                                          "q": "</script><script>alert(1)</script><!-- x", "gold": [], "a": []}],
            "texts": ["<!--", "</script>"], "cells": {}, "levels": ["1k"]}
    page = tmp_path / "questions.html"
    page.write_text(questions_html(data))
    assert page.read_text().count("</script>") == 4  # the index, the loader, one part, the script: nothing more
    back = read_viewer(page)
    assert back["questions"][0]["q"] == data["questions"][0]["q"] and back["texts"] == []  # texts no answer uses
    assert questions_link(cell="only_rag", config="rag bm25 c128 k4") == \
        "questions.html#cell=only_rag&config=rag%20bm25%20c128%20k4"
    with pytest.raises(ValueError, match="unknown viewer filter"):
        questions_link(colour="red")


def _chromium():
    return next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)


def test_viewer_filters_in_headless_chromium(tmp_path):
    browser = _chromium()
    if browser is None:
        pytest.skip("chromium not installed: `apt-get install -y chromium` to check the viewer in a browser")
    runs = find_runs([_two_runs(tmp_path / "runs")], with_records=True)
    data = question_rows(runs, agreements(runs, 0.5), 0.5, 1.0)
    page = tmp_path / "questions.html"
    page.write_text(questions_html(data))
    res = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                          "--virtual-time-budget=5000", "--dump-dom", page.as_uri() + "#cell=only_lc&level=1k"],
                         capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stderr[-2000:]
    dom = res.stdout
    assert 'data-ready="1"' in dom, dom[:500]
    assert re.findall(r'<article data-id="([^"]+)"', dom) == ["q1", "q4"]  # only long context right
    assert 'data-shown="2"' in dom and "2 of 6 questions shown" in dom
    assert re.search(r'<option value="only_lc"[^>]*>only long context right</option>', dom)
    # both arms side by side, each with its answer, and the reason RAG lost q4
    assert dom.count('class="arm ') == 4 and "lost: cut by the prompt budget (by evidence)" in dom
    # #open=<id>: that question's chunks are drawn, the evidence marked inside the chunk the budget dropped
    res = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                          "--virtual-time-budget=5000", "--dump-dom", page.as_uri() + "#cell=only_lc&open=q4"],
                         capture_output=True, text=True, timeout=180)
    dropped = re.search(r'<div class="chunk dropped">(.*?)</div>', res.stdout, re.S)
    assert dropped and "<mark>The vault code is 4417.</mark>" in dropped.group(1), res.stdout[-3000:]
