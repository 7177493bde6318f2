"""`rol-describe --document FILE` (issue 54): a document's parsed text as the arms see it, with what its parse kept and
dropped counted; an XHTML page (git's manual) parses without bs4's XMLParsedAsHTMLWarning."""

from __future__ import annotations

import json
import warnings

import pytest

from eval.benchmarks import load_benchmark
from eval.corpus.document_view import document_view
from eval.corpus.html_text import parse_page
from eval.describe import main
from tests.pdf_files import write_pdf

# as git's AsciiDoc manual pages are written: an XML declaration, then a head longer than bs4's 500-character look
STYLE = "body { margin: 1em 5% 1em 5%; } " * 20
XHTML = f"""<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.1//EN" "http://www.w3.org/TR/xhtml11/DTD/xhtml11.dtd">
<html xmlns="http://www.w3.org/1999/xhtml" xml:lang="en">
<head><title>git-clean(1)</title><style type="text/css">{STYLE}</style></head>
<body>
<nav><a href="index.html">Home</a> <a href="git.html">git</a></nav>
<main>
<h1>git-clean(1) Manual Page<a class="headerlink" href="#top">¶</a></h1>
<ul><li><a href="#_name">NAME</a></li><li><a href="#_options">OPTIONS</a></li></ul>
<h2 id="_name">NAME</h2><p>git-clean - Remove untracked files from the working tree.</p>
<h2 id="_options">OPTIONS</h2>
<table><tr><th>option</th><th>what</th></tr><tr><td><code>-x</code></td><td>remove ignored files too</td></tr>
<tr><td><code>-X</code></td><td>remove only ignored files</td></tr></table>
<script>var x = 1;</script>
<div class="footnotes"><ol><li id="fn1">Untracked: not in the index.</li></ol></div>
</main>
<footer>Last updated 2024-01-01</footer>
</body></html>
"""


def test_an_xhtml_page_parses_without_the_xml_warning():
    import bs4

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bs4.BeautifulSoup(XHTML, "lxml")  # what the parser did before: bs4 warns on this page
        assert any(issubclass(w.category, bs4.XMLParsedAsHTMLWarning) for w in caught)
        caught.clear()
        page = parse_page(XHTML)
    assert [str(w.message)[:60] for w in caught] == []
    assert "-X\tremove only ignored files" in page.text and "Home" not in page.text


def test_the_view_counts_what_was_kept_and_dropped(tmp_path):
    path = tmp_path / "git-clean.html"
    path.write_text(XHTML, encoding="utf-8")
    view = document_view(path)
    assert view["kind"] == "html" and view["title"] == "git-clean(1)"
    kept, dropped = view["kept"], view["dropped"]
    assert kept["content taken"] == "the page's <main>" and kept["tables"] == 1 and kept["footnotes"] == 1
    assert kept["words kept"] == len(view["text"].split()) < kept["words in the page"]
    assert dropped["outside the <main>"] == {"words": 5}  # "Home git" and "Last updated 2024-01-01"
    assert dropped["navigation (outside the <main>)"] == {"elements": 1, "words": 2}
    assert dropped["page footers (outside the <main>)"] == {"elements": 1, "words": 3}
    assert dropped["heading anchors and back links"] == {"elements": 1, "words": 1}
    assert dropped["on-page tables of contents"] == {"elements": 1, "words": 2}
    assert dropped["scripts and styles"]["elements"] == 1


def test_the_text_shown_is_the_text_the_arms_read(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "git-clean.html").write_text(XHTML, encoding="utf-8")
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"id": "q", "question": "Which option removes only ignored files?",
                                     "answers": ["-X"], "documents": ["git-clean.html"]}) + "\n", encoding="utf-8")
    [sample] = load_benchmark({"name": "corpus", "path": str(docs), "questions": str(questions),
                               "cache_dir": None}).samples
    assert document_view(docs / "git-clean.html")["text"] == sample.context


def test_the_command_prints_the_text_then_the_counts(tmp_path, capsys):
    path = tmp_path / "git-clean.html"
    path.write_text(XHTML, encoding="utf-8")
    assert main(["--document", str(path)]) == 0
    out = capsys.readouterr().out
    head, text, tail = out.split("-" * 72 + "\n")
    assert head.startswith(f"{path} (html): ") and "the text every arm reads" in head
    assert text.strip() == document_view(path)["text"].strip()
    assert tail.startswith("kept: content taken: the page's <main>;") and "footnotes: 1" in tail
    assert "navigation (outside the <main>): 1 element, 2 words" in tail
    assert main(["--document", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["kept"]["tables"] == 1


def test_a_pdf_and_a_word_file_count_their_own_kinds(tmp_path):
    import docx

    pdf = tmp_path / "a.pdf"
    write_pdf(pdf, ["The first page holds enough words to count as text.", " ", "A third page of text here."])
    view = document_view(pdf)
    assert view["kept"]["pages"] == 3 and view["dropped"] == {"pages with almost no text (scanned? no OCR)": 1}
    d = docx.Document()
    d.add_paragraph("A paragraph.")
    d.add_table(rows=1, cols=2).rows[0].cells[0].text = "cell"
    d.sections[0].header.paragraphs[0].text = "Company confidential"
    d.save(str(tmp_path / "b.docx"))
    view = document_view(tmp_path / "b.docx")
    assert view["kept"] == {"paragraphs": 1, "tables": 1}
    assert view["dropped"] == {"page headers and footers": {"words": 2}} and "cell" in view["text"]


def test_a_file_that_gives_no_text_is_named(tmp_path, capsys):
    empty = tmp_path / "empty.html"
    empty.write_text("<html><body></body></html>", encoding="utf-8")
    assert main(["--document", str(empty)]) == 2
    assert f"error: {empty}: no text in it" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([])  # neither --benchmark nor --document
