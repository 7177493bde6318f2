"""A corpus question that names no documents is asked over the whole folder and counted, in the verdict's interval,
under the document its evidence lies in: said in one log line naming them, and in the load's notes."""

from __future__ import annotations

import json
import logging

from eval.benchmarks import load_benchmark


def test_questions_without_documents_are_grouped_by_their_evidence_and_said(tmp_path, caplog):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("The warranty lasts 24 months.", encoding="utf-8")
    (docs / "b.txt").write_text("Support is open from nine to five.", encoding="utf-8")
    rows = [{"id": "named", "question": "How long?", "answers": ["24 months"], "documents": ["a.txt"]},
            {"id": "by-evidence", "question": "When?", "answers": ["nine to five"],
             "evidence": ["open from nine to five"]},
            {"id": "alone", "question": "Who?", "answers": ["nobody"]}]
    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with caplog.at_level(logging.INFO, logger="eval.benchmarks.corpus"):
        result = load_benchmark({"name": "corpus", "path": str(docs), "questions": str(questions), "cache_dir": None})
    groups = {s.id: s.group for s in result.samples}
    assert groups["by-evidence"] == "b.txt" and groups["alone"] == "question:alone"
    assert result.notes["questions without documents"] == {"count": 2, "grouped by their evidence's document": 1}
    [line] = [r.getMessage() for r in caplog.records if "name no documents" in r.getMessage()]
    assert "2 question(s) name no documents" in line and "by-evidence -> b.txt" in line and "alone -> question:alone" \
        in line
