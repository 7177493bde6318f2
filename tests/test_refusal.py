"""`refusal`: the score of a question the document cannot answer (benchmark=corpus, `task: unanswerable`)."""

from __future__ import annotations

import json

from eval.benchmarks import load_benchmark
from eval.metrics import score
from eval.sample import Reference

UNANSWERABLE = Reference(["unanswerable"], None, "en", "unanswerable")


def test_declining_scores_1_and_a_made_up_answer_0():
    for declined in ("The text does not mention how long the bridge is.", "This is not stated in the document.",
                     "Unanswerable.", "文中没有提到这座桥的长度。", "无法回答"):
        assert score("refusal", declined, UNANSWERABLE)["score"] == 1.0, declined
    for made_up in ("310 metres", "The bridge is 310 metres long.", "大桥长310米。", ""):
        assert score("refusal", made_up, UNANSWERABLE)["score"] == 0.0, made_up


def test_a_corpus_question_labelled_unanswerable_is_scored_by_refusal_whatever_benchmark_metric_says(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "bridge.txt").write_text("The bridge over the Elbe was finished in 1892. It was designed by Karl Weber.",
                                     encoding="utf-8")
    rows = [{"id": "u", "question": "How long is the bridge over the Elbe?", "answers": ["unanswerable"],
             "documents": ["bridge.txt"], "task": "unanswerable"},
            {"id": "a", "question": "Who designed the bridge?", "answers": ["Karl Weber"], "documents": ["bridge.txt"]}]
    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    for metric in (None, "qa_f1"):
        cfg = {"name": "corpus", "path": str(docs), "questions": str(questions), "metric": metric}
        by = {s.id: s for s in load_benchmark(cfg).samples}
        assert by["u"].metric == "refusal" and by["a"].metric == (metric or "contains_tokens")
