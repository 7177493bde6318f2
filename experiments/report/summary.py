"""The per-config table (summary.csv and the report's "All configs"): one row per config point, computed
from its records (metrics.json as a fallback for old runs): scores overall and per length level, the
benchmark's official aggregate, evidence figures (span-level and document-level under their own
names), tokens, latency, cost, statuses, and how much of its chunks the embedder read."""

from __future__ import annotations

from collections import Counter
from typing import Any

from eval.benchmarks import official_aggregate
from experiments import records as schema
from experiments.arms import ROLE_LONGCTX, specs
from experiments.run_metrics import quantile
from experiments.report.pricing import Pricing
from experiments.report.runs import Run, levels_of



def knob_columns() -> list[str]:
    """`arm`, then each registered arm's columns (experiments.arms.base.ArmSpec.columns), once each."""
    return list(dict.fromkeys(["arm", *(c for spec in specs() for c in spec.columns)]))


def _recall_ns(runs: list[Run], key: str = "evidence_recall") -> list[str]:
    return sorted({n for run in runs for r in run.records for n in (r.get(key) or {})}, key=int)


# column prefix of each evidence figure; document-level ones only appear when some run has them
RECALL_COLUMNS = {"evidence_recall": "recall", "doc_recall": "doc_recall"}
SHARE_COLUMNS = {"evidence_in_prompt": "in prompt", "evidence_retained": "retained",
                 "docs_in_prompt": "docs in prompt", "docs_retained": "docs retained"}


def _mean(vals: list[float]) -> float | None:
    return sum(vals) / len(vals) if vals else None


def config_rows(runs: list[Run], pricing: Pricing) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """One row per config point, computed from its records (metrics.json as a fallback for old runs)."""
    levels, ns, doc_ns = levels_of(runs), _recall_ns(runs), _recall_ns(runs, "doc_recall")
    shares = [k for k in schema.SHARE_KEYS
              if not k.startswith("docs_") or any(x.get(k) is not None for run in runs for x in run.records)]
    columns = knob_columns()
    rows = [{"config": r.label, **{k: r.knobs.get(k, "") for k in columns}, "benchmark": r.benchmark,
             "generator": r.knobs.get("generator", ""), **_scores(r, levels), **_evidence(r, ns, doc_ns, shares),
             **_means(r), **_costs(r, pricing), **_how_answers_ended(r), **_counts(r)} for r in runs]
    return rows, levels, ns


def _scores(r: Run, levels: list[str]) -> dict[str, Any]:
    """The mean score (x100), the benchmark's official aggregate, and the score per length level."""
    score = r.score_at()
    official = official_aggregate(r.benchmark, [x for x in r.records if schema.is_scored(x)])
    row = {"score": round(score, 2) if score is not None else (None if r.records else r.metrics.get("score")),
           "official": official["value"] if official else None, "official_rule": official["rule"] if official else ""}
    for lvl in levels:
        s = r.score_at(lvl)
        row[f"score_{lvl}"] = round(s, 2) if s is not None else None
    return row


def _evidence(r: Run, ns: list[str], doc_ns: list[str], shares: list[str]) -> dict[str, Any]:
    """Recall@n of the gold evidence (spans, then documents) and the evidence shares, over the answers with a
    context."""
    answered = [x for x in r.records if schema.has_context(x)]
    row: dict[str, Any] = {}
    for key in schema.RECALL_KEYS:
        for n in (ns if key == "evidence_recall" else doc_ns):
            vals = [x[key][n] for x in answered if (x.get(key) or {}).get(n) is not None]
            row[f"{RECALL_COLUMNS[key]}@{n}"] = round(_mean(vals), 4) if vals else None
    for key in shares:
        vals = [x[key] for x in answered if x.get(key) is not None]
        row[key] = round(_mean(vals), 4) if vals else None
    return row


def _means(r: Run) -> dict[str, Any]:
    """Mean prompt and completion tokens and latency, and the latency's 95th percentile."""
    row: dict[str, Any] = {}
    for key in ("prompt_tokens", "completion_tokens", "latency_s"):
        v = r.mean_of(key)
        if v is None and key == "prompt_tokens":  # retrieval-only: the prompt a generator would have received
            vals = [x[key] for x in r.records if schema.has_context(x) and x.get(key) is not None]
            v = _mean(vals) if vals else None
        row[f"{key}_mean"] = round(v, 4) if v is not None else (None if r.records else r.metrics.get(f"{key}_mean"))
    lats = [x["latency_s"] for x in r.answered() if x.get("latency_s") is not None]
    row["latency_s_p95"] = round(quantile(lats, 0.95), 4) if lats else None
    return row


def _costs(r: Run, pricing: Pricing) -> dict[str, Any]:
    c = pricing.mean_answer_cost(r)
    return {"cost_per_answer_usd": round(c, 8) if c is not None else None,
            "index_cost_per_doc_usd": round(pricing.index_cost_per_doc(r), 8)}


def _how_answers_ended(r: Run) -> dict[str, Any]:
    """The shares of answers cut (at the token limit or after a lead-in), of chunks the embedder cut, and of
    questions a routing arm sent to long context."""
    ended = [x["finish_reason"] for x in r.answered() if x.get("finish_reason")]
    cut = r.metrics.get("embedder_truncation") or {}
    routes = [x["route"] for x in r.answered() if x.get("route")]
    return {"answers_cut_share": round(sum(e in schema.CUT for e in ended) / len(ended), 4) if ended else None,
            "answers_lead_in_share": round(ended.count(schema.LEAD_IN) / len(ended), 4) if ended else None,
            "embedder_truncated_share": cut.get("share"), "embedder_input_limit": cut.get("max_input_tokens"),
            "route_longctx_share": round(routes.count(ROLE_LONGCTX) / len(routes), 4) if routes else None}


def _counts(r: Run) -> dict[str, Any]:
    """The records by status, the config hash and the run folder."""
    status = Counter(schema.status_of(x) for x in r.records)
    return {"n": len(r.records) or r.metrics.get("n"), "ok": status[schema.OK], "skipped": status[schema.SKIPPED],
            "failed": status[schema.FAILED], "retrieved": status[schema.RETRIEVED],
            "config_hash": r.metrics.get("config_hash", ""), "run_dir": str(r.path)}
