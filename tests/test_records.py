import json

import pytest

from experiments.run_metrics import aggregate
from experiments.records import RecordStore


def rec(i, status="ok", score=1.0, level="1k"):
    return {"id": f"s{i}", "status": status, "score": score, "length_level": level, "task": "t", "language": "en",
            "prompt_tokens": 100, "completion_tokens": 5, "latency_s": 0.5, "evidence_recall": {"1": 1.0, "3": 1.0}}


def test_torn_last_line_is_repaired_and_last_record_wins(tmp_path):
    store = RecordStore(tmp_path / "records.jsonl")
    store.append(rec(1, "failed"))
    store.append(rec(2))
    store.append(rec(1))
    with open(store.path, "ab") as f:
        f.write(b'{"id": "s3", "sta')  # a kill mid-write
    loaded = store.load()
    assert set(loaded) == {"s1", "s2"} and loaded["s1"]["status"] == "ok"
    assert store.path.read_bytes().endswith(b"}\n")
    store.append(rec(3))
    assert [json.loads(line)["id"] for line in store.path.read_text().splitlines()] == ["s1", "s2", "s1", "s3"]


def test_corrupt_middle_line_names_file_and_line(tmp_path):
    store = RecordStore(tmp_path / "records.jsonl")
    store.path.write_text('{"id": "a", "status": "ok"}\nnot json\n{"id": "b", "status": "ok"}\n')
    with pytest.raises(ValueError, match=r"records.jsonl:2"):
        store.load()


def test_aggregate_counts_and_levels():
    records = [rec(1, score=1.0, level="1k"), rec(2, score=0.5, level="2k"), rec(3, "skipped", 0.0, "2k"),
               {"id": "s4", "status": "failed", "length_level": "2k", "task": "t", "language": "en", "reason": "boom"}]
    m = aggregate(records)
    assert (m["n"], m["n_ok"], m["n_skipped"], m["n_failed"]) == (4, 2, 1, 1)
    assert m["score"] == 50.0  # (1 + 0.5 + 0) / 3: a skipped sample counts 0, a failed one is excluded
    assert m["score_by_length_level"] == {"1k": 100.0, "2k": 25.0}
    assert m["evidence_recall"] == {"1": 1.0, "3": 1.0}
    assert list(m["not_ok_reasons"].values()) == [1, 1]


def test_one_reader_for_runner_and_report(tmp_path):
    from experiments.records import read_records
    from experiments.report.runs import find_runs
    from experiments.report.simulated_sweeps import write_run

    run_dir = write_run(tmp_path / "run", {"arm": "longctx", "benchmark": "b", "generator": "g"},
                        [{**rec(1), "task": "t"}, {**rec(2), "task": "t"}])
    path = run_dir / "records.jsonl"
    whole = path.read_bytes()
    # a complete last record missing only its newline is kept; with repair the newline is added
    path.write_bytes(whole[:-1])
    assert set(read_records(path)) == {"s1", "s2"} and path.read_bytes() == whole[:-1]
    assert set(read_records(path, repair=True)) == {"s1", "s2"} and path.read_bytes() == whole
    # a torn last line: ignored by both, cut off only with repair (the runner's RecordStore)
    path.write_bytes(whole + b'{"id": "s3"')
    assert [r["id"] for r in find_runs([run_dir], with_records=True)[0].records] == ["s1", "s2"]
    assert path.read_bytes().endswith(b'{"id": "s3"')
    assert set(RecordStore(path).load()) == {"s1", "s2"} and path.read_bytes() == whole
    # a bad middle line stops both readers, naming file and line
    path.write_bytes(whole + b"[1]\n" + whole)
    for load in (lambda: read_records(path), lambda: find_runs([run_dir], with_records=True)):
        with pytest.raises(ValueError, match=r"records\.jsonl:3: not a valid record"):
            load()
