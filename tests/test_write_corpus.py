"""eval.corpus.write: samples written out as files of every type come back through eval.corpus.folder and
benchmark=corpus with the same questions, answers and evidence; the bytes are the same on every write."""

from __future__ import annotations

import json

import pytest

from eval.benchmarks import load_benchmark
from eval.corpus.write import TYPES, load_samples, main, read_back, write_samples
from eval.sample import Document, PromptTemplate, Sample, Span

# Five English haystacks of ~1k approximate tokens, two questions each (one two-hop): one document per type.
OPTIONS = ["languages=[en]", "levels=[1k]", "haystacks_per_level=5", "questions_per_haystack=2", "two_hop_share=0.5"]


@pytest.fixture(scope="module")
def samples():
    return load_samples("synthetic", OPTIONS)


@pytest.fixture(scope="module")
def written(samples, tmp_path_factory):
    return write_samples(samples, tmp_path_factory.mktemp("written"), TYPES)


def _words(text: str) -> str:
    return " ".join(text.split())


def test_each_document_is_written_once_in_rotating_types_with_its_questions(samples, written):
    assert [d.kind for d in written.documents] == list(TYPES)
    assert sorted(p.suffix for p in written.docs_dir.iterdir()) == sorted(f".{t}" for t in TYPES)
    rows = [json.loads(line) for line in written.questions_path.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == len(samples) == 10 and not written.left_out
    by_id = {s.id: s for s in samples}
    for row in rows:
        s = by_id[row["id"]]
        assert (row["question"], row["answers"], row["task"]) == (s.question, s.answers, s.task)
        assert row["evidence"] == [s.context[e.start:e.end] for e in s.evidence]  # verbatim quotes
        assert len(row["documents"]) == 1 and (written.docs_dir / row["documents"][0]).is_file()
    assert {r["task"] for r in rows} == {"single_hop", "two_hop"}


def test_every_file_reads_back_unchanged_and_every_quote_aligns(written):
    check = read_back(written)
    assert check.unchanged == check.documents == 5 and check.changed == []
    assert check.quotes == 15 and check.exact == 15 and check.fuzzy == check.not_aligned == 0
    assert {k: c["exact"] for k, c in check.by_type.items()} == {t: 3 for t in TYPES}


def test_through_benchmark_corpus_the_evidence_is_the_same_text(samples, written):
    loaded = load_benchmark({"name": "corpus", "path": str(written.docs_dir), "questions": str(written.questions_path)})
    by_id = {s.id: s for s in samples}
    for s in loaded.samples:
        original = by_id[s.id]
        assert s.answers == original.answers and s.metric == "contains_tokens"
        got = [_words(s.context[e.start:e.end]) for e in s.evidence]
        assert got == [_words(original.context[e.start:e.end]) for e in original.evidence]
        assert all(e.quality == 1.0 for e in s.evidence)
    pdf = next(s for s in loaded.samples if s.metadata["documents"][0].endswith(".pdf"))
    assert pdf.metadata["evidence_pages"] and all(" p" in p for p in pdf.metadata["evidence_pages"])


def test_a_second_write_gives_the_same_bytes(samples, written, tmp_path):
    again = write_samples(samples, tmp_path, TYPES)
    for d in written.documents:
        assert (again.docs_dir / d.path).read_bytes() == (written.docs_dir / d.path).read_bytes(), d.path
    assert again.questions_path.read_bytes() == written.questions_path.read_bytes()


def test_a_document_the_pdf_font_cannot_show_is_written_as_another_type_and_named(tmp_path):
    zh = load_samples("synthetic", ["languages=[zh]", "levels=[1k]", "haystacks_per_level=1",
                                    "questions_per_haystack=2"])
    with pytest.raises(ValueError, match=r"1-synthetic-zh-1k-h0-s0.pdf: the PDF font DejaVuSans.ttf has no glyph .*"
                                         r"--pdf-font"):
        write_samples(zh, tmp_path / "pdf", ["pdf"])  # no other type to fall back on
    out = write_samples(zh, tmp_path / "mixed", ["pdf", "docx"])
    assert [d.path for d in out.documents] == ["1-synthetic-zh-1k-h0-s0.docx"]
    assert len(out.retyped) == 1 and out.retyped[0].startswith("1-synthetic-zh-1k-h0-s0.docx (no glyph for ")
    for kind in ("txt", "md", "html", "docx"):  # Chinese text comes back whole in every other type
        check = read_back(write_samples(zh, tmp_path / kind, [kind]))
        assert check.unchanged == 1 and check.exact == check.quotes == 2, kind


def _sample(sid: str, question: str, answers: list[str], docs: list[tuple[str, str]], evidence: list[str]) -> Sample:
    """A sample over several documents, each under a header line, as a multi-document benchmark makes them."""
    context, spans, at = "", [], 0
    for doc_id, text in docs:
        body = f"<<{doc_id}>>\n{text}"
        spans.append(Document(doc_id, at, at + len(body), title=doc_id.title(), header=f"<<{doc_id}>>\n"))
        context += body + "\n\n"
        at = len(context)
    found = [Span(context.index(q), context.index(q) + len(q)) for q in evidence]
    return Sample(sid, "handmade", "qa", "en", "0-8k", context, question, answers, PromptTemplate("{context}"),
                  "contains_all", evidence=found + [Span(doc_id=docs[0][0])], documents=spans)


def test_shared_documents_are_written_once_and_unusable_samples_are_counted(tmp_path):
    alpha, beta = ("alpha", "The harbour opened in 1821.\nIts pier is 40 m long."), ("beta", "Tea is served at noon.")
    samples = [_sample("a", "When did the harbour open?", ["1821"], [alpha, beta], ["The harbour opened in 1821."]),
               _sample("b", "When is tea served?", ["noon"], [beta], ["Tea is served at noon."]),
               _sample("c", "", ["x"], [alpha], []),  # no question: a summary task, say
               _sample("d", "Anything?", [], [alpha], [])]  # no reference answer
    out = write_samples(samples, tmp_path, ["md", "docx"])
    assert [(d.path, d.kind) for d in out.documents] == [("1-alpha.md", "md"), ("2-beta.docx", "docx")]
    assert (out.docs_dir / "1-alpha.md").read_text(encoding="utf-8").startswith("# Alpha\n\nThe harbour opened")
    assert [q["documents"] for q in out.questions] == [["1-alpha.md", "2-beta.docx"], ["2-beta.docx"]]
    assert out.left_out == {"samples without a question or a reference answer": 2,
                            "document-level evidence (a question's documents are its whole context)": 2}
    check = read_back(out)
    assert check.unchanged == 2 and check.exact == check.quotes == 2


def test_bad_arguments_are_named(samples, written, tmp_path, capsys):
    with pytest.raises(ValueError, match=r"unknown \['rtf'\]; allowed: md,html,pdf,docx,txt"):
        write_samples(samples, tmp_path / "x", ["md", "rtf"])
    with pytest.raises(FileExistsError, match=r"docs is not empty: .*--overwrite"):
        write_samples(samples, written.out, TYPES)
    assert main(["--benchmark", "synthetic", "levels", "--out", str(tmp_path / "y")]) == 2
    assert "benchmark option 'levels': expected KEY=VALUE" in capsys.readouterr().err


def test_the_command_line_writes_and_reports_what_came_back(tmp_path, capsys):
    code = main(["--benchmark", "synthetic", *OPTIONS[:2], "--limit", "2", "--types", "pdf", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0
    assert "wrote 1 documents (1 pdf)" in out and "and 2 questions" in out
    assert "read back: 1/1 documents unchanged up to whitespace" in out
    assert "not at all 0" in out
