"""Issue 15, items 3 to 6: what the RAG arm's numbers mean.

- Embedders cut long chunks to their input limit: counted (in the embedder's tokens), warned about,
  recorded in metrics.json and named in the report.
- Chunks of a multi-document context carry their document's title, as long context shows it.
- Document-level evidence (Loong) is reported as `doc_recall`, never as span-level `evidence_recall`.
- A benchmark's own aggregate (LV-Eval overall, LooGLE cloze micro) is reported beside the sample mean.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from eval.sample import Document, PromptTemplate, Sample, Span
from experiments.report.page.build import build_report
from experiments.report.settings import load_settings
from experiments.run_metrics import aggregate
from experiments.simulate.sweeps import write_run
from rag.arm import RagArm, RagConfig
from rag.retrievers import BM25Retriever
from tests.conftest import ROOT, SHARED_DATA, compose

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
LOOGLE = SHARED_DATA / "loogle"
LOONG = SHARED_DATA / "loong"

FILLER = {
    "Alpha Mining": "The quarterly report lists ore output, tailings and freight costs for the northern pits. ",
    "Beta Shipping": "The fleet review covers vessel charters, port fees and bunker fuel hedging contracts. ",
}


def _two_documents() -> tuple[str, list[Document]]:
    pieces, docs, offset = [], [], 0
    for i, (title, sentence) in enumerate(FILLER.items()):
        body = sentence * 30 + (f"Net profit of the year was {17 + i} million yuan. " if i == 1 else "") + sentence * 30
        text = f"《{title}》\n" + body + "\n\n"
        docs.append(Document(f"d{i}", offset, offset + len(text) - 2, title=title, header=f"《{title}》\n"))
        pieces.append(text)
        offset += len(text)
    return "".join(pieces), docs


def _sample(context: str, docs: list[Document], evidence: list[Span]) -> Sample:
    tpl = PromptTemplate("Documents:\n{context}\n\nQuestion: {question}\nAnswer:", max_new_tokens=16)
    return Sample(id="s0", benchmark="loong", task="spotlight_locating", language="en", length_level="10k-50k",
                  context=context, question="Which company had a net profit of 18 million yuan?",
                  answers=["Beta Shipping"],
                  template=tpl, metric="contains_all", group="g0", documents=docs, evidence=evidence)


def _arm(generator, **cfg) -> RagArm:
    return RagArm(generator, BM25Retriever(), RagConfig(chunk_size=48, chunk_overlap=0, top_k=3, **cfg))


# ------------------------------------------------------------------ titles on chunks (item 4)
def _context_of(prompt) -> str:
    return prompt.user.split("Documents:\n", 1)[1].split("\n\nQuestion:")[0]


def test_chunks_of_a_multi_document_context_carry_their_document_title(generator):
    context, docs = _two_documents()
    sample = _sample(context, docs, [Span(doc_id="d1")])
    prompt = _arm(generator).build(sample)
    picked = prompt.meta["retrieved"]
    assert any(r["start"] > docs[int(r["doc_id"][1])].start for r in picked), "the test needs a mid-document chunk"
    pieces = _context_of(prompt).split("\n\n")
    assert len(pieces) == len(picked)
    for r, piece in zip(sorted(picked, key=lambda r: r["start"]), pieces, strict=True):  # document order
        doc = docs[int(r["doc_id"][1])]
        assert piece.startswith(doc.header)
        assert piece == (doc.header if r["start"] > doc.start else "") + context[r["start"]:r["end"]]
    # off: the chunks alone; the header's tokens are counted in the context the prompt holds
    bare = _arm(generator, doc_titles=False).build(sample)
    assert ([c.startswith("《") for c in _context_of(bare).split("\n\n")]
            == [r["start"] == docs[int(r["doc_id"][1])].start for r in sorted(picked, key=lambda r: r["start"])])
    assert prompt.meta["context_tokens"] > bare.meta["context_tokens"]
    assert abs(prompt.meta["context_tokens"] - generator.tokenizer.count(_context_of(prompt))) <= len(picked)


def test_titles_stay_off_for_a_single_document_unless_asked(generator):
    context, docs = _two_documents()
    one = [Document("d0", 0, len(context), title="Annual report")]
    sample = _sample(context, one, [])
    assert "Annual report" not in _arm(generator).build(sample).user
    assert "Annual report\n" in _arm(generator, doc_titles=True).build(sample).user
    with pytest.raises(ValueError, match="rag.doc_titles"):
        RagConfig(doc_titles="sometimes")


def test_config_hash_changes_only_where_titles_change_the_prompt():
    from experiments.run import config_hash

    def h(*extra):
        return config_hash(compose(["arm=rag", "retriever=bm25", *extra]))

    assert h("benchmark=loong", "rag.doc_titles=auto") != h("benchmark=loong", "rag.doc_titles=false")
    assert h("benchmark=synthetic", "rag.doc_titles=auto") == h("benchmark=synthetic", "rag.doc_titles=false")


@pytest.mark.skipif(not LOONG.exists(), reason="../shared/data/loong absent")
def test_loong_documents_record_the_header_long_context_shows():
    from eval.benchmarks import load_benchmark

    samples = load_benchmark({"name": "loong", "path": str(LOONG), "limit": 3}).samples
    assert samples
    for s in samples:
        assert len(s.documents) > 1
        for d in s.documents:
            assert d.header and s.context[d.start:d.start + len(d.header)] == d.header
            assert d.title in d.header


# ------------------------------------------------------------------ document-level evidence (item 5)
def test_document_evidence_is_doc_recall_and_span_evidence_is_evidence_recall(generator):
    context, docs = _two_documents()
    at = context.index("Net profit")
    doc_level = _arm(generator).retrieve(_sample(context, docs, [Span(doc_id="d1")]))
    assert doc_level["evidence_recall"] is None and doc_level["evidence_in_prompt"] is None
    assert doc_level["doc_recall"]["10"] == 1.0 and doc_level["docs_in_prompt"] is not None
    span_level = _arm(generator).retrieve(_sample(context, docs, [Span(at, at + 40, "d1")]))
    assert span_level["doc_recall"] is None and span_level["evidence_recall"]["10"] == 1.0
    metrics = aggregate([{**doc_level, "status": "retrieved", "length_level": "10k-50k", "task": "t",
                          "language": "en"}])
    assert metrics["doc_recall"] == {"1": doc_level["doc_recall"]["1"], "3": doc_level["doc_recall"]["3"],
                                     "5": 1.0, "10": 1.0}
    assert metrics["evidence_recall"] == {}


def _retrieval_sweep(tmp: Path, tiny_llm: Path, *args: str) -> subprocess.CompletedProcess:
    """A retrieval-only sweep; SmolLM2's tokenizer from the tiny Llama's folder (the same tokenizer, no GGUF)."""
    return subprocess.run([sys.executable, "-m", "experiments.run", "-m", "arm=rag", "generator=none",
                           f"generator.tokenizer={tiny_llm}", *args,
                           f"hydra.sweep.dir={tmp / 'sweep'}", f"run.cache_dir={tmp / 'cache'}", "run.progress=false"],
                          cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=600)


@pytest.mark.skipif(not LOONG.exists(), reason="../shared/data/loong absent")
def test_loong_report_names_document_recall(tmp_path, tiny_llm):
    res = _retrieval_sweep(tmp_path, tiny_llm, "benchmark=loong", f"benchmark.path={LOONG}", "benchmark.limit=3",
                           "retriever=bm25", "rag.chunk_size=512")
    assert res.returncode == 0, res.stderr[-3000:]
    files = build_report([str(tmp_path / "sweep")], tmp_path / "report", load_settings())
    rows = list(csv.DictReader(files["configs.csv"].open()))
    assert rows and all(r["doc_recall@10"] not in ("", None) for r in rows)
    assert all(not r.get("recall@10") for r in rows)  # no span-level figure claimed
    md = files["report.md"].read_text()
    assert "doc recall@10" in md and "docs in prompt" in md


# ------------------------------------------------------------------ embedder input limit (item 3)
@pytest.mark.integration  # end to end, 20-40 s: the fast tier stays under 10 minutes on 2 cores
@pytest.mark.skipif(not LOOGLE.exists(), reason="../shared/data/loogle absent")
def test_minilm_truncation_is_counted_warned_and_reported(tmp_path, minilm, tiny_llm):
    res = _retrieval_sweep(tmp_path, tiny_llm, "benchmark=loogle", f"benchmark.path={LOOGLE}",
                           "benchmark.tasks=[shortdep_qa]", "benchmark.limit=4", "retriever=minilm",
                           "rag.chunk_size=64,512")
    assert res.returncode == 0, res.stderr[-3000:]
    by_size, folders = {}, {}
    for path in (tmp_path / "sweep").rglob("metrics.json"):
        m = json.loads(path.read_text())
        by_size[m["knobs"]["chunk_size"]] = m["embedder_truncation"]
        folders[m["knobs"]["chunk_size"]] = path.parent.name
    small, large = by_size[64], by_size[512]
    assert small["max_input_tokens"] == large["max_input_tokens"] == 256
    assert small["truncated"] == 0 and small["chunks"] > 0
    assert large["share"] > 0.5 and large["truncated"] <= large["chunks"]
    out = res.stdout + res.stderr
    assert out.count("to its 256-token input limit") == 1  # one warning, from the 512 run only
    [line] = [x for x in out.splitlines() if "would cut" in x]  # said at the start of that run, naming it
    assert "rag minilm c512" in line and "all-MiniLM-L6-v2" in line
    # the run's last line names its folder (whose name, capped at 160 characters, may not reach rag.chunk_size)
    [scored] = [x for x in out.splitlines() if "score " in x and x.endswith(folders[512])]
    assert out.index(line) < out.index(scored)
    files = build_report([str(tmp_path / "sweep")], tmp_path / "report", load_settings())
    rows = {r["config"]: r for r in csv.DictReader(files["configs.csv"].open())}
    assert {float(r["embedder_truncated_share"] or 0) > 0 for r in rows.values()} == {True, False}
    assert "Embedder input limit" in files["report.md"].read_text()


def test_count_truncated_uses_the_embedders_own_tokens(minilm):
    tok = minilm.model.tokenizer
    short, long = "word " * 50, "word " * 400
    assert len(tok(long)["input_ids"]) > minilm.max_input_tokens >= len(tok(short)["input_ids"])
    assert minilm.count_truncated([short, long, long]) == 2


# ------------------------------------------------------------------ official aggregates (item 6)
def _rec(i: int, task: str, level: str, score: float, **scores) -> dict:
    return {"id": f"s{i}", "benchmark": "", "task": task, "length_level": level, "language": "en", "group": f"g{i}",
            "status": "ok", "score": score, "scores": {"score": score, **scores}, "arm": "longctx", "prediction": "x",
            "answers": ["x"], "prompt_tokens": 10, "completion_tokens": 1, "latency_s": 0.1}


def test_lveval_overall_is_the_unweighted_mean_over_datasets(tmp_path):
    recs = [_rec(i, "cmrc_mixup", "16k", 1.0) for i in range(9)] + [_rec(9, "factrecall_en", "16k", 0.0)]
    for r in recs:
        r["benchmark"] = "lveval"
    metrics = aggregate(recs)
    assert metrics["score"] == 90.0
    assert metrics["official"]["value"] == 50.0 and "unweighted" in metrics["official"]["rule"]
    write_run(tmp_path / "sweep" / "0", {"arm": "longctx", "benchmark": "lveval", "generator": "m"}, recs)
    files = build_report([str(tmp_path / "sweep")], tmp_path / "report", load_settings())
    row = next(csv.DictReader(files["configs.csv"].open()))
    assert float(row["score"]) == 90.0 and float(row["official"]) == 50.0
    assert "LV-Eval overall" in files["report.md"].read_text()


def test_loogle_cloze_is_micro_averaged_over_masks():
    recs = [_rec(0, "shortdep_cloze", "8k", 1.0, exact_match=1.0, partial_match=1.0, masks=5.0),
            _rec(1, "shortdep_cloze", "8k", 0.0, exact_match=0.0, partial_match=0.0, masks=1.0)]
    for r in recs:
        r["benchmark"] = "loogle"
    metrics = aggregate(recs)
    assert metrics["score"] == 50.0
    assert metrics["official"]["value"] == 83.33
    qa = [{**_rec(2, "shortdep_qa", "8k", 0.4), "benchmark": "loogle"}]
    assert aggregate(qa)["official"] is None  # QA is a mean over questions: the sample mean is LooGLE's figure
    mixed = aggregate(recs + qa)["official"]
    assert mixed["value"] is None and mixed["parts"] == {"shortdep_cloze": 83.33, "shortdep_qa": 40.0}
