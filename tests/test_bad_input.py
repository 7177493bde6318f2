"""Bad input, everywhere data enters: the loaders, the rescoring CLI, records.jsonl and a run.

Each bad input (malformed JSON, a line that is not an object, wrong field types, missing fields,
empty contexts or questions, binary garbage, a huge line, unknown task or level names, missing
files, contexts longer than any window) must end in one clear error naming the file, the line and
the field where there is one, or be skipped and counted where the user asked for it
(`eval.score --skip-bad`). Never a traceback, never a silently wrong sample. Messages stay short
even when the offending line is huge.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

GARBAGE = bytes(random.Random(8).randrange(256) for _ in range(400)) + b"\xff\xfe\x00\x80"
HUGE = 10_000_000  # characters in the huge-line cases
MAX_MESSAGE = 2000


def _lines(path: Path, rows: list) -> Path:
    """Write rows (dicts as JSON, str and bytes verbatim), one per line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    out = b""
    for r in rows:
        out += (r if isinstance(r, bytes)
                else (r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)).encode()) + b"\n"
    path.write_bytes(out)
    return path


# ---------------------------------------------------------------- loaders
LVEVAL_GOOD = {"input": "Who founded Quourvylt?", "context": "Quourvylt was founded by Ada Brask. " * 20,
               "answers": ["Ada Brask"], "length": 200, "dataset": "factrecall_en_16k", "language": "en"}
CLONG_GOOD = {"id": 7, "context": "第一段。" * 50, "query": "谁建立了岚墨镇？", "answer": "柏琨",
              "internlm2_length": 300}

LOONG_GOOD = {"level": 1, "set": 1, "length": 100, "type": "paper", "language": "en", "question": "Paper A",
              "instruction": "Which paper is this?", "prompt_template": "{docs}\n\n{instruction}\n\n{question}",
              "doc": ["a.md"], "answer": "A", "shuffle_doc": False, "id": "item-0"}

LOOGLE_GOOD = {"context": "Alice founded the town of Quourvylt in 1850. " * 20, "question": "Who founded Quourvylt?",
               "answer": "Alice", "evidence": ["Alice founded the town of Quourvylt in 1850."], "id": "q-0",
               "title": "T"}

LOADERS = {
    # name: (file inside the data folder, a good record, required fields, the question field)
    "lveval": ("factrecall_en_16k.jsonl", LVEVAL_GOOD, ["input", "context", "answers"], "input"),
    "clongeval": ("1-1_long_story_qa/small.jsonl", CLONG_GOOD, ["id", "context", "answer"], "query"),
    "loong": ("loong.jsonl", LOONG_GOOD, ["level", "type", "question", "instruction", "prompt_template", "doc", "id"],
              "question"),
    "loogle": ("shortdep_qa.jsonl", LOOGLE_GOOD, ["context", "question", "answer"], "question"),
}
WRONG_TYPES = [123, 4.5, True, None, ["x"], {"a": 1}]


def _load(name: str, path: Path, **extra):
    pytest.importorskip(f"eval.benchmarks.{name}")
    from eval.benchmarks import load_benchmark

    if name == "loong":  # Loong reads its documents from a folder: give the good record its paper
        folder = path.parent if path.is_file() else path
        (folder / "doc" / "paper").mkdir(parents=True, exist_ok=True)
        (folder / "doc" / "paper" / "a.md").write_text("# Paper A\nbody\n", encoding="utf-8")

    return load_benchmark({"name": name, "path": str(path), **extra})


def field_id_is_checked(name: str) -> bool:
    """Loaders that refuse a repeated id: the bad line gets its own id, so the error is about the bad field."""
    return name in ("loong", "clongeval", "loogle")


def _bad_cases(name: str):
    fname, good, required, question = LOADERS[name]
    cases = [
        ("malformed JSON", [good, '{"input": "q", "context": '], 2, None),
        ("not an object", [good, "[1, 2, 3]"], 2, None),
        ("a bare string", [good, '"just text"'], 2, None),
        ("a 5,000-digit number", [good, '{"n": ' + "7" * 5000 + "}"], 2, None),
        ("nested 100,000 deep", [good, '{"n": ' + "[" * 100_000 + "]" * 100_000 + "}"], 2, None),
        ("a lone surrogate", [good, json.dumps({**good, question: "who\ud800?"})], 2, question),
    ]
    if "id" in good and field_id_is_checked(name):
        good_second = {**good, "id": "item-bad" if isinstance(good["id"], str) else 99}
    else:
        good_second = good
    for field in required:
        cases.append((f"missing {field}", [good, {k: v for k, v in good_second.items() if k != field}], 2, field))
        if isinstance(good[field], list):  # a list of text
            wrong = [123, "text", None, {"a": 1}, [1], ["ok", None]]
        elif field == "id" and isinstance(good[field], int):  # text or a number
            wrong = [True, None, ["x"], {"a": 1}]
        elif isinstance(good[field], int):
            wrong = ["1", 4.5, True, None, ["x"], {"a": 1}, 99]
        else:
            wrong = WRONG_TYPES
        for value in wrong:
            cases.append((f"{field} = {value!r}", [good, {**good_second, field: value}], 2, field))
    return cases


def _case_params():
    return [pytest.param(name, *case[1:], id=f"{name}: {case[0]}") for name in LOADERS for case in _bad_cases(name)]


@pytest.mark.parametrize("name, rows, line, field", _case_params())
def test_loader_names_file_line_and_field(tmp_path, name, rows, line, field):
    fname = LOADERS[name][0]
    path = _lines(tmp_path / fname, rows)
    with pytest.raises(ValueError) as err:
        _load(name, path)
    message = str(err.value)
    assert path.name in message and f":{line}" in message, message
    if field:
        assert repr(field) in message or f"'{field}'" in message or field in message, message
    assert len(message) < MAX_MESSAGE


@pytest.mark.parametrize("name", list(LOADERS))
def test_loader_reads_the_good_record(tmp_path, name):
    """The base of every bad case loads: the failures above are about the bad line."""
    fname, good, _, _ = LOADERS[name]
    second = ({**good, "id": 8} if name == "clongeval"
              else {**good, "id": "item-1"} if name in ("loong", "loogle") else good)
    result = _load(name, _lines(tmp_path / fname, [good, second]))
    assert len(result.samples) == 2


def test_loong_missing_documents_are_skipped_and_counted(tmp_path):
    rows = [LOONG_GOOD, {**LOONG_GOOD, "doc": ["a.md", "gone.md"], "id": "item-1"},
            {**LOONG_GOOD, "type": "financial", "doc": ["NOBODY"], "id": "item-2"}]
    result = _load("loong", _lines(tmp_path / "loong.jsonl", rows))
    assert len(result.samples) == 1 and sum(result.skipped.values()) == 2, result.skipped


@pytest.mark.parametrize("doc", ["", " ", ".", "sub", "sub/", "a\x00.md", "../loong.jsonl", "/etc/passwd"])
def test_loong_document_names_that_are_no_file_names(tmp_path, doc):
    """A Loong paper name that is empty, a folder, holds a NUL or leaves the folder: an error naming line and
    field (and, with skip_bad, a skipped record), never an OS error."""
    (tmp_path / "doc" / "paper" / "sub").mkdir(parents=True)
    path = _lines(tmp_path / "loong.jsonl", [LOONG_GOOD, {**LOONG_GOOD, "doc": [doc], "id": "item-1"}])
    with pytest.raises(ValueError, match=r"loong\.jsonl:2: field 'doc'"):
        _load("loong", path)
    result = _load("loong", path, skip_bad=True)
    assert len(result.samples) == 1 and result.skipped == {"bad records": 1}


def test_json_array_file_items_are_records_too(tmp_path):
    """A `.json` array: an item that is no object is named by its position and skippable like a line."""
    items = [LOOGLE_GOOD, [1, 2], {**LOOGLE_GOOD, "id": "item-2"}]
    path = tmp_path / "shortdep_qa.json"
    path.write_text(json.dumps(items))
    with pytest.raises(ValueError, match=r"shortdep_qa\.json:2: item 2 of the JSON array is list"):
        _load("loogle", path)
    result = _load("loogle", path, skip_bad=True)
    assert len(result.samples) == 2 and result.skipped == {"bad records": 1}


@pytest.mark.parametrize("name", list(LOADERS))
def test_loader_binary_garbage_names_file_and_line(tmp_path, name):
    fname, good, _, _ = LOADERS[name]
    path = _lines(tmp_path / fname, [good, GARBAGE])
    with pytest.raises(ValueError) as err:
        _load(name, path)
    assert path.name in str(err.value) and ":2" in str(err.value), str(err.value)


@pytest.mark.parametrize("name", list(LOADERS))
def test_skip_bad_skips_and_counts_every_bad_record(tmp_path, name, caplog):
    """benchmark.skip_bad=true: bad lines of every kind are skipped, counted and named; good ones load."""
    fname, good, required, _ = LOADERS[name]

    def good_row(i):
        return ({**good, "id": 10 + i} if name == "clongeval"
                else {**good, "id": f"item-{i}"} if name in ("loong", "loogle") else good)

    bad = [GARBAGE.replace(b"\n", b" "), "not json", "[1, 2]",
           {k: v for k, v in good_row(7).items() if k != required[-1]},
           {**good_row(8), required[-1]: {"a": 1}}]
    path = _lines(tmp_path / fname, [good_row(0), *bad, good_row(1)])
    with pytest.raises(ValueError, match=rf"{path.name}:2"):
        _load(name, path)  # the default: the first bad line stops the load, named
    with caplog.at_level(logging.WARNING, logger="eval.benchmarks"):
        result = _load(name, path, skip_bad=True)
    assert len(result.samples) == 2 and result.skipped.get("bad records") == len(bad), result.skipped
    warning = " ".join(r.getMessage() for r in caplog.records if "bad records" in r.getMessage())
    assert f"{path.name}:2" in warning and "not UTF-8" in warning and "+2 more" in warning, warning


@pytest.mark.parametrize("name", list(LOADERS))
def test_loader_huge_bad_line_gives_a_short_message(tmp_path, name):
    fname, good, _, _ = LOADERS[name]
    path = _lines(tmp_path / fname, [good, '{"context": "' + "x" * HUGE])  # never closed
    with pytest.raises(ValueError) as err:
        _load(name, path)
    assert path.name in str(err.value) and ":2" in str(err.value) and len(str(err.value)) < MAX_MESSAGE


@pytest.mark.parametrize("name", list(LOADERS))
def test_loader_huge_valid_context_loads(tmp_path, name):
    """A context longer than any window is data, not an error: it loads whole."""
    fname, good, _, _ = LOADERS[name]
    if name == "loong":
        folder = tmp_path
        _load(name, _lines(folder / fname, [good]))  # writes the paper
        (folder / "doc" / "paper" / "a.md").write_text("# Paper A\n" + "body text. " * (HUGE // 44), encoding="utf-8")
        from eval.benchmarks import load_benchmark

        assert len(load_benchmark({"name": "loong", "path": str(folder)}).samples[0].context) > HUGE // 4
        return
    long = {**good, "context": good["context"] * (HUGE // len(good["context"]) // 4)}
    result = _load(name, _lines(tmp_path / fname, [long]))
    assert len(result.samples[0].context) == len(long["context"])


@pytest.mark.parametrize("name", list(LOADERS))
def test_loader_empty_context_or_question(tmp_path, name, generator):
    """An empty context or question: a clear error naming the field, or a sample that keeps it
    (a question-free task, an empty document) and that both arms can still build a prompt for."""
    fname, good, _, question = LOADERS[name]
    for field in (("context",) if "context" in good else ()) + (question,):
        path = _lines(tmp_path / field / fname, [{**good, field: ""}])
        try:
            result = _load(name, path)
        except ValueError as err:
            assert path.name in str(err) and ":1" in str(err) and field in str(err), str(err)
            continue
        sample = result.samples[0]
        assert len(result.samples) == 1 and getattr(sample, "context" if field == "context" else "question") == ""
        from longctx.arm import LongContextArm, LongContextConfig

        prompt = LongContextArm(generator, LongContextConfig()).build(sample)
        assert generator.prompt_tokens(prompt) + prompt.max_new_tokens <= generator.context_window


@pytest.mark.parametrize("name", list(LOADERS))
def test_loader_unknown_task_and_level_names(tmp_path, name):
    fname, good, _, _ = LOADERS[name]
    path = _lines(tmp_path / fname, [good])
    folder = path.parent.parent if name == "clongeval" else path.parent
    with pytest.raises(ValueError, match=r"bogus_task") as err:
        _load(name, folder, tasks=["bogus_task"])
    assert "available" in str(err.value) or "known" in str(err.value) or "one of" in str(err.value), str(err.value)
    with pytest.raises((ValueError, FileNotFoundError), match=r"999k|huge_level"):
        _load(name, folder, levels=["999k" if name == "lveval" else "huge_level"])
    with pytest.raises(ValueError, match=r"bogus_task"):
        _load(name, folder, tasks="bogus_task")


@pytest.mark.parametrize("name", list(LOADERS))
def test_loader_missing_file_or_folder(tmp_path, name):
    with pytest.raises((FileNotFoundError, ValueError)) as err:
        _load(name, tmp_path / "no-such-folder")
    assert "no-such-folder" in str(err.value)


def test_synthetic_rejects_unknown_keys_levels_and_languages():
    from eval.benchmarks import load_benchmark

    base = {"name": "synthetic", "languages": ["en"], "levels": ["1k"], "questions_per_haystack": 1}
    for bad, pattern in (({"languages": ["fr"]}, r"'fr'"), ({"levels": ["huge"]}, r"'huge'"),
                         ({"colour": "red"}, r"unknown keys \['colour'\]"), ({"tasks": ["bogus"]}, r"bogus.*available"),
                         ({"limit": -1}, r"limit must be >= 0"), ({"metric": "no_such_metric"}, r"no_such_metric")):
        with pytest.raises((ValueError, KeyError), match=pattern):
            load_benchmark({**base, **bad})
    with pytest.raises(ValueError, match="available"):
        load_benchmark({"name": "no_such_benchmark"})


# ---------------------------------------------------------------- the rescoring CLI
GOOD_PRED = {"id": "a", "prediction": "Ada Brask", "answers": ["Ada Brask"]}
SCORE_CASES = [
    ("malformed JSON", '{"prediction": "x", "answers": [', "malformed JSON"),
    ("not an object", "[1, 2]", "a record must be a JSON object"),
    ("a 5,000-digit number", '{"prediction": "x", "answers": ["x"], "n": ' + "7" * 5000 + "}", "unreadable JSON"),
    ("nested 100,000 deep", '{"prediction": "x", "answers": ' + "[" * 100_000 + "]" * 100_000 + "}",
     "nested too deeply"),
    ("a lone surrogate", '{"prediction": "x\\ud800", "answers": ["x"]}', "field 'prediction': holds a lone surrogate"),
    ("prediction is a list", {"prediction": ["x"], "answers": ["x"]}, "prediction must be a string"),
    ("prediction is null", {"prediction": None, "answers": ["x"]}, "prediction must be a string"),
    ("answers is a number", {"prediction": "x", "answers": 3}, "answers"),
    ("an answer is a dict", {"prediction": "x", "answers": [{"a": 1}]}, "answer must be text"),
    ("no reference", {"prediction": "x"}, "no reference"),
    ("no prediction", {"answers": ["x"]}, "no prediction"),
    ("keywords are a list", {"prediction": "x", "answers": ["x"], "answer_keywords": ["x"]},
     "keywords must be a string"),
    ("huge malformed line", '{"prediction": "' + "x" * 1_000_000, "malformed JSON"),
]


def _score(argv, capsys):
    from eval.score import main

    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("row, expected", [pytest.param(r, e, id=n) for n, r, e in SCORE_CASES])
def test_score_cli_bad_line_stops_with_file_and_line(tmp_path, capsys, row, expected):
    path = _lines(tmp_path / "preds.jsonl", [GOOD_PRED, "", row, GOOD_PRED])
    code, out, err = _score(["--benchmark", "synthetic", "--task", "single_hop", str(path)], capsys)
    assert code == 2 and out == ""
    assert re.search(rf"preds\.jsonl:3: .*{re.escape(expected)}", err), err
    assert "Traceback" not in err and len(err) < MAX_MESSAGE


def test_score_cli_skip_bad_skips_and_counts(tmp_path, capsys):
    rows = [GOOD_PRED] + [r for _, r, _ in SCORE_CASES] + [{**GOOD_PRED, "prediction": ""}, {**GOOD_PRED, "id": "b"}]
    path = _lines(tmp_path / "preds.jsonl", rows)
    per_sample = tmp_path / "per.jsonl"
    code, out, err = _score(["--benchmark", "synthetic", "--task", "single_hop", "--skip-bad", "--per-sample",
                             str(per_sample), str(path)], capsys)
    assert code == 0, err
    summary = json.loads(out)
    assert summary["skipped_bad"] == len(SCORE_CASES) and summary["n"] == 3
    assert err.count("skipping") == len(SCORE_CASES)
    rows_out = [json.loads(line) for line in per_sample.read_text().splitlines()]
    assert [r["line"] for r in rows_out] == list(range(1, len(rows) + 1))
    assert sum("error" in r for r in rows_out) == len(SCORE_CASES)


def test_score_cli_empty_and_missing_files(tmp_path, capsys):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    code, out, err = _score(["--benchmark", "synthetic", "--task", "single_hop", str(empty)], capsys)
    assert code == 0 and json.loads(out)["n"] == 0 and json.loads(out)["score"] is None
    code, out, err = _score(["--benchmark", "synthetic", "--task", "single_hop", str(tmp_path / "nope.jsonl")], capsys)
    assert code == 2 and "nope.jsonl" in err and "no such file" in err
    code, out, err = _score(["--benchmark", "lveval", "--task", "no_such_task", str(empty)], capsys)
    assert code == 2 and "no_such_task" in err


@pytest.mark.parametrize("skip_bad", [False, True])
def test_score_cli_binary_garbage(tmp_path, capsys, skip_bad):
    path = _lines(tmp_path / "preds.jsonl", [GOOD_PRED, GARBAGE, GOOD_PRED])
    code, out, err = _score(["--benchmark", "synthetic", "--task", "single_hop", *(["--skip-bad"] if skip_bad else []),
                             str(path)], capsys)
    if skip_bad:
        assert code == 0 and json.loads(out)["skipped_bad"] >= 1 and json.loads(out)["n"] == 2
    else:
        assert code == 2 and "preds.jsonl:2" in err


# ---------------------------------------------------------------- records.jsonl
def test_records_with_bad_lines_name_file_and_line(tmp_path):
    from experiments.records import RecordStore

    ok = json.dumps({"id": "a", "status": "ok"})
    for bad in ("not json", "[1]", '{"status": "ok"}', GARBAGE.replace(b"\n", b" "), "x" * 5_000_000):
        path = _lines(tmp_path / "records.jsonl", [ok, bad, ok])
        with pytest.raises(ValueError, match=r"records\.jsonl:2: not a valid record") as err:
            RecordStore(path).load()
        assert len(str(err.value)) < MAX_MESSAGE
    # garbage without a newline at the end is a torn tail: cut, and the records before it kept
    path = tmp_path / "records.jsonl"
    path.write_bytes((ok + "\n").encode() + GARBAGE.replace(b"\n", b" "))
    assert list(RecordStore(path).load()) == ["a"] and path.read_bytes() == (ok + "\n").encode()


# ---------------------------------------------------------------- a real run
def _run(args, timeout=300):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "experiments.run", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_run_with_a_bad_data_line_exits_with_one_clear_line(tmp_path, tiny_llm):
    pytest.importorskip("eval.benchmarks.lveval")
    path = _lines(tmp_path / "data" / "factrecall_en_16k.jsonl", [LVEVAL_GOOD, {**LVEVAL_GOOD, "answers": "Ada"}])
    res = _run(["benchmark=lveval", f"benchmark.path={path}", f"generator.model={tiny_llm}",
                f"hydra.run.dir={tmp_path / 'run'}",
                f"run.cache_dir={tmp_path / 'cache'}"])
    assert res.returncode == 2, res.stderr[-2000:]
    assert "Traceback" not in res.stderr
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and "factrecall_en_16k.jsonl:2" in last and "answers" in last, last
    assert not (tmp_path / "run" / "records.jsonl").exists()


def test_run_over_a_corrupt_records_file_exits_with_one_clear_line(tmp_path, tiny_llm):
    run_dir = tmp_path / "run"
    _lines(run_dir / "records.jsonl", [{"id": "a", "status": "ok"}, "garbage line", {"id": "b", "status": "ok"}])
    res = _run(["benchmark.languages=[en]", "benchmark.levels=[100]", "benchmark.questions_per_haystack=1",
                "generator.context_window=60", f"generator.model={tiny_llm}", f"hydra.run.dir={run_dir}",
                f"run.cache_dir={tmp_path / 'cache'}"])
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr[-2000:]
    assert "records.jsonl:2: not a valid record" in res.stderr.strip().splitlines()[-1]


def test_an_unknown_metric_is_one_line_from_the_runner(tmp_path, tiny_llm):
    """A configuration naming something no table holds (UnknownName: a KeyError to lookups, a ValueError to
    the runner) prints one `error:` line, unquoted, and exits 2; a KeyError of the code itself would not be
    caught there and keeps its traceback."""
    proc = subprocess.run(
        [sys.executable, "-m", "experiments.run", "benchmark.metric=nope", "generator=none", "arm=rag",
         f"generator.tokenizer={tiny_llm}",
         "benchmark.levels=[1k]", "benchmark.questions_per_haystack=1", "benchmark.haystacks_per_level=1",
         f"hydra.run.dir={tmp_path / 'run'}", f"run.cache_dir={tmp_path / 'cache'}"],
        capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 2, proc.stderr[-2000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert errors and errors[0].startswith("error: unknown metric 'nope'; known: "), proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
