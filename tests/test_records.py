import json

import pytest

from experiments.aggregate import aggregate
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
