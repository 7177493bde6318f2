"""metrics.json aggregates for the records the new arms write: retrieval-only, Self-Route, cost."""

import pytest

from experiments.run_metrics import aggregate


def _rec(i, **kw):
    return {"id": f"s{i}", "task": "t", "language": "en", "length_level": "1k", "status": "ok", "score": 1.0,
            "prompt_tokens": 100 + i, "completion_tokens": 2, "latency_s": float(i + 1), **kw}


def test_retrieval_only_records_have_recall_but_no_score():
    recs = [{"id": f"s{i}", "task": "t", "language": "en", "length_level": "1k", "status": "retrieved",
             "evidence_recall": {"1": float(i % 2), "3": 1.0}, "evidence_in_prompt": 1.0, "context_tokens": 256}
            for i in range(4)]
    m = aggregate(recs)
    assert m["score"] is None and m["n_retrieved"] == 4 and m["n_ok"] == 0
    assert m["evidence_recall"] == {"1": 0.5, "3": 1.0} and m["evidence_in_prompt"] == 1.0
    assert m["by_length_level"]["1k"]["recall@1"] == 0.5 and "prompt_tokens" not in m["by_length_level"]["1k"]
    assert m["prompt_tokens_mean"] is None and m["context_tokens_mean"] == 256 and m["not_ok_reasons"] == {}


def test_routes_cost_and_latency_percentiles():
    recs = [_rec(i, route="longctx" if i < 1 else "rag", cost_usd=0.001 * (i + 1)) for i in range(4)]
    recs.append({"id": "s9", "task": "t", "language": "en", "length_level": "1k", "status": "skipped", "score": 0.0,
                 "reason": "does not fit"})
    m = aggregate(recs)
    assert m["score"] == 80.0 and m["n_skipped"] == 1
    assert m["route_share"] == {"longctx": 0.25, "rag": 0.75}
    assert m["cost_usd_mean"] == pytest.approx(0.0025)
    assert m["latency_s_p50"] == 2.5 and m["latency_s_p95"] == pytest.approx(3.85)
    assert "route_share" not in aggregate([_rec(0)])
