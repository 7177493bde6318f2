"""benchmark=corpus: a team's own folder (txt, md, html, pdf, docx, BEIR corpus.jsonl) and questions, parsed by
the real parsers, evidence quotes aligned to char spans, and a retrieval run through experiments.run."""

from __future__ import annotations

import json
import logging

import pytest

from eval.benchmarks import load_benchmark
from eval.corpus.folder import read_folder
from tests.pdf_files import write_pdf

WARRANTY = "The warranty lasts 24 months from the date of delivery."
LAUNCH = "The launch code for the spring release is ALPHA-7."


def _docx(path):
    import docx

    d = docx.Document()
    d.core_properties.title = "Support memo"
    d.add_paragraph("Support hours are nine to five on weekdays.")
    table = d.add_table(rows=1, cols=2)
    table.rows[0].cells[0].text = "Hotline"
    table.rows[0].cells[1].text = "555-0100"
    d.save(str(path))


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    (root / "a.txt").write_text("Release notes.\n" + LAUNCH + "\nOther text follows here.", encoding="utf-8")
    (root / "b.md").write_bytes("# Billing\nInvoices are sent on the first Monday of each month.".encode("utf-16"))
    (root / "zh.txt").write_bytes("公司总部位于杭州。年度会议在十月举行。".encode("gb18030"))
    (root / "page.html").write_text("<html><head><title>FAQ</title><script>var x = 'hidden';</script></head>"
                                    "<body><h1>FAQ</h1><p>Returns are accepted within 30 days.</p></body></html>",
                                    encoding="utf-8")
    write_pdf(root / "report.pdf", ["Annual report. Revenue grew in every region.", WARRANTY + " Service is free.", ""])
    _docx(root / "memo.docx")
    (root / "sub").mkdir()
    (root / "sub" / "corpus.jsonl").write_text(
        json.dumps({"_id": "kb-1", "title": "Shipping", "text": "Orders ship within two business days."}) + "\n"
        + json.dumps({"_id": "kb-2", "title": "Privacy", "text": "We never sell customer data."}) + "\n",
        encoding="utf-8")
    (root / ".hidden.txt").write_text("not a document", encoding="utf-8")
    (root / "broken.pdf").write_bytes(b"%PDF-1.4 this is not a pdf at all")
    (root / "notes.xyz").write_text("unknown kind", encoding="utf-8")
    (root / "empty.txt").write_text("   \n", encoding="utf-8")
    return root


def _questions(root, rows, name="questions.jsonl"):
    path = root.parent / f"{root.name}-{name}"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


QUESTIONS = [
    {"id": "launch", "question": "What is the launch code?", "answers": ["ALPHA-7"], "documents": ["a.txt"],
     "evidence": ["launch code for the spring release is ALPHA-7"], "task": "lookup"},
    {"id": "warranty", "question": "How long is the warranty?", "answers": "24 months", "documents": ["report.pdf"],
     "evidence": ["The warranty lasts 24 months from the date of delivery"]},
    {"id": "fuzzy", "question": "When are invoices sent?", "answers": ["first Monday"], "documents": ["b.md"],
     "evidence": ["Invoices are sent on the first Monday of every month"]},  # "every" vs the document's "each"
    {"id": "lost", "question": "Who signs?", "answers": ["the CFO"], "documents": ["b.md"],
     "evidence": ["The chief financial officer signs every invoice personally"]},  # not in the document
    {"question": "总部在哪里？", "answers": ["杭州"], "documents": ["zh.txt"], "evidence": ["公司总部位于杭州"]},
    {"id": "two", "question": "How fast do orders ship, and where is the hotline?", "answers": ["two business days"],
     "documents": ["kb-1", "memo.docx"], "evidence": ["Orders ship within two business days", "555-0100"]},
]


def test_every_kind_of_file_is_parsed_and_bad_ones_are_named(folder):
    docs, bad = read_folder(folder)
    by = {d.doc_id: d for d in docs}
    assert set(by) == {"a.txt", "b.md", "zh.txt", "page.html", "report.pdf", "memo.docx", "kb-1", "kb-2"}
    assert by["b.md"].text.startswith("# Billing")  # UTF-16 with its byte order mark
    assert by["zh.txt"].text == "公司总部位于杭州。年度会议在十月举行。"  # GB18030, detected
    assert "Returns are accepted" in by["page.html"].text and "hidden" not in by["page.html"].text
    assert by["page.html"].title == "FAQ"
    assert "555-0100" in by["memo.docx"].text and by["memo.docx"].title == "Support memo"
    assert by["kb-1"].text == "Shipping\nOrders ship within two business days."
    pdf = by["report.pdf"]
    assert len(pdf.page_starts) == 3 and pdf.page_of(pdf.text.index("warranty")) == 2
    assert pdf.page_of(0) == 1
    assert any("almost no text" in w and "pages 3" in w for w in pdf.warnings)
    reasons = {b.path: b.reason for b in bad}
    assert set(reasons) == {"broken.pdf", "notes.xyz", "empty.txt"}
    assert "unreadable PDF" in reasons["broken.pdf"] and "unknown extension '.xyz'" in reasons["notes.xyz"]
    assert "no text" in reasons["empty.txt"]


def test_a_bad_file_stops_the_load_unless_skip_bad_and_then_it_is_counted(folder, caplog):
    questions = _questions(folder, QUESTIONS)
    cfg = {"name": "corpus", "path": str(folder), "questions": str(questions)}
    with pytest.raises(ValueError, match=r"3 file\(s\) could not be read: broken.pdf: unreadable PDF.*skip_bad=true"):
        load_benchmark(cfg)
    with caplog.at_level(logging.WARNING):
        result = load_benchmark({**cfg, "skip_bad": True})
    assert result.skipped["unreadable files"] == 3
    assert any("left out 3 file(s)" in r.getMessage() and "notes.xyz" in r.getMessage() for r in caplog.records)
    assert result.notes["unreadable files"] == ["broken.pdf", "empty.txt", "notes.xyz"]


@pytest.fixture(scope="module")
def loaded(folder):
    questions = _questions(folder, QUESTIONS)
    return load_benchmark({"name": "corpus", "path": str(folder), "questions": str(questions), "skip_bad": True})


def test_questions_become_samples_with_evidence_as_char_spans(loaded):
    by = {s.id: s for s in loaded.samples}
    launch = by["launch"]
    assert launch.context.startswith("Release notes.") and launch.task == "lookup"
    assert launch.metric == "contains_tokens"
    (span,) = launch.evidence
    assert launch.context[span.start:span.end] == "launch code for the spring release is ALPHA-7"
    assert span.doc_id == "a.txt" and span.quality == 1.0
    warranty = by["warranty"]
    assert warranty.answers == ["24 months"] and warranty.task == "qa"
    assert warranty.metadata["evidence_pages"] == ["report.pdf p2"]
    fuzzy = by["fuzzy"].evidence[0]
    assert 0.8 <= fuzzy.quality < 1.0 and "first Monday" in by["fuzzy"].context[fuzzy.start:fuzzy.end]
    assert by["lost"].evidence == [] and loaded.notes["evidence quotes not aligned"] == 1
    zh = next(s for s in loaded.samples if s.question == "总部在哪里？")
    assert zh.language == "zh" and zh.id.startswith("q") and zh.template.text.startswith("请根据")
    two = by["two"]  # two documents in one context, each under its name, each quote in its own document
    assert [d.doc_id for d in two.documents] == ["kb-1", "memo.docx"]
    assert two.context.startswith("[kb-1]\nShipping\n") and "[memo.docx]\n" in two.context
    assert [s.doc_id for s in two.evidence] == ["kb-1", "memo.docx"]
    assert by["launch"].group != by["warranty"].group


def test_a_csv_gives_the_same_samples_as_the_jsonl(folder, loaded):
    path = folder.parent / f"{folder.name}-questions.csv"
    lines = ["id,question,answers,documents,evidence,task"]
    for q in QUESTIONS[:2]:
        answers = json.dumps(q["answers"]) if isinstance(q["answers"], list) else q["answers"]
        lines.append(",".join('"' + str(v).replace('"', '""') + '"' for v in
                              (q["id"], q["question"], answers, json.dumps(q["documents"]), json.dumps(q["evidence"]),
                               q.get("task", ""))))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    got = load_benchmark({"name": "corpus", "path": str(folder), "questions": str(path), "skip_bad": True})
    want = {s.id: s for s in loaded.samples}
    for s in got.samples:
        assert (s.answers, s.evidence, s.task, s.context) == (want[s.id].answers, want[s.id].evidence,
                                                              want[s.id].task, want[s.id].context)


def test_corpus_mode_puts_the_whole_folder_in_every_context(folder):
    rows = [{"id": "w", "question": "How long is the warranty?", "answers": ["24 months"],
             "evidence": ["The warranty lasts 24 months"]},
            {"id": "d", "question": "Do you sell data?", "answers": ["never"], "documents": ["kb-2"]}]
    got = load_benchmark({"name": "corpus", "path": str(folder), "questions": str(_questions(folder, rows, "c.jsonl")),
                          "skip_bad": True, "context": "corpus"})
    w, d = got.samples
    assert w.context is d.context and len(w.documents) == 8
    assert w.group == "report.pdf"  # the bootstrap resamples the document the evidence lies in
    assert d.evidence[0].doc_id == "kb-2" and d.evidence[0].start is None  # document-level gold evidence


@pytest.mark.parametrize("row, field, message", [
    ({"question": "Q?", "answers": ["x"], "documents": ["nope.txt"]}, "documents", "not among the 1 documents"),
    ({"question": "Q?", "answers": ["x"]}, "documents", "benchmark.context=corpus"),  # context=documents asked
    ({"id": "launch", "question": "Q?", "answers": ["x"], "documents": ["a.txt"]}, "id", "duplicate id 'launch'"),
    ({"answers": ["x"], "documents": ["a.txt"]}, "question", "missing"),
    ({"question": "Q?", "answers": {"a": 1}, "documents": ["a.txt"]}, "answers", "text or a list of text"),
])
def test_a_bad_question_names_its_file_line_and_field(tmp_path, row, field, message):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.txt").write_text(LAUNCH, encoding="utf-8")
    path = _questions(root, [QUESTIONS[0], row], "bad.jsonl")
    cfg = {"name": "corpus", "path": str(root), "questions": str(path), "context": "documents"}
    with pytest.raises(ValueError, match=rf"bad.jsonl:2: field '{field}': .*{message}"):
        load_benchmark(cfg)
    kept = load_benchmark({**cfg, "skip_bad": True})  # skip_bad leaves the bad question out, counted
    assert [s.id for s in kept.samples] == ["launch"] and kept.skipped["bad records"] == 1


def test_a_retrieval_run_on_the_corpus_records_evidence_recall(folder, tmp_path):
    from experiments.records import read_records
    from experiments.run import run
    from tests.conftest import compose

    questions = _questions(folder, QUESTIONS[:2] + QUESTIONS[5:], "run.jsonl")
    overrides = ["benchmark=corpus", f"benchmark.path={folder}", f"benchmark.questions={questions}",
                 "benchmark.skip_bad=true", "arm=rag", "generator=none", "rag.chunk_size=16", "rag.chunk_overlap=4",
                 "rag.top_k=2", "run.progress=false", f"run.cache_dir={tmp_path / 'cache'}",
                 f"benchmark.cache_dir={tmp_path / 'cache'}"]
    result = run(compose(overrides), tmp_path)
    records = read_records(tmp_path / "records.jsonl")
    assert set(records) == {"launch", "warranty", "two"} and result["n"] == 3
    assert all(r["status"] == "retrieved" for r in records.values())
    assert records["launch"]["evidence_recall"]["1"] == 1.0  # one short document: the chunk with the code
    assert (tmp_path / "cache" / "parsed_documents.sqlite").is_file()


def test_the_review_csv_approve_column_keeps_or_leaves_out_each_question(folder, loaded):
    path = folder.parent / f"{folder.name}-reviewed.csv"
    rows = ["id,approve,question,answers,documents,evidence"]
    for q, verdict in zip(QUESTIONS[:3], ("yes", "no", ""), strict=True):
        rows.append(",".join('"' + str(v).replace('"', '""') + '"' for v in
                             (q["id"], verdict, q["question"], json.dumps(q["answers"]), json.dumps(q["documents"]),
                              json.dumps(q["evidence"]))))
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    got = load_benchmark({"name": "corpus", "path": str(folder), "questions": str(path), "skip_bad": True})
    assert [s.id for s in got.samples] == [QUESTIONS[0]["id"], QUESTIONS[2]["id"]]
    assert got.skipped.get("questions not approved in review") == 1
    from eval.corpus.questions import approved
    from eval.data_files import DataError, Row

    assert approved(Row({"approve": "Y"}, "r.csv", 3)) and not approved(Row({"approve": " No "}, "r.csv", 3))
    assert approved(Row({}, "q.jsonl", 1)) and not approved(Row({"approve": False}, "q.jsonl", 1))
    with pytest.raises(DataError, match=r"r\.csv:4: field 'approve': 'maybe' is neither yes"):
        approved(Row({"approve": "maybe"}, "r.csv", 4))


def test_a_question_with_evidence_carries_its_lexical_overlap(loaded):
    from eval.lexical_overlap import lexical_overlap

    by = {s.id: s for s in loaded.samples}
    launch = by["launch"]
    quote = launch.context[launch.evidence[0].start:launch.evidence[0].end]
    assert launch.metadata["lexical_overlap"] == lexical_overlap(launch.question, [quote], "en")
    assert 0.0 < launch.metadata["lexical_overlap"] <= 1.0
