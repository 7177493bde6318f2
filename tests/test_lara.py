"""LaRA (benchmark=lara): the loader on a small clone written here in the repository's own layout, the
judge and judge-free metrics, eval.describe, and the LaRA RAG preset through the real runner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.benchmarks import load_benchmark
from eval.benchmarks.lara import lara_index, parse_query_file_name, sample_id
from eval.data_files import DataError
from eval.metrics import NoJudgment, score
from eval.metrics.judge import Judge
from eval.metrics.lara import is_refusal, lara_reference, lara_table, parse_lara_verdict
from tests.conftest import compose, groups_are_consecutive

# The released templates (Alibaba-NLP/LaRA evaluation/prompt.py), copied here to check the loader's.
RELEASED_FULL = {
    "paper": "Read the papers below and answer a question \n\n{context}\n\nQuestion: {question}\n\n Be concise.",
    "book": "Read the book below and answer a question.\n\n{context}\n\nQuestion: {question}\n\nBe concise.",
}
RELEASED_RAG = {
    "paper": ("Here are some chunks retrieved from some papers. Read these chunks to answer a question.\n\n"
              "{context}\n\nQuestion: {question}\n\n Be concise."),
    "book": ("Here are some chunks retrieved from a book. Read these chunks to answer a question.\n\n"
             "{context}\n\nQuestion: {question}\n\nBe concise."),
}
BOOK = "The Miller’s Tale, Part One.txt"  # spaces, a comma and a curly apostrophe, as the release's names


def _words(topic: str, n: int) -> str:
    """Plain sentences about `topic`, `n` of them, in paragraphs."""
    out = []
    for i in range(n):
        out.append(f"The {topic} record number {i} notes that the river mill of {topic} turned {i % 7} wheels.")
        if i % 6 == 5:
            out.append("\n\n")
    return " ".join(out)


def _book_text(seed: str) -> str:
    return (_words(f"{seed} harvest", 60) + "\n\nAt the fair Gordon sold a silver lantern to Miss Winslow for nine "
            "shillings.\n\n" + _words(f"{seed} winter", 60))


def _paper_text(n_papers: int) -> str:
    parts = []
    for k in range(n_papers):
        body = _words(f"model{k} benchmark", 40)
        parts.append(f"<paper {k}>\n# Paper {k}: Gated Units for Task {k}\n\n#### Abstract\n\n{body}\n\n"
                     f"The GRU-SVM{k} model reached {80 + k}.15% accuracy.\n</end of paper {k}>\n\n")
    return "".join(parts)


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # the release's files end without a newline
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")


def _row(kind: str, length: str, file: str, question: str, answer: str, part, doc_type: str) -> dict:
    row = {"type": doc_type, "level": kind, "length": length, "file": file}
    row["comp_parts" if kind == "comp" else "context_order"] = part
    row.update(question=question, answer=answer)
    return row


def make_clone(root: Path) -> Path:
    """A tiny clone in LaRA's layout: 32k and 128k, book and paper, all four query types."""
    data = root / "datasets"
    for length in ("32k", "128k"):
        book = _book_text(length)
        paper_file = f"{length}_paper_0.md"
        (data / length / "book").mkdir(parents=True, exist_ok=True)
        (data / length / "book" / BOOK).write_text(book, encoding="utf-8")
        (data / length / "paper").mkdir(parents=True, exist_ok=True)
        (data / length / "paper" / paper_file).write_text(_paper_text(3 if length == "128k" else 2), encoding="utf-8")
        seg = len(book) // 5
        location = []
        for i in range(2):
            r = _row("location", length, BOOK, f"What did Gordon sell at the fair ({length}, {i})?",
                     "A silver lantern.", i, "novelette_fake" if length == "32k" else "novel_fake")
            if length == "32k":  # the release's 32k book-location lines carry their segment of the book
                r["context"] = book[i * seg:(i + 1) * seg]
            location.append(r)
        rows = {
            ("book", "location"): location,
            ("book", "reasoning"): [_row("reasoning", length, BOOK, "Why did Miss Winslow pay nine shillings?",
                                        "She wanted the lantern.", "full", "novel_fake")],
            ("book", "comp"): [_row("comp", length, BOOK, "How does the harvest differ from the winter?",
                                    "The harvest turns more wheels.", [0, 2], "novel")],
            ("book", "hallu"): [_row("hallu", length, BOOK, "What colour was Gordon's hat?",
                                     "The text does not mention the colour of Gordon's hat.", 1, "book")],
            ("paper", "location"): [_row("location", length, paper_file, "What accuracy did GRU-SVM1 reach in paper 1?",
                                         "81.15%.", 1, "paper")],
            ("paper", "reasoning"): [_row("reasoning", length, paper_file, "Why do gated units help in paper 0?",
                                          "They keep long-range state.", 0, "paper")],
            ("paper", "comp"): [_row("comp", length, paper_file, "How do papers 0 and 1 differ in accuracy?",
                                     "Paper 1 is one point higher.", [0, 1], "paper")],
            ("paper", "hallu"): [_row("hallu", length, paper_file, "In paper 0, what is the carbon cost of training?",
                                      "Paper 0 does not discuss the carbon cost of training.", 0, "paper")],
        }
        for (domain, kind), items in rows.items():
            _write_jsonl(data / "query" / f"{length}_{domain}_{kind}.jsonl", items)
    return root


@pytest.fixture()
def clone(tmp_path) -> Path:
    return make_clone(tmp_path / "LaRA")


DOMAINS = ["book", "paper"]  # the fixture's two domains (a financial query file would be reported missing)


def _load(path: Path, **cfg):
    return load_benchmark({"name": "lara", "path": str(path), "domains": DOMAINS, **cfg})


def test_counts_ids_groups_levels_and_tasks(clone):
    res = _load(clone)
    samples = res.samples
    assert len(samples) == 2 * (2 + 1 + 1 + 1 + 4) and res.skipped == {}
    assert {s.length_level for s in samples} == {"32k", "128k"}
    assert {s.task for s in samples} == {"location", "reasoning", "comparison", "hallucination"}
    assert {s.language for s in samples} == {"en"} and {s.benchmark for s in samples} == {"lara"}
    ids = {s.id for s in samples}
    assert "lara/32k_book_location/1" in ids and "lara/128k_paper_hallu/0" in ids and len(ids) == len(samples)
    assert (sample_id("32k", "book", "location", 1) == sample_id("32k", "book", "location", 1)
            == "lara/32k_book_location/1")
    assert sample_id("128k", "paper", "comparison", 0) == "lara/128k_paper_comp/0"
    # a group is a document: its questions of every task come together and share one context string
    book = [s for s in samples if s.group == f"lara/32k/book/{BOOK}"]
    assert len(book) == 5 and len({id(s.context) for s in book}) == 1 and groups_are_consecutive(samples)
    assert book[0].context == (clone / "datasets" / "32k" / "book" / BOOK).read_text(encoding="utf-8")
    assert {s.metadata["domain"] for s in samples} == {"book", "paper"}
    loc = next(s for s in samples if s.id == "lara/32k_book_location/1")
    assert (loc.answers == ["A silver lantern."] and loc.metadata["part"] == 1
            and loc.metadata["type"] == "novelette_fake")
    assert loc.metadata["source"].endswith("32k_book_location.jsonl:2")
    # the embedded segment is not the context: it is located in the document and recorded
    seg = len(loc.context) // 5
    assert loc.metadata["segment_span"] == [seg, 2 * seg]
    # selection by task, level and domain; the ids do not change with it
    sel = _load(clone, tasks=["hallucination"], levels=["128k"], domains=["paper"])
    assert [s.id for s in sel.samples] == ["lara/128k_paper_hallu/0"]
    with pytest.raises(ValueError, match="unknown .*'novel'"):
        _load(clone, domains=["novel"])


def test_prompts_are_the_released_templates(clone):
    samples = _load(clone).samples
    for s in samples:
        domain = s.metadata["domain"]
        assert (s.template.render("CTX {x}", s.question)
                == RELEASED_FULL[domain].format(context="CTX {x}", question=s.question))
        assert s.template.system == "You are a helpful assistant"
        assert s.template.max_new_tokens == 1024 and s.template.truncation == "prompt_middle"
        assert "Alibaba-NLP/LaRA evaluation/prompt.py" in s.template.source
        assert s.metric == "lara_judge"
    rag = _load(clone, prompt="rag").samples
    for s in rag:
        assert (s.template.render("CTX", s.question)
                == RELEASED_RAG[s.metadata["domain"]].format(context="CTX", question=s.question))
    with pytest.raises(ValueError, match="benchmark.prompt"):
        _load(clone, prompt="chunks")


def test_evidence_is_document_level_for_papers_only(clone):
    by_id = {s.id: s for s in _load(clone).samples}
    loc = by_id["lara/128k_paper_location/0"]
    assert [d.doc_id for d in loc.documents] == ["paper 0", "paper 1", "paper 2"]
    assert loc.documents[0].start == 0 and loc.documents[-1].end == len(loc.context)
    # the papers tile the file
    assert all(a.end == b.start for a, b in zip(loc.documents, loc.documents[1:], strict=False))
    assert loc.context[loc.documents[1].start:].startswith("<paper 1>")
    assert loc.documents[1].title == "Paper 1: Gated Units for Task 1"
    assert [(e.doc_id, e.is_char_span) for e in loc.evidence] == [("paper 1", False)]
    assert [e.doc_id for e in by_id["lara/128k_paper_comp/0"].evidence] == ["paper 0", "paper 1"]
    assert by_id["lara/128k_paper_hallu/0"].evidence == []  # the document does not answer it
    assert by_id["lara/32k_book_location/0"].evidence == []  # book parts: no evidence
    assert by_id["lara/32k_book_comp/0"].metadata["part"] == [0, 2]


def test_index_for_released_predictions(clone):
    index = lara_index(clone)
    assert index[("32k", "book", "location", BOOK,
                  "What did Gordon sell at the fair (32k, 1)?")] == ["lara/32k_book_location/1"]
    assert index[("128k", "paper", "hallucination", "128k_paper_0.md",
                  "In paper 0, what is the carbon cost of training?")] == ["lara/128k_paper_hallu/0"]
    assert sum(len(v) for v in index.values()) == len(_load(clone).samples)
    # the clone's datasets/ folder works as well
    assert lara_index(clone / "datasets") == index
    # with a domain missing, every present file still loads; the absent ones are counted with the release's sizes
    everything = load_benchmark({"name": "lara", "path": str(clone)})
    assert len(everything.samples) == len(index) and everything.skipped == {
        "query file missing (questions in the release)": 471 + 295}
    assert parse_query_file_name("32k_paper_comp.jsonl") == ("32k", "paper", "comparison")
    assert parse_query_file_name("full_preds_gpt-4o_128k_book_hallu.jsonl") == ("128k", "book", "hallucination")
    assert parse_query_file_name("notes.jsonl") is None


def test_a_bad_line_is_named_or_skipped_and_ids_keep_their_positions(clone):
    path = clone / "datasets" / "query" / "32k_book_location.jsonl"
    lines = path.read_text(encoding="utf-8").split("\n")
    bad = json.loads(lines[0])
    del bad["question"]
    path.write_text("\n".join([json.dumps(bad), *lines[1:]]), encoding="utf-8")
    with pytest.raises(DataError, match=r"32k_book_location\.jsonl:1: field 'question': missing"):
        _load(clone)
    res = _load(clone, skip_bad=True)
    assert res.skipped == {"bad records": 1}
    assert "lara/32k_book_location/1" in {s.id for s in res.samples}
    assert "lara/32k_book_location/0" not in {s.id for s in res.samples}
    # a line whose type contradicts its file, and an unreadable line
    path.write_text("\n".join([lines[0], json.dumps({**json.loads(lines[1]), "level": "hallu"})]), encoding="utf-8")
    with pytest.raises(DataError, match=r"32k_book_location\.jsonl:2: field 'level': is 'hallu' "
                                        r"in the file of 32k_book_location"):
        _load(clone)
    path.write_text(lines[0] + "\n{not json", encoding="utf-8")
    with pytest.raises(DataError, match=r"32k_book_location\.jsonl:2: malformed JSON"):
        _load(clone)
    path.write_text(json.dumps({**json.loads(lines[0]), "context_order": "middle"}), encoding="utf-8")
    with pytest.raises(DataError, match=r"jsonl:1: field 'context_order'"):
        _load(clone)
    path.write_text(json.dumps({**json.loads(lines[0]), "file": "../../../x.txt"}), encoding="utf-8")
    with pytest.raises(DataError, match=r"jsonl:1: field 'file': .*points outside"):
        _load(clone)


def test_missing_files_are_skipped_and_counted(clone, caplog):
    (clone / "datasets" / "query" / "128k_book_location.jsonl").unlink()  # as in a copy without the large file
    (clone / "datasets" / "32k" / "paper" / "32k_paper_0.md").unlink()
    res = _load(clone)
    assert res.skipped == {"query file missing (questions in the release)": 250, "document file missing": 4}
    assert res.notes["missing_query_files"] == {"128k_book_location.jsonl": 250}
    assert any("128k_book_location.jsonl" in r.message for r in caplog.records)
    assert len(res.samples) == 18 - 2 - 4
    with pytest.raises(DataError, match="none of the selected query files"):
        _load(clone, tasks=["location"], levels=["128k"], domains=["book"])
    with pytest.raises(DataError, match="no such folder"):
        _load(clone / "nowhere")
    with pytest.raises(DataError, match="no datasets/query folder"):
        _load(clone / "datasets" / "32k")
    with pytest.raises(ValueError, match="unknown keys"):
        _load(clone, doc_path="x")


def test_describe_reports_counts_skips_and_the_evidence_note(clone, capsys):
    from eval.describe import main

    (clone / "datasets" / "query" / "128k_book_location.jsonl").unlink()
    assert main(["--benchmark", "lara", "--path", str(clone), "--set", "domains=[book,paper]"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["samples"] == 16 and out["by_length_level"] == {"128k": 7, "32k": 9}
    assert out["by_level_domain_task"]["32k"]["book"] == {"comparison": 1, "hallucination": 1, "location": 2,
                                                          "reasoning": 1}
    assert out["by_level_domain_task"]["128k"]["book"] == {"comparison": 1, "hallucination": 1, "reasoning": 1}
    assert out["by_domain"] == {"book": 8, "paper": 8}
    assert out["skipped"] == {"query file missing (questions in the release)": 250}
    assert out["with_evidence"] == 6 and out["evidence_char_spans"] == 0  # paper location, reasoning, comparison
    assert "no span-level evidence" in out["notes"]["evidence"] and "Official: lara_judge" in out["notes"]["metric"]
    assert out["notes"]["released_questions"] == 2326 and out["metrics"] == {"lara_judge": 16}


class _Recorder:
    """Stands in for the remote judge: records what it is asked and replies from a script."""

    def __init__(self, replies):
        self.replies, self.asked = list(replies), []

    def __call__(self, messages, **params):
        self.asked.append(messages)
        return self.replies.pop(0)


def test_judge_prompt_per_task_and_the_released_parse(clone, tmp_path):
    by_id = {s.id: s for s in _load(clone).samples}
    ask = _Recorder(["True", "False.", "It is not true.", "Cannot say", "True"])
    judge = Judge(ask, "gpt-4o", tmp_path / "judgments.sqlite")
    hallu, loc = by_id["lara/32k_book_hallu/0"], by_id["lara/32k_book_location/0"]
    v = score("lara_judge", "The book does not say.", hallu.reference(), judge)
    assert v == {"score": 1.0, "judge_score": 100.0, "perfect": 1.0}
    system, user = ask.asked[0]
    assert system == {"role": "system", "content": ("You are a discriminator that judges whether the predictions "
                                                    "to questions are correct.")}
    assert user["content"].startswith("You need to help me determine whether an AI model is hallucinating.")
    assert (f"[Query] {hallu.question}\n\n[Groundtruth Answer] {hallu.answers[0]}\n\n"
            "[AI Assistant's Answer] The book does not say." in user["content"])
    assert user["content"].endswith("Now, start your judgement:")
    assert score("lara_judge", "A {lantern}.", loc.reference(), judge)["score"] == 0.0
    other = ask.asked[1][1]["content"]
    assert other.startswith("I will provide you with a question and its groundtruth answer")
    assert "[AI Assistant's Answer] A {lantern}." in other and other.endswith("Now, start your judgment:")
    # the released parse: 'true' anywhere counts as True ("not true" too); neither word: no judgment
    assert score("lara_judge", "x", loc.reference(), judge)["score"] == 1.0
    unparsable = score("lara_judge", "y", loc.reference(), judge)
    assert isinstance(unparsable, NoJudgment) and unparsable.kind == NoJudgment.UNPARSABLE
    assert unparsable.reply_excerpt == "Cannot say"
    assert parse_lara_verdict("It is not true.", "strict") is None and parse_lara_verdict("true.", "strict") is True
    # the same question is asked once: the second time comes from the cache
    assert score("lara_judge", "The book does not say.", hallu.reference(), judge)["score"] == 1.0 and judge.calls == 4


def test_judge_free_fallback_credits_refusals_on_hallucination(clone):
    by_id = {s.id: s for s in _load(clone, metric="lara_auto").samples}
    hallu, loc = by_id["lara/32k_book_hallu/0"], by_id["lara/32k_book_location/0"]
    assert hallu.metric == "lara_auto"
    refusals = ["The text does not mention the colour of his hat.", "The colour of Gordon's hat is not specified.",
                "There is no information about the hat in the book.", "I cannot determine that from the passage.",
                "Paper 0 doesn't discuss the carbon cost.", "There is no backstory provided for him."]
    for answer in refusals:
        assert is_refusal(answer), answer
        assert score("lara_auto", answer, hallu.reference()) == {"score": 1.0, "refusal": 1.0}
    for answer in ["His hat was red.", "Gordon wore a blue hat to the fair.",
                   "No serious adverse events were reported.", ""]:
        assert not is_refusal(answer), answer
        assert score("lara_auto", answer, hallu.reference())["score"] == 0.0
    right = score("lara_auto", "He sold a silver lantern.", loc.reference())
    assert right["score"] == pytest.approx(2 / 3) and right["refusal"] == 0.0  # token F1: 2 shared of 4 and 2
    refused = score("lara_auto", "The text does not mention it.", loc.reference())
    assert refused["score"] == 0.0 and refused["refusal"] == 1.0
    ref = lara_reference("hallu", {"question": "q?", "ground_truth": "The text does not say."})
    assert ref.task == "hallucination" and ref.extra["question"] == "q?"


def test_released_table_averages_files_then_tasks():
    rows = [{"length_level": "32k", "domain": d, "task": t, "score": s}
            for d, t, s in [("book", "location", 1.0), ("book", "location", 0.0), ("paper", "location", 1.0),
                            ("book", "reasoning", 1.0), ("book", "comparison", 0.0), ("book", "hallu", 1.0),
                            ("paper", "hallucination", 0.0), ("paper", "hallucination", None)]]
    table = lara_table(rows)["32k"]
    assert table == {"location": 75.0, "reasoning": 100.0, "comparison": 0.0, "hallucination": 50.0, "overall": 56.25}
    # records.jsonl lines: the domain comes from the sample id; a missing task leaves no overall
    records = [{"id": "lara/128k_paper_location/0", "length_level": "128k", "task": "location", "score": 1.0},
               {"id": "lara/128k_book_location/0", "length_level": "128k", "task": "location", "score": 0.0},
               {"id": "lara/128k_book_location/1", "length_level": "128k", "task": "location", "score": 1.0}]
    assert lara_table(records) == {"128k": {"location": 75.0, "reasoning": None, "comparison": None,
                                            "hallucination": None, "overall": None}}
    with pytest.raises(ValueError, match="needs `domain`"):
        lara_table([{"id": "x", "length_level": "32k", "task": "location", "score": 1.0}])


def test_quota_fusion_takes_each_retrievers_own_top_first():
    from rag.retrievers import HybridIndex, quotas_first, reciprocal_rank_fusion

    bm25 = [(4, 9.0), (1, 8.0), (7, 7.0), (2, 6.0)]
    dense = [(1, 0.9), (5, 0.8), (2, 0.7), (4, 0.6)]
    fused = reciprocal_rank_fusion([bm25, dense], 60)
    head = quotas_first([bm25, dense], [3, 2], fused)
    # LaRA: BM25's top 3, then the dense top 2 not already in (chunk 1 is both): 4 chunks, then the fusion's rest
    assert [d for d, _ in head] == [4, 1, 7, 5, 2]
    assert dict(head) == dict(fused)

    class Fixed:
        def __init__(self, ranking):
            self.ranking = ranking

        def search(self, query, k):
            return self.ranking[:k]

    index = HybridIndex([Fixed(bm25), Fixed(dense)], 60, 100, [1.0, 1.0], [3, 2])
    assert [d for d, _ in index.search("q", 5)] == [4, 1, 7, 5, 2]
    assert [d for d, _ in HybridIndex([Fixed(bm25), Fixed(dense)], 60, 100, [1.0, 1.0]).search("q", 2)] == [1, 4]


def test_rag_preset_composes_and_runs_retrieval_only(clone, tmp_path, monkeypatch):
    """experiment=lara_rag_baseline through the real runner, generator=none: no judge (and no key) needed."""
    from omegaconf import OmegaConf

    from experiments.run import run

    for name in ("OPENAI_API_KEY", "JUDGE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    cfg = compose(["experiment=lara_rag_baseline", f"benchmark.path={clone}", "benchmark.domains=[book,paper]",
                   "generator=none", f"run.cache_dir={tmp_path / 'cache'}", "run.progress=false"])
    plain = OmegaConf.to_container(cfg, resolve=True)
    assert plain["benchmark"]["name"] == "lara" and plain["benchmark"]["prompt"] == "rag"
    assert plain["arm"]["name"] == "rag" and plain["chunker"]["kind"] == "llamaindex"
    assert plain["retriever"]["kind"] == "hybrid" and plain["retriever"]["quotas"] == [3, 2]
    assert [r["kind"] for r in plain["retriever"]["retrievers"]] == ["bm25", "dense"]
    assert plain["rag"]["doc_titles"] is False  # the release labels chunks with no paper title
    assert {k: plain["rag"][k] for k in ("chunk_size", "chunk_overlap", "top_k", "order")} == \
        {"chunk_size": 600, "chunk_overlap": 100, "top_k": 5, "order": "score"}
    assert plain["reranker"]["kind"] == "none"
    out = tmp_path / "run"
    out.mkdir()
    metrics = run(cfg, out)
    records = [json.loads(x) for x in (out / "records.jsonl").read_text().splitlines()]
    assert len(records) == 18 and {r["status"] for r in records} == {"retrieved"}
    by_id = {r["id"]: r for r in records}
    paper = by_id["lara/128k_paper_location/0"]
    # the papers a question was written from are document-level evidence: document coverage, named doc_recall
    assert paper["doc_recall"] is not None and set(paper["doc_recall"]) == {"1", "3", "5", "10"}
    assert paper["evidence_recall"] is None
    assert 1 <= len(paper["retrieved"]) <= 5
    assert all(r["doc_id"].startswith("paper ") for r in paper["retrieved"])
    assert by_id["lara/32k_book_hallu/0"]["evidence_recall"] is None is by_id["lara/32k_book_hallu/0"]["doc_recall"]
    assert metrics["n_retrieved"] == 18 and metrics["knobs"]["retriever"] == "lara_hybrid"


@pytest.mark.parametrize("field, value", [
    ("question", 123), ("question", None), ("question", ["q"]), ("question", "  "), ("answer", None), ("answer", 7),
    ("file", 5), ("file", ""), ("context_order", None), ("context_order", 1.5), ("context_order", True),
])
def test_wrong_field_types_name_file_line_and_field(clone, field, value):
    path = clone / "datasets" / "query" / "32k_book_location.jsonl"
    first, second = path.read_text(encoding="utf-8").split("\n")
    path.write_text(first + "\n" + json.dumps({**json.loads(second), field: value}), encoding="utf-8")
    with pytest.raises(DataError, match=rf"32k_book_location\.jsonl:2: field '{field}'"):
        _load(clone)


def test_garbage_comparison_parts_and_conf_keys(clone):
    import yaml

    from tests.conftest import CONF

    path = clone / "datasets" / "query" / "32k_paper_comp.jsonl"
    good = path.read_text(encoding="utf-8")
    path.write_bytes(good.encode() + b"\n\xff\xfe garbage \x00")
    with pytest.raises(DataError, match=r"32k_paper_comp\.jsonl:2: not UTF-8"):
        _load(clone)
    path.write_text(json.dumps({**json.loads(good), "comp_parts": ["0", 1]}), encoding="utf-8")
    with pytest.raises(DataError, match=r"32k_paper_comp\.jsonl:1: field 'comp_parts'"):
        _load(clone)
    # every key of conf/benchmark/lara.yaml is accepted: it gets as far as the files
    conf = yaml.safe_load((CONF / "benchmark" / "lara.yaml").read_text())
    assert conf["name"] == "lara" and conf["skip_bad"] is False and conf["prompt"] == "full"
    with pytest.raises(DataError, match="no such folder"):
        load_benchmark({**conf, "path": str(clone / "missing")})
    with pytest.raises(ValueError, match="local clone"):
        load_benchmark({**conf, "path": None})
