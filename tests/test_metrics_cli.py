"""The rescoring CLI: input fields, output object, per-sample file, malformed lines."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from eval.score import main

REPO = Path(__file__).resolve().parents[1]


def _write(path: Path, lines: list) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x, ensure_ascii=False)) + "\n" for x in lines),
                    encoding="utf-8")
    return path


def _run(capsys, *argv) -> tuple[int, dict | None, str]:
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, (json.loads(out.out) if out.out.strip() else None), out.err


def test_lveval_file_with_suffix_keywords_and_per_sample(tmp_path, capsys):
    f = _write(tmp_path / "in.jsonl", [
        {"pred": "Paris", "answers": ["Paris", "ignored"], "gold_ans": "Paris"},
        {"pred": "London", "answers": ["Paris"], "answer_keywords": "Paris"},
        {"pred": "the capital is Paris", "answers": ["Paris"]},
    ])
    per = tmp_path / "per.jsonl"
    code, out, _ = _run(capsys, "--benchmark", "lveval", "--task", "hotpotwikiqa_mixup_16k", "--per-sample", per, f)
    assert code == 0
    assert out["benchmark"] == "lveval" and out["task"] == "hotpotwikiqa_mixup_16k" and out["n"] == 3
    assert out["score"] == 50.0  # 1, gated 0, F1 0.5
    lo, hi = out["ci95"]
    assert 0 <= lo <= out["score"] <= hi <= 100
    assert "f1" in out and "keyword_recall" in out
    rows = [json.loads(x) for x in per.read_text().splitlines()]
    assert [r["line"] for r in rows] == [1, 2, 3]
    assert [r["score"] for r in rows] == [1.0, 0.0, pytest.approx(0.5)]


def test_prediction_field_and_answer_string(tmp_path, capsys):
    f = _write(tmp_path / "in.jsonl", [{"output": "北京", "answer": "北京"}, {"output": "上海", "answer": "北京"}])
    code, out, _ = _run(capsys, "--benchmark", "lveval", "--task", "cmrc_mixup", "--prediction-field", "output", f)
    assert code == 0 and out["score"] == 50.0 and out["n"] == 2


def test_malformed_line_names_file_and_line_and_exits_2(tmp_path, capsys):
    f = _write(tmp_path / "bad.jsonl", [{"prediction": "x", "answers": ["x"]}, "{not json",
                                        {"prediction": 3, "answers": ["x"]}])
    code, out, err = _run(capsys, "--benchmark", "synthetic", "--task", "qa", f)
    assert code == 2 and out is None
    assert f"{f}:2" in err
    code, out, err = _run(capsys, "--benchmark", "synthetic", "--task", "qa", "--skip-bad", "--per-sample",
                          tmp_path / "p.jsonl", f)
    assert code == 0 and out["n"] == 1 and out["skipped_bad"] == 2 and out["score"] == 100.0
    rows = [json.loads(x) for x in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert [r["line"] for r in rows] == [1, 2, 3] and "error" in rows[1] and "error" in rows[2]


def test_missing_reference_is_malformed(tmp_path, capsys):
    f = _write(tmp_path / "in.jsonl", [{"prediction": "a"}])
    code, _, err = _run(capsys, "--benchmark", "lveval", "--task", "factrecall_en", f)
    assert code == 2 and ":1:" in err and "answers" in err


def test_unknown_task_exits_2(tmp_path, capsys):
    f = _write(tmp_path / "in.jsonl", [{"prediction": "a", "answers": ["a"]}])
    code, _, err = _run(capsys, "--benchmark", "clongeval", "--task", "nope", f)
    assert code == 2 and "unknown CLongEval task" in err


def test_clongeval_response_field_api_errors_and_variants(tmp_path, capsys):
    f = _write(tmp_path / "in.jsonl", [
        {"id": "a", "answer": "张三", "response_some-model": "张三"},
        {"id": "b", "answer": "张三", "response_some-model": "HTTP_ERROR after 5 tries"},
        {"id": "c", "answer": "张三", "response_some-model": "李四"},
    ])
    code, out, _ = _run(capsys, "--benchmark", "clongeval", "--task", "table_querying", f)
    assert code == 0 and out["n"] == 2 and out["excluded_api_errors"] == 1 and out["score"] == 50.0
    code, out, _ = _run(capsys, "--benchmark", "clongeval", "--task", "table_querying", "--variant", "strict", f)
    assert out["n"] == 3 and out["score"] == round(100 / 3, 2)


def test_module_entry_point_runs(tmp_path):
    f = _write(tmp_path / "in.jsonl", [{"prediction": "北京", "answers": ["北京"]}])
    proc = subprocess.run(
        [sys.executable, "-m", "experiments.score", "--benchmark", "lveval", "--task", "factrecall_zh_32k", str(f)],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["score"] == 100.0


def test_ci95_resamples_documents_when_lines_name_one(tmp_path, capsys):
    lines = []
    for d in range(12):  # all questions of a document right or all wrong: they move together
        for q in range(5):
            right = d % 3 != 0
            lines.append({"id": f"{d}-{q}", "prediction": "x" if right else "y", "answers": ["x"], "group": f"doc{d}"})
    path = tmp_path / "p.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    code, grouped, _ = _run(capsys, "--benchmark", "synthetic", "--task", "kv", str(path))
    code2, flat, _ = _run(capsys, "--benchmark", "synthetic", "--task", "kv", "--group-field", "", str(path))
    assert code == code2 == 0
    assert grouped["n_groups"] == 12 and flat["n_groups"] == 60
    width = lambda out: out["ci95"][1] - out["ci95"][0]  # noqa: E731
    assert width(grouped) > 1.5 * width(flat)
