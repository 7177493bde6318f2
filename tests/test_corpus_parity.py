"""Same figures through both doors (issue 24 item 7): LooGLE documents written out as files, with their
questions and evidence quotes, give through `benchmark=corpus` the evidence recall@n that `benchmark=loogle`
gives on the same items.

Four LooGLE documents (the first four of short-dependency QA, four questions each, in LooGLE's own file
format) run through the runner itself (`experiments.run.run`, retrieval only: BM25 over fixed 128-token
windows), once as LooGLE and once written by `eval.corpus.write` as one md, one html, one pdf and one docx
file without title headings. A heading ahead of the text moves every token window, and BM25's ranking
of a question's evidence moves with them (measured before the fix: 29 of 121 questions differed, recall@1
by up to 0.095 per type): with the title in metadata only, md, html and docx give every question the same
figures. A PDF cannot promise it: each wrapped line comes back with a line break, and each page break with
a blank line, where the text had a space (`eval.corpus.folder` reads what the PDF lays out), so the windows
drift and a question's figures move as they would under another chunking. Over all of LooGLE's documents
as PDFs (perf/corpus_parity.py) 34 of 114 questions differ and mean recall@1 by 0.062; these four
questions happen not to, so no figure of the PDF is asserted here (it would pass by luck): the test
checks what the difference comes from, the same words and evidence with layout whitespace only."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from eval.benchmarks import load_benchmark
from eval.corpus.write import main as write_corpus_main
from eval.corpus.write import write_samples
from experiments.records import RETRIEVED, read_records
from experiments.run import run
from tests.conftest import SHARED_DATA, compose

LOOGLE = SHARED_DATA / "loogle"
pytestmark = pytest.mark.skipif(not (LOOGLE / "shortdep_qa.jsonl").is_file(), reason="../shared/data/loogle absent")

TYPES = ("md", "html", "pdf", "docx")  # one document each, in this order (write_samples rotates the types)
QUESTIONS = 4  # per document
NS = ("1", "5", "10")
TOLERANCE = 0.02


def _subset(folder: Path) -> Path:
    """The first len(TYPES) documents of shortdep_qa.jsonl with their first QUESTIONS questions, in LooGLE's
    one-row-per-document format (`qa_pairs` as a list, which the loader reads as it reads the literal)."""
    folder.mkdir(parents=True)
    rows = []
    with open(LOOGLE / "shortdep_qa.jsonl", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            pairs = row["qa_pairs"]
            row["qa_pairs"] = (ast.literal_eval(pairs) if isinstance(pairs, str) else pairs)[:QUESTIONS]
            rows.append(row)
            if len(rows) == len(TYPES):
                break
    (folder / "shortdep_qa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder


def _recall(overrides: list[str], run_dir: Path, cache: Path) -> dict[str, dict[str, float]]:
    """Each sample's evidence recall@n, as the runner records it in a retrieval-only run."""
    run_dir.mkdir()
    run(compose([*overrides, "arm=rag", "retriever=bm25", "chunker=tokens", "generator=none", "rag.chunk_size=128",
                 "rag.chunk_overlap=16", "rag.recall_at=[1,5,10]", "run.progress=false",
                 f"run.cache_dir={cache}"]), run_dir)
    records = read_records(run_dir / "records.jsonl")
    assert {r["status"] for r in records.values()} == {RETRIEVED}
    return {i: r["evidence_recall"] for i, r in records.items()}


@pytest.fixture(scope="module")
def doors(tmp_path_factory):
    root = tmp_path_factory.mktemp("parity")
    cache = root / "cache"
    loogle = ["benchmark=loogle", f"benchmark.path={_subset(root / 'loogle')}", "benchmark.tasks=[shortdep_qa]"]
    samples = load_benchmark(OmegaConf.to_container(compose(loogle).benchmark, resolve=True)).samples
    written = write_samples(samples, root / "corpus", TYPES, headings=False)
    corpus = ["benchmark=corpus", f"benchmark.path={written.docs_dir}", f"benchmark.questions={written.questions_path}",
              f"benchmark.cache_dir={cache}"]
    kinds = {d.path: d.kind for d in written.documents}
    read = load_benchmark(OmegaConf.to_container(compose(corpus).benchmark, resolve=True)).samples
    return {"data": root / "loogle", "samples": samples, "read": read, "written": written,
            "kind": {q["id"]: kinds[q["documents"][0]] for q in written.questions},
            "loogle": _recall(loogle, root / "run-loogle", cache),
            "corpus": _recall(corpus, root / "run-corpus", cache)}


def _ids(doors, kind: str) -> list[str]:
    return [i for i, k in doors["kind"].items() if k == kind]


def _differences(doors, kind: str) -> list[str]:
    """`id recall@n: loogle -> corpus` for each figure of the type's questions that differs by more than TOLERANCE."""
    out = []
    for i in _ids(doors, kind):
        a, b = doors["loogle"][i], doors["corpus"][i]
        out += [f"{i} recall@{n}: {a[n]} -> {b[n]}" for n in NS if abs(a[n] - b[n]) > TOLERANCE]
    return out


def test_every_question_of_every_type_has_evidence_recall_through_both_doors(doors):
    assert [d.kind for d in doors["written"].documents] == list(TYPES)
    assert sorted(doors["loogle"]) == sorted(doors["corpus"]) == sorted(s.id for s in doors["samples"])
    assert len(doors["samples"]) == QUESTIONS * len(TYPES)
    for door in ("loogle", "corpus"):  # every question has gold evidence, so a recall figure at each n
        assert all(r is not None and set(r) == set(NS) for r in doors[door].values()), door
    assert all(len(_ids(doors, kind)) == QUESTIONS for kind in TYPES)
    original = {s.id: s for s in doors["samples"]}
    for s in doors["read"]:  # the same gold evidence: the same words (a quote that a PDF wraps aligns by its
        was = original[s.id]  # words, so its span may end before closing punctuation), each aligned exactly
        assert [re.findall(r"\w+", s.context[e.start:e.end]) for e in s.evidence] == \
            [re.findall(r"\w+", was.context[e.start:e.end]) for e in was.evidence], s.id
        assert all(e.quality == 1.0 for e in s.evidence), s.id


@pytest.mark.parametrize("kind", ["md", "html", "docx"])
def test_each_question_has_the_same_recall_through_both_doors(doors, kind):
    assert _differences(doors, kind) == []
    ids = _ids(doors, kind)
    for n in NS:  # so the per-type means agree too
        mean = {door: sum(doors[door][i][n] for i in ids) / len(ids) for door in ("loogle", "corpus")}
        assert abs(mean["loogle"] - mean["corpus"]) <= TOLERANCE, (n, mean)


def test_a_pdf_comes_back_as_the_same_words_reflowed_and_within_the_tolerance(doors):
    """A PDF's reader puts a line break at each wrapped line; `eval.corpus.parsers.reflow` joins them again (before
    it, recall@1 over all of LooGLE's documents written as PDFs was 0.062 off; after, 0.011)."""
    pdf = next(s for s in doors["read"] if s.metadata["documents"][0].endswith(".pdf"))
    original = next(s for s in doors["samples"] if s.id == pdf.id).context
    assert re.findall(r"\S+", pdf.context) == re.findall(r"\S+", original)
    assert "\n" not in pdf.context.replace("\n\n", "")  # no wrapped line left: only paragraph breaks
    ids = _ids(doors, "pdf")
    for n in NS:
        mean = {door: sum(doors[door][i][n] for i in ids) / len(ids) for door in ("loogle", "corpus")}
        assert abs(mean["loogle"] - mean["corpus"]) <= TOLERANCE, (n, mean)


def test_the_command_line_can_leave_titles_off_the_text(doors, tmp_path):
    assert write_corpus_main(["--benchmark", "loogle", f"path={doors['data']}", "tasks=[shortdep_qa]", "--types", "md",
                              "--limit", "1", "--no-headings", "--out", str(tmp_path)]) == 0
    (md,) = (tmp_path / "docs").iterdir()
    assert md.read_text(encoding="utf-8") == doors["samples"][0].context + "\n"
