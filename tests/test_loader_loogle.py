"""LooGLE loader: the sample test data in ../shared/data/loogle (skipped when absent), both schemas on
small hand-written files, evidence alignment and bad input."""

from __future__ import annotations

import ast
import json
from collections import Counter
from pathlib import Path

import pytest

from eval.benchmarks import load_benchmark
from eval.benchmarks.common import approx_tokens
from eval.benchmarks.loogle import TASKS, evidence_pieces, evidence_stats, length_level, level_names
from eval.data_files import DataError
from tests.conftest import SHARED_DATA, groups_are_consecutive

LOOGLE = SHARED_DATA / "loogle"
real = pytest.mark.skipif(not (LOOGLE / "shortdep_qa.jsonl").is_file(), reason="../shared/data/loogle is absent")


@pytest.fixture(scope="module")
def loogle_all():
    return load_benchmark({"name": "loogle", "path": str(LOOGLE)})


@real
def test_real_loogle_loads_every_qa_pair(loogle_all):
    samples = loogle_all.samples
    expected = Counter()
    for task in TASKS:
        for line in (LOOGLE / f"{task}.jsonl").read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            pairs = row["qa_pairs"]
            expected[task] += 1 if pairs == "none" else len(ast.literal_eval(pairs))
    assert Counter(s.task for s in samples) == expected
    assert expected == {"shortdep_qa": 80, "longdep_qa": 43, "shortdep_cloze": 94, "longdep_summarization": 5}
    assert loogle_all.skipped == {}
    assert len({s.id for s in samples}) == len(samples)
    assert groups_are_consecutive(samples)
    # the same document in shortdep_qa and longdep_qa: one group, questions of both tasks
    picardo = {s.task for s in samples if s.metadata["title"] == "José Luis Picardo"}
    assert picardo == {"shortdep_qa", "longdep_qa"}
    assert len({s.group for s in samples if s.metadata["title"] == "José Luis Picardo"}) == 1
    assert len({s.group for s in samples}) == 19  # 20 document rows, one document twice


@real
def test_real_loogle_evidence_is_aligned(loogle_all):
    samples = loogle_all.samples
    stats = evidence_stats(samples)
    pieces = sum(stats.values())
    kept = stats["exact"] + stats["tokens"] + stats["fuzzy"]
    assert pieces >= 200 and kept / pieces >= 0.9, stats
    assert stats["exact"] >= 100
    qa = [s for s in samples if s.task in ("shortdep_qa", "longdep_qa")]
    assert sum(bool(s.evidence) for s in qa) / len(qa) >= 0.95
    for s in samples:
        if s.task in ("shortdep_cloze", "longdep_summarization"):
            assert not s.evidence  # a cloze S is the unmasked question, not evidence
        for e in s.evidence:
            assert 0 <= e.start < e.end <= len(s.context) and 0.8 <= e.quality <= 1.0
            assert s.context[e.start:e.end].strip()
    # an exact piece is found where it is
    s = next(s for s in qa if s.id == "loogle-shortdep_qa-0000-00")
    assert s.context[s.evidence[0].start:s.evidence[0].end].startswith("Picardo was born in Jerez de la Frontera")


@real
def test_real_loogle_samples_are_plausible(loogle_all):
    for s in loogle_all.samples:
        n = s.metadata["approx_tokens"]
        assert 5_000 < n < 200_000 and len(s.context) > 4 * n * 0.8
        assert (s.length_level in ("0-16k", "16k-32k")
                and s.length_level == length_level(n, (16_000, 32_000, 64_000, 128_000)))
        assert s.documents[0].start == 0 and s.documents[0].end == len(s.context)
        prompt = s.template.render(s.context, s.question)
        assert prompt.index(s.context) < (prompt.index(s.question) if s.question else len(prompt))
        if s.task == "longdep_summarization":
            assert s.question == "" and len(s.answers[0]) > 200 and s.metric == "loogle_auto"
        elif s.task == "shortdep_cloze":
            assert s.metric == "loogle_cloze" and s.reference_extra["masks"] and "<mask-" in s.question
        else:
            assert s.metric == "loogle_auto" and s.question and s.answers[0]
    assert {s.template.max_new_tokens for s in loogle_all.samples if s.task == "shortdep_qa"} == {300}


@real
def test_real_loogle_selection(loogle_all):
    res = load_benchmark({"name": "loogle", "path": str(LOOGLE), "tasks": ["longdep_qa"],
                          "levels": ["0-16k"], "limit": 3})
    assert len(res.samples) == 3 and all(s.task == "longdep_qa" and s.length_level == "0-16k" for s in res.samples)
    one = load_benchmark({"name": "loogle", "path": str(LOOGLE / "longdep_summarization.jsonl")})
    assert [s.task for s in one.samples] == ["longdep_summarization"] * 5


# ---------------------------------------------------------------- hand-written files
DOC = ("Alice Marlow was born in Leeds in 1901. She studied botany at Edinburgh.\n"
       "In 1930 she led an expedition to the Andes, where she collected 400 species of moss. "
       "Her notes were published as Mosses of the High Andes. She died in 1977 in York.")


def _original_rows():
    qa = [{"Q": "Where was Alice born?", "A": "Leeds", "S": "Alice Marlow was born in Leeds in 1901."},
          {"Q": "What did she collect?", "A": "Moss",
           "S": "In 1930 she led an expedition to the andes where she collected 400 species of moss"},
          {"Q": "Irrelevant?", "A": "x", "S": "Completely unrelated sentence about quantum chromodynamics lattices."}]
    longqa = [{"Q": "How old was she on the expedition?", "A": "29", "type": "computation",
               "S": ["Alice Marlow was born in Leeds in 1901.",
                     "In 1930 she led an expedition to the Andes......She died in 1977 in York."]}]
    cloze = [{"Q": "<mask-0> was born in Leeds.", "A": {"<mask-0>": "Alice Marlow"},
              "S": "Alice Marlow was born in Leeds."}]
    return {
        "shortdep_qa": [{"input": DOC, "title": "Alice", "qa_pairs": repr(qa), "output": "none"}],
        "longdep_qa": [{"input": DOC, "title": "Alice", "qa_pairs": repr(longqa), "output": "none"}],
        "shortdep_cloze": [{"input": DOC, "title": "Alice", "qa_pairs": str(cloze), "output": "none"}],
        "longdep_summarization": [{"input": DOC, "title": "2201.0001", "qa_pairs": "none",
                                   "output": "A botanist's life."}],
    }


def _question_rows():
    rows = {}
    for task, docs in _original_rows().items():
        out = []
        for d in docs:
            pairs = ast.literal_eval(d["qa_pairs"]) if d["qa_pairs"] != "none" else [{"Q": "", "A": d["output"]}]
            for j, qa in enumerate(pairs):
                out.append({"id": f"{task}-{j}", "doc_id": "alice", "title": d["title"], "context": d["input"],
                            "question": qa["Q"], "answer": qa["A"], "evidence": qa.get("S"), "type": qa.get("type")})
        rows[task] = out
    rows["longdep_summarization"] = [dict(r, question="") for r in rows["longdep_summarization"]]
    rows["summarization"] = rows.pop("longdep_summarization")  # the current Hub repo's file name
    return rows


def _write(folder: Path, rows: dict[str, list[dict]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, items in rows.items():
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in items),
                                             encoding="utf-8")
    return folder


@pytest.mark.parametrize("schema", ["original", "per_question"])
def test_both_schemas_give_the_same_samples(tmp_path, schema):
    rows = _original_rows() if schema == "original" else _question_rows()
    folder = _write(tmp_path / ("loogle" if schema == "original" else "hub/data"), rows)
    res = load_benchmark({"name": "loogle", "path": str(folder if schema == "original" else folder.parent)})
    by_task = Counter(s.task for s in res.samples)
    assert by_task == {"shortdep_qa": 3, "longdep_qa": 1, "shortdep_cloze": 1, "longdep_summarization": 1}
    assert len({s.group for s in res.samples}) == 1 and groups_are_consecutive(res.samples)
    short = [s for s in res.samples if s.task == "shortdep_qa"]
    born, moss, unrelated = short
    assert [(e.start, e.end, e.quality) for e in born.evidence] == [(0, 39, 1.0)]
    assert born.metadata["evidence_alignment"] == {"exact": 1, "tokens": 0, "fuzzy": 0, "dropped": 0}
    # case and punctuation differ: token-exact; the span covers the sentence in the document
    assert moss.metadata["evidence_alignment"]["tokens"] == 1
    assert DOC[moss.evidence[0].start:moss.evidence[0].end].startswith("In 1930 she led an expedition to the Andes,")
    assert unrelated.evidence == [] and unrelated.metadata["evidence_alignment"]["dropped"] == 1
    longdep = next(s for s in res.samples if s.task == "longdep_qa")
    texts = [DOC[e.start:e.end] for e in longdep.evidence]
    assert texts == ["Alice Marlow was born in Leeds in 1901.", "In 1930 she led an expedition to the Andes",
                     "She died in 1977 in York."]
    assert longdep.metadata["qa_type"] == "computation" and longdep.template.max_new_tokens == 500
    cloze = next(s for s in res.samples if s.task == "shortdep_cloze")
    assert cloze.evidence == [] and cloze.reference_extra["masks"] == {"<mask-0>": "Alice Marlow"}
    assert "{'<mask-0>': 'Bob'" in cloze.template.text and cloze.template.max_new_tokens == 50
    summ = next(s for s in res.samples if s.task == "longdep_summarization")
    assert summ.question == "" and summ.answers == ["A botanist's life."] and "{question}" not in summ.template.text
    assert all(s.length_level == "0-16k" for s in res.samples)


def test_threshold_and_levels(tmp_path):
    folder = _write(tmp_path / "l", {"shortdep_qa": _original_rows()["shortdep_qa"]})
    rows = _original_rows()["shortdep_qa"]
    rows[0]["qa_pairs"] = repr([{"Q": "q", "A": "a", "S": "Alice Marlow was born in Bradford in 1901."}])
    _write(folder, {"shortdep_qa": rows})
    strict = load_benchmark({"name": "loogle", "path": str(folder), "evidence_threshold": 1.0})
    assert strict.samples[0].evidence == [] and strict.samples[0].metadata["evidence_alignment"]["dropped"] == 1
    loose = load_benchmark({"name": "loogle", "path": str(folder), "evidence_threshold": 0.8})
    e = loose.samples[0].evidence[0]
    assert 0.8 <= e.quality < 1.0 and DOC[e.start:e.end] == "Alice Marlow was born in Leeds in 1901"
    small = load_benchmark({"name": "loogle", "path": str(folder), "level_edges": [20, 40], "levels": ["40+"]})
    assert small.samples and small.samples[0].length_level == "40+"
    assert level_names([16000, 32000]) == ["0-16k", "16k-32k", "32k+"]
    assert length_level(16000, [16000, 32000]) == "0-16k" and length_level(16001, [16000, 32000]) == "16k-32k"
    assert approx_tokens(DOC) > 40


def test_evidence_pieces():
    assert evidence_pieces("One. ......Two.") == ["One.", "Two."]
    assert evidence_pieces(["A", " ", "B....C"]) == ["A", "B", "C"]
    assert evidence_pieces("Wait... then") == ["Wait... then"]


def _one_row_file(tmp_path: Path, row, name: str = "shortdep_qa.jsonl") -> Path:
    path = tmp_path / name
    path.write_text((row if isinstance(row, str) else json.dumps(row)) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("row, match", [
    ('{"input": "x", ', r"shortdep_qa\.jsonl:1: malformed JSON"),
    ({"input": DOC, "title": "t", "qa_pairs": "[{'Q': 'a', "},
     r"shortdep_qa\.jsonl:1: field 'qa_pairs': is not a Python literal"),
    ({"input": DOC, "title": "t", "qa_pairs": "__import__('os').system('true')"},
     r"field 'qa_pairs': is not a Python literal"),
    ({"input": DOC, "qa_pairs": "[{'Q': 'a', 'S': 'b'}]"}, r"field 'qa_pairs': item 0 has no 'A'"),
    ({"input": DOC, "qa_pairs": "[{'Q': 'a', 'A': 3}]"}, r"field 'qa_pairs': item 0: 'A' must be str"),
    ({"input": DOC, "qa_pairs": "[{'Q': 'a', 'A': 'b', 'S': [1]}]"}, r"item 0: 'S' must be str or list of text"),
    ({"input": 5, "qa_pairs": "[]"}, r"field 'input': must be text, got int"),
    ({"input": DOC, "qa_pairs": "none"}, r"field 'qa_pairs': a shortdep_qa row needs questions"),
    ({"title": "t"}, r"shortdep_qa\.jsonl:1: has neither 'input'"),
    ({"context": DOC, "question": "q"}, r"field 'answer': missing"),
    ({"context": DOC, "question": "q", "answer": "a", "evidence": [1, 2]}, r"field 'evidence': must be a list of text"),
])
def test_bad_input_names_file_line_and_field(tmp_path, row, match):
    path = _one_row_file(tmp_path, row)
    with pytest.raises(DataError, match=match):
        load_benchmark({"name": "loogle", "path": str(path)})


def test_bad_summary_and_cloze(tmp_path):
    path = _one_row_file(tmp_path, {"input": DOC, "title": "t", "qa_pairs": "none", "output": "none"},
                         "longdep_summarization.jsonl")
    with pytest.raises(DataError, match="field 'output': holds no gold summary"):
        load_benchmark({"name": "loogle", "path": str(path)})
    path = _one_row_file(tmp_path, {"input": DOC, "qa_pairs": "[{'Q': '<mask-0>', 'A': {}}]"}, "shortdep_cloze.jsonl")
    with pytest.raises(DataError, match="field 'A'.*mask"):
        load_benchmark({"name": "loogle", "path": str(path)})


def test_paths_and_config_errors(tmp_path):
    with pytest.raises(DataError, match="cannot tell the LooGLE task"):
        load_benchmark({"name": "loogle", "path": str(_one_row_file(tmp_path, {"input": DOC}, "mystery.jsonl"))})
    with pytest.raises(DataError, match="no such file or folder"):
        load_benchmark({"name": "loogle", "path": str(tmp_path / "missing")})
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="holds none of the task files"):
        load_benchmark({"name": "loogle", "path": str(tmp_path / "empty")})
    with pytest.raises(ValueError, match="unknown keys"):
        load_benchmark({"name": "loogle", "path": str(tmp_path), "input_path": "x"})
    with pytest.raises(ValueError, match="available"):
        load_benchmark({"name": "loogle", "path": str(tmp_path), "tasks": ["timeline_reorder"]})
    with pytest.raises(ValueError, match="available"):
        load_benchmark({"name": "loogle", "path": str(tmp_path), "levels": ["16k"]})


def test_hydra_config_composes_and_loads(tmp_path):
    from omegaconf import OmegaConf

    from tests.conftest import compose

    folder = _write(tmp_path / "l", _original_rows())
    cfg = compose(["benchmark=loogle", f"benchmark.path={folder}", "benchmark.limit=2"])
    res = load_benchmark(OmegaConf.to_container(cfg.benchmark, resolve=True))
    assert len(res.samples) == 2
