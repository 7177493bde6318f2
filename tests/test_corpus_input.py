"""benchmark=corpus input: the parse cache (by file content; a damaged entry is parsed again), parsing in a
pool of processes (the same result, in order), BEIR queries with qrels, the metric each question is
scored by, and bad input (empty folders, corrupt and encrypted PDFs, questions files in other or mixed
encodings, duplicate ids, missing documents, quotes found nowhere), each named or counted."""

from __future__ import annotations

import json
import logging
import sqlite3

import pytest

from eval.benchmarks import load_benchmark
from eval.corpus import parsers
from eval.corpus.cache import FILE_NAME, ParsedDocumentCache
from eval.corpus.folder import read_folder
from eval.corpus.parsers import decode_bytes
from eval.storage import entry_checksum
from tests.pdf_files import write_pdf

WARRANTY = "The warranty lasts 24 months from the date of delivery."
LAUNCH = "The launch code for the spring release is ALPHA-7."


def _docx(path, text):
    import docx

    d = docx.Document()
    d.add_paragraph(text)
    d.save(str(path))


def _folder(root):
    """A small folder of every kind, a scanned-looking PDF page and a broken PDF among them."""
    root.mkdir(exist_ok=True)
    (root / "a.txt").write_text("Release notes.\n" + LAUNCH, encoding="utf-8")
    (root / "b.md").write_bytes("# Billing\nInvoices are sent on the first Monday.".encode("utf-16"))
    (root / "c.html").write_text("<html><title>FAQ</title><body><p>Returns within 30 days.</p></body></html>",
                                 encoding="utf-8")
    write_pdf(root / "d.pdf", ["Annual report.", WARRANTY, ""])
    _docx(root / "e.docx", "Support hours are nine to five.")
    (root / "f.pdf").write_bytes(b"%PDF-1.4 broken")
    return root


def _as_tuples(result):
    docs, bad = result
    return ([(d.doc_id, d.text, d.title, d.page_starts, d.warnings) for d in docs],
            [(b.path, b.reason) for b in bad])


def _write(path, rows, encoding="utf-8"):
    path.write_bytes("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode(encoding))
    return path


# -- the parse cache ------------------------------------------------------------------------------

def test_parses_are_cached_by_content_and_a_changed_file_or_parser_parses_again(tmp_path, monkeypatch):
    root = _folder(tmp_path / "docs")
    cache = ParsedDocumentCache(tmp_path / "cache" / FILE_NAME)
    first = _as_tuples(read_folder(root, cache=cache))
    assert (cache.hits, cache.misses) == (0, 6) and len(first[0]) == 5 and first[1][0][0] == "f.pdf"
    again = ParsedDocumentCache(tmp_path / "cache" / FILE_NAME)  # another run: a new connection, same file
    assert _as_tuples(read_folder(root, cache=again)) == first  # same text, offsets, pages, warnings, bad files
    assert (again.hits, again.misses) == (6, 0)
    (root / "a.txt").write_text("Release notes, second edition.\n" + LAUNCH, encoding="utf-8")
    changed = ParsedDocumentCache(tmp_path / "cache" / FILE_NAME)
    docs, _ = read_folder(root, cache=changed)
    assert (changed.hits, changed.misses) == (5, 1) and docs[0].text.startswith("Release notes, second")
    monkeypatch.setattr(parsers, "PARSER_VERSION", parsers.PARSER_VERSION + 1)  # a parser changed
    bumped = ParsedDocumentCache(tmp_path / "cache" / FILE_NAME)
    read_folder(root, cache=bumped)
    assert (bumped.hits, bumped.misses) == (0, 6)


def test_the_key_holds_the_library_versions_and_the_suffix():
    data = b"same bytes"
    assert parsers.document_key(data, ".txt") != parsers.document_key(data, ".md")
    assert parsers.document_key(data, ".TXT") == parsers.document_key(data, ".txt")
    assert "pypdf=" in parsers._library_versions(".pdf") and "python-docx=" in parsers._library_versions(".docx")


@pytest.mark.parametrize("damage", ["checksum", "shape"])
def test_a_damaged_cache_entry_is_parsed_again_never_an_error(tmp_path, damage, caplog):
    root = _folder(tmp_path / "docs")
    path = tmp_path / FILE_NAME
    want = _as_tuples(read_folder(root, cache=ParsedDocumentCache(path)))
    db = sqlite3.connect(path)
    key, value = db.execute("SELECT key, value FROM parsed_documents WHERE value LIKE '%Annual report%'").fetchone()
    if damage == "checksum":  # the bytes changed under the checksum
        db.execute("UPDATE parsed_documents SET value = ? WHERE key = ?", (value.replace("Annual", "Annul"), key))
    else:  # a well-checksummed entry of the wrong shape: pages past the end of the text
        bad = json.dumps({**json.loads(value), "page_starts": [0, 10 ** 9]})
        db.execute("UPDATE parsed_documents SET value = ?, checksum = ? WHERE key = ?",
                   (bad, entry_checksum(key, bad), key))
    db.commit()
    db.close()
    cache = ParsedDocumentCache(path)
    with caplog.at_level(logging.WARNING):
        assert _as_tuples(read_folder(root, cache=cache)) == want
    assert cache.corrupted == 1 and (cache.hits, cache.misses) == (5, 1)
    assert any("parsed-document cache" in r.getMessage() and "corrupted" in r.getMessage() for r in caplog.records)
    assert ParsedDocumentCache(path).get(key) is not None  # rewritten


def test_a_pool_of_processes_gives_the_serial_result_in_the_same_order(tmp_path):
    root = _folder(tmp_path / "docs")
    for i in range(6):
        (root / f"n{i}.txt").write_text(f"Note {i}: " + LAUNCH, encoding="utf-8")
    serial = _as_tuples(read_folder(root, workers=1))
    assert _as_tuples(read_folder(root, workers=2)) == serial
    assert [d[0] for d in serial[0]][:6] == ["a.txt", "b.md", "c.html", "d.pdf", "e.docx", "n0.txt"]


def test_when_the_pool_cannot_start_the_files_are_parsed_here_and_it_says_so(tmp_path):
    """A script read from stdin cannot be re-imported by spawned workers: the pool breaks, nothing is lost."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    root = _folder(tmp_path / "docs")
    script = (f"import json, logging; logging.basicConfig(); from eval.corpus.folder import read_folder\n"
              f"docs, bad = read_folder({str(root)!r}, workers=2)\n"
              f"print(json.dumps([[d.doc_id, d.text] for d in docs] + [[b.path, b.reason] for b in bad]))\n")
    res = subprocess.run([sys.executable, "-"], input=script, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    docs, bad = read_folder(root, workers=1)
    assert json.loads(res.stdout) == [[d.doc_id, d.text] for d in docs] + [[b.path, b.reason] for b in bad]
    assert "the parsing processes failed after 0 of 6 files" in res.stderr


def test_the_benchmark_caches_in_cache_dir_and_says_so(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.txt").write_text(LAUNCH, encoding="utf-8")
    questions = _write(tmp_path / "q.jsonl", [{"question": "Code?", "answers": ["ALPHA-7"], "documents": ["a.txt"]}])
    cfg = {"name": "corpus", "path": str(root), "questions": str(questions), "cache_dir": str(tmp_path / "c")}
    assert load_benchmark(cfg).notes["parsed-document cache"]["misses"] == 1
    notes = load_benchmark(cfg).notes["parsed-document cache"]
    assert (notes["hits"], notes["misses"]) == (1, 0) and notes["path"] == str(tmp_path / "c" / FILE_NAME)
    assert "parsed-document cache" not in load_benchmark({**cfg, "cache_dir": None}).notes


# -- BEIR queries and qrels ------------------------------------------------------------------------

@pytest.fixture()
def beir(tmp_path):
    root = tmp_path / "beir"
    (root / "qrels").mkdir(parents=True)
    _write(root / "corpus.jsonl", [{"_id": "d1", "title": "Shipping", "text": "Orders ship within two days."},
                                   {"_id": "d2", "title": "Privacy", "text": "We never sell customer data."},
                                   {"_id": "d3", "title": "Returns", "text": "Returns are free."}])
    _write(root / "queries.jsonl", [{"_id": "q1", "text": "How fast do orders ship?"},
                                    {"_id": "q2", "text": "Do you sell data?"},
                                    {"_id": "q3", "text": "A query of another split"}])
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t0\nq2\td2\t2\n",
                                             encoding="utf-8")
    return root


def test_beir_queries_with_qrels_get_their_relevant_documents(beir, caplog):
    cfg = {"name": "corpus", "path": str(beir), "questions": str(beir / "queries.jsonl"),
           "qrels": str(beir / "qrels" / "test.tsv"), "context": "corpus"}
    with caplog.at_level(logging.WARNING):
        got = load_benchmark(cfg)  # queries.jsonl and qrels/ beside corpus.jsonl are not documents
    assert got.notes["documents"] == 3 and got.notes["unreadable files"] == []
    q1, q2 = got.samples
    assert (q1.id, q1.question) == ("q1", "How fast do orders ship?")
    assert [(s.doc_id, s.start) for s in q1.evidence] == [("d1", None)]  # score 0 is not relevant
    assert q2.metadata["documents"] == ["d2"] and q1.metric == q2.metric == "pairwise_judge"
    assert got.skipped["questions without relevant documents in qrels"] == 1
    assert any("left out 1 question(s)" in r.getMessage() and "q3" in r.getMessage() for r in caplog.records)
    by_docs = load_benchmark({**cfg, "context": "documents"}).samples
    assert by_docs[0].context == "Shipping\nOrders ship within two days."


@pytest.mark.parametrize("line, message", [
    ("q1\tnope\t1", r"test.tsv:3: field 'corpus-id': corpus-id 'nope' is not among the 3 documents"),
    ("q9\td1\t1", r"test.tsv:3: field 'query-id': query-id 'q9' is not among the questions"),
    ("q1\t0\td1\t1", r"test.tsv:3: 4 tab-separated fields; a BEIR qrels line has 3"),
    ("q1\td1\thigh", r"test.tsv:3: field 'score': score 'high' is not a number"),
])
def test_a_bad_qrels_line_is_named_or_skipped_and_counted(beir, line, message):
    qrels = beir / "qrels" / "test.tsv"
    qrels.write_text(f"query-id\tcorpus-id\tscore\nq2\td2\t1\n{line}\n", encoding="utf-8")
    cfg = {"name": "corpus", "path": str(beir), "questions": str(beir / "queries.jsonl"), "qrels": str(qrels)}
    with pytest.raises(ValueError, match=message):
        load_benchmark(cfg)
    kept = load_benchmark({**cfg, "skip_bad": True})
    assert [s.id for s in kept.samples] == ["q2"] and kept.skipped["bad records"] == 1


# -- the metric of each question -------------------------------------------------------------------

def test_each_question_is_scored_by_what_it_has(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.txt").write_text("Release notes.\n" + LAUNCH, encoding="utf-8")
    rows = [{"id": "answered", "question": "Code?", "answers": ["ALPHA-7"], "documents": ["a.txt"]},
            {"id": "quoted", "question": "Code?", "documents": ["a.txt"],
             "evidence": ["the launch code for the spring release is ALPHA-7", "no such sentence anywhere here"]},
            {"id": "lost", "question": "Code?", "documents": ["a.txt"], "evidence": ["a quote found nowhere at all"]},
            {"id": "bare", "question": "Code?", "documents": ["a.txt"]}]
    got = load_benchmark({"name": "corpus", "path": str(root), "questions": str(_write(tmp_path / "q.jsonl", rows))})
    by = {s.id: s for s in got.samples}
    assert {k: s.metric for k, s in by.items()} == {"answered": "contains_tokens", "quoted": "evidence_judge",
                                                    "lost": "pairwise_judge", "bare": "pairwise_judge"}
    assert by["quoted"].reference_extra == {"question": "Code?",  # the document's own words, its capital T
                                            "evidence": ["The launch code for the spring release is ALPHA-7"]}
    assert by["bare"].reference_extra == {"question": "Code?", "evidence": []}
    assert got.notes["questions by metric"] == {"contains_tokens": 1, "evidence_judge": 1, "pairwise_judge": 2}
    assert got.notes["evidence quotes not aligned"] == 2
    chosen = load_benchmark({"name": "corpus", "path": str(root), "questions": str(tmp_path / "q.jsonl"),
                             "metric": "qa_f1"})  # benchmark.metric scores the answered; the rest keep a judge
    assert {s.id: s.metric for s in chosen.samples} == {"answered": "qa_f1", "quoted": "evidence_judge",
                                                        "lost": "pairwise_judge", "bare": "pairwise_judge"}


# -- bad input ------------------------------------------------------------------------------------

def _cfg(root, questions, **extra):
    return {"name": "corpus", "path": str(root), "questions": str(questions), **extra}


def test_an_empty_folder_and_one_with_no_supported_file_are_errors(tmp_path):
    empty = tmp_path / "empty"
    (empty / ".git").mkdir(parents=True)
    (empty / ".git" / "a.txt").write_text(LAUNCH, encoding="utf-8")  # hidden: not read
    questions = _write(tmp_path / "q.jsonl", [{"question": "Q?", "answers": ["x"]}])
    with pytest.raises(ValueError, match=r"empty'.* holds no files \(hidden files and folders are not read\)"):
        load_benchmark(_cfg(empty, questions))
    odd = tmp_path / "odd"
    odd.mkdir()
    (odd / "data.xlsx").write_bytes(b"PK\x03\x04")
    (odd / "notes").write_text(LAUNCH, encoding="utf-8")
    for skip in (False, True):
        with pytest.raises(ValueError, match=r"none of its 2 file\(s\) is of a kind read here: data.xlsx: unknown "
                                             r"extension '.xlsx'.*notes: unknown extension '\(none\)'"):
            load_benchmark(_cfg(odd, questions, skip_bad=skip))


def test_corrupt_and_encrypted_pdfs_are_named_and_counted(tmp_path, caplog):
    root = tmp_path / "docs"
    root.mkdir()
    write_pdf(root / "ok.pdf", [WARRANTY])
    write_pdf(root / "owner-only.pdf", [LAUNCH], owner_password="owner")  # opens without a password: read
    write_pdf(root / "locked.pdf", [LAUNCH], owner_password="owner", user_password="secret")
    whole = (root / "ok.pdf").read_bytes()
    (root / "truncated.pdf").write_bytes(whole[: len(whole) // 2])
    questions = _write(tmp_path / "q.jsonl", [{"question": "Warranty?", "answers": ["24 months"],
                                               "documents": ["ok.pdf"]}])
    with pytest.raises(ValueError, match=r"2 file\(s\) could not be read: locked.pdf: encrypted PDF \(needs a "
                                         r"password\); truncated.pdf: unreadable PDF \(pypdf: .*pypdfium2: "):
        load_benchmark(_cfg(root, questions))
    with caplog.at_level(logging.WARNING):
        got = load_benchmark(_cfg(root, questions, skip_bad=True, context="corpus"))
    assert got.skipped["unreadable files"] == 2 and got.notes["unreadable files"] == ["locked.pdf", "truncated.pdf"]
    assert LAUNCH in got.samples[0].context  # the owner-password-only PDF was read
    assert any("left out 2 file(s)" in r.getMessage() for r in caplog.records)


GB_ROWS = [{"id": "zh", "question": "总部在哪里？", "answers": ["杭州"], "documents": ["zh.txt"]},
           {"id": "en", "question": "What is the launch code?", "answers": ["ALPHA-7"], "documents": ["a.txt"]}]


@pytest.fixture()
def two_docs(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "zh.txt").write_text("公司总部位于杭州。", encoding="utf-8")
    (root / "a.txt").write_text(LAUNCH, encoding="utf-8")
    return root


def _csv_bytes(rows, encoding):
    lines = ["id,question,answers,documents"] + [
        f'{r["id"]},{r["question"]},{r["answers"][0]},{r["documents"][0]}' for r in rows]
    return "\r\n".join(lines).encode(encoding)


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-16-le", "gb18030"])
@pytest.mark.parametrize("kind", ["jsonl", "csv"])
def test_questions_in_other_encodings_load(two_docs, tmp_path, encoding, kind):
    path = tmp_path / f"q.{kind}"
    if kind == "jsonl":
        _write(path, GB_ROWS, encoding)
    else:
        path.write_bytes(_csv_bytes(GB_ROWS, encoding))
    got = load_benchmark(_cfg(two_docs, path))
    assert [(s.id, s.question, s.answers) for s in got.samples] == [
        ("zh", "总部在哪里？", ["杭州"]), ("en", "What is the launch code?", ["ALPHA-7"])]
    assert got.samples[0].language == "zh" and got.samples[0].metadata["source"].endswith(":1" if kind == "jsonl"
                                                                                         else ":2")


def test_a_questions_file_mixing_encodings_is_refused_naming_the_line(two_docs, tmp_path):
    rows = [GB_ROWS[1], {"id": "zh1", "question": "总部在哪里？", "answers": ["杭州"], "documents": ["zh.txt"]},
            {"id": "zh2", "question": "公司总部在哪里？", "answers": ["杭州"], "documents": ["zh.txt"]}]
    lines = [json.dumps(r, ensure_ascii=False) for r in rows]
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(lines[0].encode() + b"\n" + lines[1].encode("utf-8") + b"\n" + lines[2].encode("gb18030") + b"\n")
    with pytest.raises(ValueError, match=r"mixed.jsonl:3: not UTF-8, while line 2 is: the file mixes encodings"):
        load_benchmark(_cfg(two_docs, path))
    path.write_bytes(b"id,question,answers,documents\n" + "zh1,总部在哪里？,杭州,zh.txt\n".encode("gb18030")
                     + "zh2,公司总部在哪里？,杭州,zh.txt\n".encode())
    with pytest.raises(ValueError, match=r"mixed.jsonl:2: not UTF-8, while line 3 is"):
        load_benchmark(_cfg(two_docs, path))


def test_utf16_without_a_byte_order_mark_is_recognised():
    text = "Invoices are sent on the first Monday of each month."
    assert decode_bytes(text.encode("utf-16-le")) == text and decode_bytes(text.encode("utf-16-be")) == text


def test_a_quote_found_nowhere_is_counted_and_named(two_docs, tmp_path, caplog):
    rows = [{**GB_ROWS[1], "evidence": ["launch code for the spring release", "the moon is made of cheese"]}]
    with caplog.at_level(logging.WARNING):
        got = load_benchmark(_cfg(two_docs, _write(tmp_path / "q.jsonl", rows)))
    (sample,) = got.samples
    assert len(sample.evidence) == 1 and got.notes["evidence quotes not aligned"] == 1
    assert any("1 evidence quote(s) did not align" in r.getMessage() and "en: 'the moon is made of cheese'"
               in r.getMessage() for r in caplog.records)


def test_a_pdf_page_is_reflowed_wrapped_lines_joined_paragraphs_kept():
    from eval.corpus.parsers import reflow

    assert reflow("  The bridge was\nfinished in 1892.  \n \nIt carries\r\nforty cars.\n") == \
        "The bridge was finished in 1892.\n\nIt carries forty cars."
    assert reflow("\n\n") == ""
