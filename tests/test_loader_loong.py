"""Loong loader: the real data in ../shared/data/loong (skipped when absent), and small hand-written layouts."""

from __future__ import annotations

import json
import logging
import random
from collections import Counter
from pathlib import Path

import pytest

from eval.benchmarks import load_benchmark
from eval.benchmarks.loong import LEVELS, TASKS, spotlight_document
from eval.data_files import DataError
from tests.conftest import SHARED_DATA, groups_are_consecutive

LOONG = SHARED_DATA / "loong"
real = pytest.mark.skipif(not (LOONG / "loong.jsonl").is_file(), reason="../shared/data/loong is absent")


# ---------------------------------------------------------------- real data
@pytest.fixture(scope="module")
def loong_all():
    records = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("eval.benchmarks.loong")
    logger.addHandler(handler)
    try:
        res = load_benchmark({"name": "loong", "path": str(LOONG)})
    finally:
        logger.removeHandler(handler)
    return res, records


@real
def test_real_loong_loads_1100_items_and_reports_500_missing(loong_all):
    res, records = loong_all
    assert len(res.samples) == 1100
    assert res.skipped == {"missing documents": 500}
    warnings = [r for r in records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    assert "500" in warnings[0].getMessage() and "legal" in warnings[0].getMessage()
    assert {s.metadata["type"] for s in res.samples} == {"financial", "paper"}
    assert set(Counter(s.task for s in res.samples)) == set(TASKS)
    assert set(Counter(s.length_level for s in res.samples)) == set(LEVELS)
    assert len({s.id for s in res.samples}) == 1100


@real
def test_real_loong_documents_are_in_the_context(loong_all):
    res, _ = loong_all
    for s in res.samples:
        assert s.metric == "loong_judge" and s.benchmark == "loong"
        assert len(s.documents) == len(s.metadata["docs"]) >= 1
        ends = 0
        for d in s.documents:
            text = s.context[d.start:d.end]
            assert d.start >= ends and text.strip(), (s.id, d)
            assert text.startswith(("《" + d.title + "》\n", d.title + "\n"))
            ends = d.end
        assert s.context.endswith("\n\n") and s.documents[-1].end == len(s.context) - 2
        ids = {d.doc_id for d in s.documents}
        assert s.evidence and all(e.doc_id in ids and not e.is_char_span for e in s.evidence)
        if s.task == "spotlight_locating":
            assert len(s.evidence) == 1, s.id
        else:
            assert len(s.evidence) == len(s.documents)
        prompt = s.template.render(s.context, s.question)
        assert s.context in prompt and s.template.truncation == "drop_documents"
        assert s.reference_extra["answer"] is not None and s.reference_extra["question"]
        # plausible length: the item's own token count against our characters (en ~4, zh ~1.5 chars a token)
        ratio = len(s.context) / s.metadata["length"]
        assert 0.8 < ratio < 8, (s.id, ratio)
    assert groups_are_consecutive(res.samples)


@real
def test_real_loong_order_does_not_depend_on_the_selection(loong_all):
    res, _ = loong_all
    part = load_benchmark({"name": "loong", "path": str(LOONG), "tasks": ["comparison"], "levels": ["10k-50k"]})
    full = {s.id: s for s in res.samples}
    assert part.samples and part.skipped == {"missing documents": 30}
    for s in part.samples:
        assert s.context == full[s.id].context and s.documents == full[s.id].documents


@real
def test_real_loong_spotlight_names_its_document(loong_all):
    res, _ = loong_all
    spot = [s for s in res.samples if s.task == "spotlight_locating"]
    named = [s for s in spot if s.metadata["evidence_kind"] == "named_document"]
    assert len(named) == len(spot) == 150
    for s in named:
        gold = s.evidence[0].doc_id
        assert gold in s.question or gold in s.answers[0]


# ---------------------------------------------------------------- hand-written layouts
FIN_INSTR = "Answer from the reports above."
PAPER_TEMPLATE = "#Papers:\n{docs}\n\n{instruction}\n\n#The paper you need to analyze:\n{question}"


def _item(**kw):
    base = {"level": 2, "set": 1, "length": 100, "type": "financial", "language": "en", "question": "Which is higher?",
            "instruction": FIN_INSTR, "prompt_template": "{docs}\n\n{instruction}\n\n{question}",
            "doc": ["ACME Corp", "Beta Inc."], "answer": "ACME Corp", "shuffle_doc": True, "id": "x"}
    base.update(kw)
    return base


def _layout(tmp_path: Path, items: list[dict], legal: dict | None = None) -> Path:
    root = tmp_path / "loong"
    (root / "doc" / "financial").mkdir(parents=True)
    (root / "doc" / "paper").mkdir(parents=True)
    fin = root / "doc" / "financial"
    (fin / "2024-ACME Corp-j.txt").write_text("ACME report 2024", encoding="utf-8")
    (fin / "2023-ACME Corp-n.txt").write_text("ACME report 2023", encoding="utf-8")
    (fin / "2024-Beta Inc.-j.txt").write_text("Beta report", encoding="utf-8")
    (fin / "2024-Gamma {LLC}-j.txt").write_text("Gamma report {braces}", encoding="utf-8")
    (fin / "report_000001-2024-平安银行-2024年第一季度报告.txt").write_text("平安银行报告", encoding="utf-8")
    (root / "doc" / "paper" / "a.md").write_text("# Paper A \n\nBody A cites B.", encoding="utf-8")
    (root / "doc" / "paper" / "b.md").write_text("# Paper B\nBody B.", encoding="utf-8")
    if legal is not None:
        (root / "doc" / "legal").mkdir()
        (root / "doc" / "legal" / "legal.json").write_text(json.dumps(legal, ensure_ascii=False), encoding="utf-8")
    with (root / "loong.jsonl").open("w", encoding="utf-8") as f:
        for it in items:
            f.write((it if isinstance(it, str) else json.dumps(it, ensure_ascii=False)) + "\n")
    return root


def _load(root: Path, **kw):
    return load_benchmark({"name": "loong", "path": str(root), **kw})


def test_contexts_are_built_as_the_released_code_builds_them(tmp_path):
    legal = {"判决A": {"content": "案情A", "result": "判决结果A"}, "判决B": {"content": "案情B", "result": "判决结果B"}}
    items = [
        _item(id="f2", shuffle_doc=False),
        _item(id="f4", level=4, set=2, doc=["ACME Corp"], shuffle_doc=False, question="How did ACME change?"),
        _item(id="zh", language="zh", doc=["平安银行"], shuffle_doc=False, question="平安银行的资产？", answer="1"),
        _item(id="p3", type="paper", level=3, doc=["a.md", "b.md"], shuffle_doc=False, prompt_template=PAPER_TEMPLATE,
              question="Paper A", instruction='Reply as {{"Reference": []}}.', answer={"Reference": ["# Paper B"]}),
        _item(id="l4", type="legal", level=4, language="zh", doc=["判决A", "判决B"], shuffle_doc=False,
              instruction="阅读以上判决文书，我将给你若干份判决结果：……", question="", answer=["判决A"]),
        _item(id="l1", type="legal", level=1, language="zh", doc=["判决A"], shuffle_doc=False,
              question="谁？", answer="A"),
    ]
    res = _load(_layout(tmp_path, items, legal), shuffle="none")
    by = {s.id: s for s in res.samples}
    assert by["loong-f2"].context == "《j》\nACME report 2024\n\n《j》\nBeta report\n\n"
    assert [d.doc_id for d in by["loong-f2"].documents] == ["ACME Corp", "Beta Inc."]
    assert by["loong-f2"].metadata["files"] == ["2024-ACME Corp-j.txt", "2024-Beta Inc.-j.txt"]
    # level 4 takes any year; two files match: the one named exactly, first in sorted order
    assert by["loong-f4"].context == "《n》\nACME report 2023\n\n"
    assert by["loong-f4"].metadata["ambiguous_files"] == {"ACME Corp": 2}
    assert by["loong-zh"].context == "《2024年第一季度报告》\n平安银行报告\n\n"
    p = by["loong-p3"]
    assert p.context == "Paper A\n# Paper A \n\nBody A cites B.\n\nPaper B\n# Paper B\nBody B.\n\n"
    assert [d.title for d in p.documents] == ["Paper A", "Paper B"]
    rendered = p.template.render(p.context, p.question)
    assert rendered == ("#Papers:\n" + p.context + '\n\nReply as {{"Reference": []}}.\n\n'
                        '#The paper you need to analyze:\nPaper A')
    # the judge sees the paper template with {docs} left in place, as the released step 3
    assert p.reference_extra["question"].startswith("#Papers:\n{docs}\n\nReply as")
    assert (p.answers == [str({"Reference": ["# Paper B"]})]
            and p.reference_extra["answer"] == {"Reference": ["# Paper B"]})
    # legal: level 4 asking for judgments hides the results; other levels append them
    assert by["loong-l4"].context == "《判决文书1》\n案情A\n\n《判决文书2》\n案情B\n\n"
    assert by["loong-l4"].metadata["retrieval_query"].startswith("阅读以上判决文书")
    assert by["loong-l1"].context == "《判决文书1》\n案情A判决结果A\n\n"
    f2 = by["loong-f2"]
    assert f2.template.text == "{context}\n\n" + FIN_INSTR + "\n\n{question}"
    assert f2.reference_extra["question"] == "\n\n" + FIN_INSTR + "\n\nWhich is higher?"
    assert f2.task == "comparison" and f2.length_level == "10k-50k" and f2.template.max_new_tokens == 1024


def test_official_shuffle_is_seeded_and_walks_every_item(tmp_path):
    items = [_item(id=f"i{k}", doc=["ACME Corp", "Beta Inc.", "Gamma {LLC}"], level=2 if k % 2 else 3)
             for k in range(12)]
    root = _layout(tmp_path, items)
    a = _load(root)
    b = _load(root)
    assert [s.context for s in a.samples] == [s.context for s in b.samples]
    orders = {tuple(s.metadata["doc_order"]) for s in a.samples}
    assert len(orders) > 1  # shuffled differently per item
    # the released walk: per financial item with shuffle_doc, two shuffles of the global RNG
    rng = random.Random(1000000007)
    expected = []
    for _ in items:
        order = [0, 1, 2]
        rng.shuffle(order)
        rng.shuffle(order)
        expected.append([["ACME Corp", "Beta Inc.", "Gamma {LLC}"][i] for i in order])
    assert [s.metadata["doc_order"] for s in sorted(a.samples, key=lambda s: int(s.id[7:]))] == expected
    # a selection does not change an item's order
    part = _load(root, tasks=["clustering"])
    full = {s.id: s.context for s in a.samples}
    assert part.samples and all(full[s.id] == s.context for s in part.samples)
    assert {s.id: s.context for s in _load(root, seed=1).samples} != full
    none = _load(root, shuffle="none")
    assert all(s.metadata["doc_order"] == ["ACME Corp", "Beta Inc.", "Gamma {LLC}"] for s in none.samples)
    assert groups_are_consecutive(none.samples) and len({s.group for s in none.samples}) == 1


def test_missing_documents_are_skipped_with_one_warning(tmp_path, caplog):
    items = [_item(id="ok"), _item(id="nofile", doc=["ACME Corp", "Nobody Ltd"]),
             _item(id="nopaper", type="paper", level=3, doc=["zzz.md"], prompt_template=PAPER_TEMPLATE),
             _item(id="legal", type="legal", level=1, doc=["判决A"], language="zh")]
    with caplog.at_level(logging.WARNING, logger="eval.benchmarks.loong"):
        res = _load(_layout(tmp_path, items))
    assert [s.id for s in res.samples] == ["loong-ok"]
    assert res.skipped == {"missing documents": 3}
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(lines) == 1 and "3 items" in lines[0] and "legal: 1" in lines[0] and "paper: 1" in lines[0]


def test_spotlight_gold_document():
    names = ["HARTE HANKS INC", "C", "Clean Vision Corp"]
    assert spotlight_document(names, "What is the Accounts Receivable value for HARTE HANKS INC?",
                              "$1") == "HARTE HANKS INC"
    assert spotlight_document(names, "Which company has receivables of $5?", "Clean Vision Corp") == "Clean Vision Corp"
    assert spotlight_document(names, "Compare HARTE HANKS INC and Clean Vision Corp", "x") is None
    assert spotlight_document(["夏厦精密", "九芝堂"], "夏厦精密的其他应付款是多少？", "1") == "夏厦精密"
    assert spotlight_document(["ABC"], "What about ABCD Corp?", "none") is None


@pytest.mark.parametrize("line, match", [
    ('{"level": 2, "set": 1', r"loong\.jsonl:1: malformed JSON"),
    (json.dumps(_item(doc="ACME Corp")), r"loong\.jsonl:1: field 'doc': must be a list"),
    (json.dumps({k: v for k, v in _item().items() if k != "question"}), r"loong\.jsonl:1: field 'question': missing"),
    (json.dumps(_item(level="2")), r"field 'level': must be an integer"),
    (json.dumps(_item(level=7)), r"field 'level': must be one of"),
    (json.dumps(_item(type="medical")), r"field 'type'"),
    (json.dumps(_item(type="paper", level=3, doc=["../../secret.md"], prompt_template=PAPER_TEMPLATE)),
     r"loong\.jsonl:1: field 'doc': file name '../../secret.md' points outside"),
    (json.dumps(_item(doc=["../x"])), r"field 'doc': document name '../x'"),
    (json.dumps(_item(instruction="Use {docs} twice")), r"field 'instruction': contains the placeholder"),
    (json.dumps(_item(prompt_template="{instruction}\n{question}")), r"field 'prompt_template': must contain \{docs\}"),
])
def test_bad_input_names_file_line_and_field(tmp_path, line, match):
    root = _layout(tmp_path, [line])
    (root.parent / "secret.md").write_text("secret", encoding="utf-8")
    with pytest.raises(DataError, match=match):
        _load(root)


def test_second_bad_line_is_named(tmp_path):
    root = _layout(tmp_path, [_item(id="a"), "", "not json"])
    with pytest.raises(DataError, match=r"loong\.jsonl:3: malformed JSON"):
        _load(root)


def test_config_errors(tmp_path):
    root = _layout(tmp_path, [_item()])
    with pytest.raises(ValueError, match="unknown keys.*'chunking'"):
        _load(root, chunking=1)
    with pytest.raises(ValueError, match="available"):
        _load(root, tasks=["summarisation"])
    with pytest.raises(ValueError, match="available"):
        _load(root, levels=["set1"])
    with pytest.raises(ValueError, match="shuffle"):
        _load(root, shuffle="random")
    with pytest.raises(DataError, match="no such file or folder"):
        load_benchmark({"name": "loong", "path": str(tmp_path / "nowhere")})
    with pytest.raises(ValueError, match="local copy"):
        load_benchmark({"name": "loong", "path": None})
    # the JSONL file itself, with the documents beside it
    assert len(load_benchmark({"name": "loong", "path": str(root / "loong.jsonl")}).samples) == 1
    assert len(_load(root, domains="paper").samples) == 0


def test_hydra_config_composes_and_loads(tmp_path):
    from omegaconf import OmegaConf

    from tests.conftest import compose

    root = _layout(tmp_path, [_item(id="a"), _item(id="b", level=1, question="EPS of ACME Corp?")])
    cfg = compose(["benchmark=loong", f"benchmark.path={root}", "benchmark.tasks=[spotlight_locating]"])
    res = load_benchmark(OmegaConf.to_container(cfg.benchmark, resolve=True))
    assert [s.id for s in res.samples] == ["loong-b"]
    assert [e.doc_id for e in res.samples[0].evidence] == ["ACME Corp"]
