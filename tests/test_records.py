import copy
import json

import pytest

from eval.metrics import NoJudgment
from experiments import records as schema
from experiments.records import RecordStore
from experiments.redact import MASK
from experiments.run_metrics import aggregate


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
    from experiments.simulate.sweeps import write_run

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


def _parts():
    base = schema.base_fields(id="s1", benchmark="b", task="t", language="en", length_level="1k", group="g",
                              arm="rag", config_hash="h", answers=["x"])
    return base, {"score": 0.5, "f1": 0.5}, {"prompt_tokens": 10, "completion_tokens": 2}, {"n_chunks": 3}


@pytest.mark.parametrize("outcome", ["values", "failed", "unparsable"])
def test_record_constructors_never_change_what_they_are_given(outcome):
    base, values, usage, meta = _parts()
    result = {"values": values, "failed": NoJudgment.failed("APIConnectionError"),
              "unparsable": NoJudgment.unparsable("no rating here")}[outcome]
    given = copy.deepcopy((base, result, usage, meta))
    rec = schema.scored_record(base, "x", result, usage, 0.01, meta, secrets={"cfg-secret"})
    assert (base, result, usage, meta) == given
    if outcome == "values":
        assert rec["status"] == schema.OK and rec["scores"] == values and rec["scores"] is not values
        rec["scores"]["f1"] = 0.0
        assert values["f1"] == 0.5  # the record holds its own copy
    else:
        assert rec["status"] == schema.FAILED and "score" not in rec and "scores" not in rec
        assert rec["prediction"] == "x" and rec["n_chunks"] == 3 and rec["cost_usd"] == 0.01


def test_every_reason_a_constructor_writes_is_masked(monkeypatch):
    """Secrets reach a reason from an error message or a judge's reply: the constructors mask them."""
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "tok-6c1f0e9b2a")
    base = _parts()[0]
    reason = "401 for tok-6c1f0e9b2a (password=hunter2hunter) at cfg-7d0a3b"
    for rec in (schema.failed_record(base, reason, {"cfg-7d0a3b"}), schema.skipped_record(base, reason, {"cfg-7d0a3b"}),
                schema.scored_record(base, "x", NoJudgment.unparsable(reason), {}, None, {}, {"cfg-7d0a3b"})):
        assert not any(s in rec["reason"] for s in ("tok-6c1f0e9b2a", "hunter2hunter", "cfg-7d0a3b")), rec["reason"]
        assert rec["reason"].count(MASK) == 3
