"""`run.timing_repeats`: re-time a sample of a run's answers for a benchmark-grade latency.

One timing per answer is noisy (identical 700-token RAG prompts took 0.48-1.03 s on an H200), and an answer
served from the response cache carries the latency measured when it was first generated, maybe on another
machine. With `run.timing_repeats: R` (default 0: off) the runner, after answering every sample, generates
the samples of `run.timing_groups` groups (documents with all their questions, so prefix reuse is timed as
it runs; spread evenly over the run's groups, hence over its length levels) R more times, with the response
cache bypassed (the generator's own warm-up stays untimed), and writes each record again with
`latency_repeats_s` (what one user waited, each time), `generation_repeats_s` (the charged generation
seconds, each time) and `cpu_repeats_s` (the charged CPU seconds, generation and retrieval, each time), and its
`cost_usd` priced again from the median of the repeats (llm/cost.py charges a re-timed record that median). The
answers' texts and scores are not touched. A resumed run re-times only groups not yet
re-timed R times. metrics.json's `latency_retimed` and the report's latency table read the per-answer
medians of the repeats.
"""

from __future__ import annotations

import logging
from statistics import median
from typing import Any

from eval.sample import Sample
from experiments import records as schema
from experiments.records import RecordStore
from llm.cost import record_cost

log = logging.getLogger(__name__)


def _groups(samples: list[Sample]) -> list[list[Sample]]:
    out: list[list[Sample]] = []
    for s in samples:
        if out and s.group and out[-1][0].group == s.group:
            out[-1].append(s)
        else:
            out.append([s])
    return out


def pick_evenly(items: list, k: int) -> list:
    """`k` of `items` at evenly spaced positions, first and last included (all of them when k >= len)."""
    if k >= len(items):
        return list(items)
    if k <= 1:
        return items[:max(k, 0)]
    return [items[round(i * (len(items) - 1) / (k - 1))] for i in range(k)]


def retime(samples: list[Sample], records: dict[str, dict[str, Any]], arm, spec, generator, store: RecordStore,
           repeats: int, groups: int, cost_model=None) -> int:
    """Re-time up to `groups` groups of answered samples `repeats` times (see the module docstring); returns the
    number of records written again."""
    if repeats <= 0 or groups <= 0:
        return 0
    if repeats > 100:
        raise ValueError(f"run.timing_repeats={repeats}: at most 100")
    inner = getattr(generator, "inner", generator)  # past the response cache: a repeat must generate
    if not getattr(inner, "generates", True):
        return 0
    answered = [g for g in _groups(samples)
                if all(schema.is_answered(records.get(s.id) or {}) for s in g)]
    chosen = [g for g in pick_evenly(answered, groups)
              if any(len(records[s.id].get("latency_repeats_s") or []) < repeats for s in g)]
    written = 0
    for group in chosen:
        user: dict[str, list[float]] = {s.id: [] for s in group}
        charged: dict[str, list[float]] = {s.id: [] for s in group}
        cpu: dict[str, list[float]] = {s.id: [] for s in group}
        for _ in range(repeats):
            for ans in spec.answer(arm, inner, group):
                if ans.text is None or not ans.usage:
                    continue
                user[ans.sample.id].append(float(ans.usage["latency_s"]))
                charged[ans.sample.id].append(float(ans.usage["generation_s"]))
                if ans.usage.get("cpu_s") is not None:
                    cpu[ans.sample.id].append(float(ans.usage["cpu_s"]))
        for s in group:
            if user[s.id]:
                rec = {**records[s.id], "latency_repeats_s": [round(x, 4) for x in user[s.id]],
                       "generation_repeats_s": [round(x, 4) for x in charged[s.id]]}
                if len(cpu[s.id]) == len(user[s.id]):
                    rec["cpu_repeats_s"] = [round(x, 4) for x in cpu[s.id]]
                rec = repriced(rec, cost_model)
                store.append(rec)
                records[s.id] = rec
                written += 1
    if written:
        log.info("re-timed %d answers of %d groups %d times each (run.timing_repeats)", written, len(chosen), repeats)
    return written


def repriced(rec: dict[str, Any], cost_model) -> dict[str, Any]:
    """A re-timed record with its `cost_usd` from the median of its re-timings (unchanged without a price, or under
    a price that does not charge time)."""
    if cost_model is None or getattr(cost_model, "kind", None) != "hourly" or rec.get("cost_usd") is None:
        return rec
    return {**rec, "cost_usd": record_cost(cost_model, rec)}


def retimed_latency(rec: dict[str, Any]) -> float | None:
    """The median of an answer's re-timed user latencies (None when it was not re-timed)."""
    xs = [float(x) for x in rec.get("latency_repeats_s") or [] if x is not None]
    return median(xs) if xs else None
