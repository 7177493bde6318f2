"""metrics.json: the aggregates of one run, computed from its records."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from statistics import mean
from typing import Any

from eval.benchmarks import official_aggregate
from eval.sample import level_sort_key
from experiments import records as schema
from experiments.retime import retimed_latency


def _pct(values: list[float]) -> float | None:
    return round(100 * mean(values), 2) if values else None


def quantile(values: list[float], q: float) -> float | None:
    """Linear-interpolation quantile (numpy's default), without numpy."""
    if not values:
        return None
    xs = sorted(values)
    pos = q * (len(xs) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def _rounded_quantile(values: list[float], q: float) -> float | None:
    value = quantile(values, q)
    return None if value is None else round(value, 4)


def aggregate(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Primary score x100 (samples an arm skipped count as 0: the arm could not serve them;
    failed samples are excluded and counted, they are retried on the next resume).

    Retrieval-only runs (`generator=none`, status `retrieved`) have no score (None) but their
    evidence recall is aggregated like that of answered samples."""
    records = list(records)
    ok = [r for r in records if schema.has_context(r)]
    answered = [r for r in records if schema.is_answered(r)]
    return {**_scores(records), **_evidence(ok), "by_length_level": _by_length_level(ok), **_usage(ok, answered),
            "not_ok_reasons": _not_ok_reasons(records)}


def _scores(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts by status, the score, by length level, task and language, and the benchmark's official aggregate."""
    scored = [r for r in records if schema.is_scored(r)]
    status = Counter(schema.status_of(r) for r in records)
    out: dict[str, Any] = {
        "n": len(records),
        "n_ok": status[schema.OK],
        "n_retrieved": status[schema.RETRIEVED],
        "n_skipped": status[schema.SKIPPED],
        "n_failed": status[schema.FAILED],
        "score": _pct([r["score"] for r in scored]),
    }
    for field in ("length_level", "task", "language"):
        groups: dict[str, list[float]] = defaultdict(list)
        for r in scored:
            groups[str(r[field])].append(r["score"])
        keys = sorted(groups, key=level_sort_key) if field == "length_level" else sorted(groups)
        out[f"score_by_{field}"] = {k: _pct(groups[k]) for k in keys}
    # the benchmark's own aggregate where it defines one (LV-Eval overall, LooGLE cloze micro), beside the mean
    out["official"] = official_aggregate(str(scored[0].get("benchmark")), scored) if scored else None
    return out


def _evidence(ok: list[dict[str, Any]]) -> dict[str, Any]:
    """Evidence recall@n (gold spans, gold documents) and the shares of evidence and distractors in the prompt."""
    out: dict[str, Any] = {}
    for key in schema.RECALL_KEYS:  # evidence_recall (gold spans), doc_recall (gold documents)
        recall: dict[str, list[float]] = defaultdict(list)
        for r in ok:
            for n, v in (r.get(key) or {}).items():
                if v is not None:
                    recall[n].append(v)
        if recall or key == "evidence_recall":
            out[key] = {n: round(mean(v), 4) for n, v in sorted(recall.items(), key=lambda kv: int(kv[0]))}
    for key in (*schema.SHARE_KEYS, "distractors_retrieved", "distractors_retained"):
        vals = [r[key] for r in ok if r.get(key) is not None]
        if vals or not key.startswith("docs_"):
            out[key] = round(mean(vals), 4) if vals else None
    return out


def _by_length_level(ok: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per length level: evidence retained, recall@n and prompt tokens."""
    by_level: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in ok:
        lvl = str(r["length_level"])
        for key, name in (("evidence_retained", "retained"), ("docs_retained", "docs_retained")):
            if r.get(key) is not None:
                by_level[lvl][name].append(r[key])
        for key, name in (("evidence_recall", "recall"), ("doc_recall", "doc_recall")):
            for n, v in (r.get(key) or {}).items():
                if v is not None:
                    by_level[lvl][f"{name}@{n}"].append(v)
        if r.get("prompt_tokens") is not None:
            by_level[lvl]["prompt_tokens"].append(r["prompt_tokens"])
    return {lvl: {k: round(mean(v), 4) for k, v in d.items()}
            for lvl, d in sorted(by_level.items(), key=lambda kv: level_sort_key(kv[0]))}


def _usage(ok: list[dict[str, Any]], answered: list[dict[str, Any]]) -> dict[str, Any]:
    """Token, latency and cost means, cut answers, latency quantiles, re-timed latencies, routes, cache hits."""
    out: dict[str, Any] = {}
    for key in ("prompt_tokens", "completion_tokens", "latency_s", "cost_usd", "context_tokens"):
        vals = [r[key] for r in ok if r.get(key) is not None]
        out[f"{key}_mean"] = round(mean(vals), 4 if key != "cost_usd" else 8) if vals else None
    ended = [r["finish_reason"] for r in answered if r.get("finish_reason")]
    # answers that hit max_new_tokens or ended after a bare lead-in: their scores may understate the arm
    out["answers_cut_share"] = round(sum(e in schema.CUT for e in ended) / len(ended), 4) if ended else None
    out["answers_lead_in_share"] = round(ended.count(schema.LEAD_IN) / len(ended), 4) if ended else None
    latencies = [r["latency_s"] for r in answered if r.get("latency_s") is not None]
    for q in (50, 90, 95):
        out[f"latency_s_p{q}"] = _rounded_quantile(latencies, q / 100)
    retimed = [x for x in (retimed_latency(r) for r in answered) if x is not None]
    if retimed:  # run.timing_repeats: the per-answer medians of the re-timed latencies
        out["latency_retimed"] = {"n": len(retimed), "p50": _rounded_quantile(retimed, 0.5),
                                  "p90": _rounded_quantile(retimed, 0.9)}
    routes = [r["route"] for r in answered if r.get("route")]
    if routes:  # selfroute: which path answered
        out["route_share"] = {k: round(routes.count(k) / len(routes), 4) for k in sorted(set(routes))}
    out["cached"] = sum(bool(r.get("cached")) for r in ok)
    # answers the response cache served with timings measured under another setup (llm/cache.py)
    out["timings_replayed"] = sum(bool(r.get("timings_replayed")) for r in answered)
    batches = [int(r["decode_batch"]) for r in answered if r.get("decode_batch") is not None]
    out["decode_batch_mean"] = round(mean(batches), 4) if batches else None  # answers decoded together, on average
    return out


def _not_ok_reasons(records: list[dict[str, Any]]) -> dict[str, int]:
    reasons: dict[str, int] = defaultdict(int)
    for r in records:
        if not schema.has_context(r):
            reasons[f"{schema.status_of(r)}: {r.get('reason', '')[:120]}"] += 1
    return dict(reasons)
