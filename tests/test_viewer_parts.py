"""The question viewer stays a small page at any size: past one file's size its rows go into part files beside it,
which the page reads as the reader pages, filters and searches (from file://), and past the page's cap it holds
the first questions and says how many; the report says which."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from experiments.report.page import questions_html as viewer
from experiments.report.page.questions_html import DATA_DIR, read_viewer, write_viewer
from experiments.report.page.viewer_links import viewer_holds

CELLS = {"both_right": "both right", "only_lc": "only long context right", "only_rag": "only RAG right",
         "both_wrong": "both wrong"}


def _payload(n: int) -> dict:
    """`n` questions, two configs each: RAG with two chunks (one shared by the question's neighbour), long context
    with a window; every fifth question only RAG right."""
    texts, questions = [], []
    for i in range(n):
        texts += [f"chunk {i} with the vault code {1000 + i} inside it " * 4, f"window around question {i} " * 6]
        shared = 2 * (i - 1) if i else 0
        right = i % 5 == 0
        questions.append({
            "id": f"q{i:04d}", "bench": "b" if i < n // 2 else "c", "task": "kv", "level": ("1k", "4k")[i % 2],
            "q": f"What is the vault code {i}?", "gold": [str(1000 + i)], "ev": [f"vault code {1000 + i}"],
            "cell": "only_rag" if right else "both_wrong",
            "a": [{"c": 0, "st": "ok", "p": str(1000 + i) if right else "no idea", "s": float(right),
                   "ch": [[1, 2 * i, [[5, 20]]]], "dr": [[2, shared, []]], "fr": 1, "ip": 1.0, "n": 1,
                   **({} if right else {"r": "reading miss", "sig": "evidence"})},
                  {"c": 1, "st": "ok", "p": "no idea", "s": 0.0, "w": [2 * i + 1, [[0, 6]], [[30, 40]]], "tr": True,
                   "er": 0.0, "r": "truncated away", "sig": "evidence"}]})
    configs = [{"label": "rag bm25 c128 k1", "bench": "b", "role": "rag", "arm": "rag", "pair": True},
               {"label": "longctx", "bench": "b", "role": "longctx", "arm": "longctx", "pair": True}]
    return {"configs": configs, "questions": questions, "texts": texts, "cells": CELLS, "levels": ["1k", "4k"]}


def _resolved(payload: dict) -> list[dict]:
    """The questions with every text id replaced by its text (what two string tables must agree on)."""
    t, out = payload["texts"], []
    for q in payload["questions"]:
        answers = []
        for a in q["a"]:
            a = dict(a)
            for key in [k for k in ("ch", "dr") if k in a]:
                a[key] = [[c[0], t[c[1]], c[2]] for c in a[key]]
            if "w" in a:
                a["w"] = [t[a["w"][0]], *a["w"][1:]]
            answers.append(a)
        out.append({**q, "a": answers})
    return out


@pytest.fixture()
def small_limits(monkeypatch):
    monkeypatch.setattr(viewer, "PART_BYTES", 4_000)
    monkeypatch.setattr(viewer, "ONE_FILE_BYTES", 20_000)


def test_a_large_viewer_is_a_small_page_with_its_rows_in_parts_beside_it(tmp_path, small_limits):
    payload = _payload(300)
    said = write_viewer(payload, tmp_path)
    parts = sorted((tmp_path / DATA_DIR).glob("part-*.js"))
    beside = sorted((tmp_path / DATA_DIR).iterdir())  # the parts and the questions' search texts
    assert said["questions"] == said["held"] == 300 and said["part_files"] == len(parts) + 1 == len(beside) > 10
    assert said["page_bytes"] == (tmp_path / "questions.html").stat().st_size < 60_000
    assert said["parts_bytes"] == sum(p.stat().st_size for p in beside)
    assert said["files"] == ["questions.html", *(f"{DATA_DIR}/{p.name}" for p in parts), f"{DATA_DIR}/search.js"]
    page = (tmp_path / "questions.html").read_text()
    assert "rolViewer.part(" not in page.split("<script>", 2)[-1].split("</script>")[0]  # no part inline
    back = read_viewer(tmp_path / "questions.html")
    assert _resolved(back) == _resolved(payload) and back["held"] == 300
    assert all(p.stat().st_size < 3 * viewer.PART_BYTES for p in parts)
    assert viewer_holds(said).startswith("The viewer holds all 300 questions: questions.html (0.0 MB) reads their")
    assert f"from {DATA_DIR}/ ({len(parts) + 1} compressed files" in viewer_holds(said)
    small = write_viewer(_payload(5), tmp_path)  # rewritten small: one file, the old parts gone
    assert small["part_files"] == 0 and not list((tmp_path / DATA_DIR).glob("*.js")) and small["files"] == [
        "questions.html"]
    assert _resolved(read_viewer(tmp_path / "questions.html")) == _resolved(_payload(5))
    assert viewer_holds(small) == f"The viewer holds all 5 questions: questions.html " \
                                  f"({small['page_bytes'] / 1e6:.1f} MB, one file)."


def test_past_its_cap_the_page_holds_the_first_questions_and_says_so(tmp_path, small_limits, monkeypatch):
    room = len(viewer.SCRIPT) + len(viewer.STYLE) + 50_000
    monkeypatch.setattr(viewer, "PAGE_MAX_BYTES", room + 2_000)  # room for the index of a few dozen questions
    said = write_viewer(_payload(300), tmp_path)
    assert 10 < said["held"] < 300 and said["questions"] == 300
    back = read_viewer(tmp_path / "questions.html")
    assert [q["id"] for q in back["questions"]] == [f"q{i:04d}" for i in range(said["held"])]
    assert f"holds the first {said['held']:,} of 300 questions" in (tmp_path / "questions.html").read_text()
    assert viewer_holds(said).startswith(f"The viewer holds the first {said['held']:,} of 300 questions")


def _chromium():
    return next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)


def _dom(browser: str, url: str) -> str:
    res = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                          "--virtual-time-budget=8000", "--dump-dom", url], capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stderr[-2000:]
    assert 'data-ready="1"' in res.stdout, res.stdout[-2000:]
    return res.stdout


def test_the_parts_are_read_from_file_as_the_reader_pages_filters_and_searches(tmp_path, small_limits):
    browser = _chromium()
    if browser is None:
        pytest.skip("chromium not installed: `apt-get install -y chromium` to check the viewer in a browser")
    said = write_viewer(_payload(300), tmp_path)
    assert said["part_files"] > 10
    url = (tmp_path / "questions.html").as_uri()
    first = _dom(browser, url)
    assert re.findall(r'<article data-id="([^"]+)"', first) == [f"q{i:04d}" for i in range(40)]
    assert "300 of 300 questions shown" in first
    late = _dom(browser, url + "#cell=only_rag&bench=c&level=4k")  # hits spread over the later parts
    wanted = [f"q{i:04d}" for i in range(150, 300) if i % 5 == 0 and i % 2 == 1]
    assert re.findall(r'<article data-id="([^"]+)"', late) == wanted and f'data-shown="{len(wanted)}"' in late
    # a search reads the questions' search texts (the gold answer of a question in the last part), chunks opened
    opened = _dom(browser, url + "#q=1297&open=q0297&config=rag%20bm25%20c128%20k1")
    assert re.findall(r'<article data-id="([^"]+)"', opened) == ["q0297"]
    chunk = re.search(r'<article data-id="q0297">.*?<div class="chunk">(.*?)</div>', opened, re.S)
    assert chunk and "<mark>" in chunk.group(1) and "chunk 297 with the vault code 1297" in chunk.group(1)
    (tmp_path / DATA_DIR / "part-00002.js").unlink()  # a folder shared without its parts: said, not a blank page
    res = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                          "--virtual-time-budget=8000", "--dump-dom", url], capture_output=True, text=True,
                         timeout=180)
    assert "cannot read" in res.stdout and "keep questions.html beside its folder questions_data" in res.stdout


def test_a_one_file_viewer_searches_its_inline_parts(tmp_path, small_limits):
    browser = _chromium()
    if browser is None:
        pytest.skip("chromium not installed: `apt-get install -y chromium` to check the viewer in a browser")
    said = write_viewer(_payload(20), tmp_path)
    assert said["part_files"] == 0 and not (tmp_path / DATA_DIR).exists()
    dom = _dom(browser, (tmp_path / "questions.html").as_uri() + "#q=VAULT%20CODE%201013")  # any case: the evidence
    assert re.findall(r'<article data-id="([^"]+)"', dom) == ["q0013"]


def test_reading_back_a_page_that_is_not_a_viewer_names_the_page(tmp_path):
    page = tmp_path / "report.html"
    page.write_text("<html><body>a report without the questions viewer</body></html>", encoding="utf-8")
    with pytest.raises(ValueError, match=r"report\.html: not a questions viewer"):
        read_viewer(page)
