"""Whether the runs' costs were measured alike: the same batching policy, timings measured under the setup they
price, one time basis. Each way they were not is one sentence the first screen shows under the answer
(page/sections/first_screen.py), because a cost the arms were not measured alike for is not a cost to decide on.

- Batching: each record says the generator's batching policy it was answered under (`decode_policy`, the
  generator's `decode_batch`); runs (or records of one run) under different policies, or some with none recorded
  (runs from before the policy, or a backend that batches by its own rules), are named.
- Replayed timings: records the response cache served with timings measured under another setup
  (`timings_replayed`, llm/cache.py) are counted per config.
- Time basis: a CPU-time price (`basis: cpu`) over records of which some have no CPU time, charged by the wall
  clock instead (`Pricing.time_basis`).
"""

from __future__ import annotations

from collections import defaultdict

from experiments.report.pricing import Pricing
from experiments.report.runs import Run

UNRECORDED = "unrecorded"


def policy_name(policy) -> str:
    return UNRECORDED if policy is None else f"{policy} at a time"


def batch_policy_note(runs: list[Run]) -> str | None:
    """One sentence naming the configs of each batching policy when the runs hold more than one."""
    by_policy: dict[str, list[str]] = defaultdict(list)
    for run in runs:
        for policy in sorted({policy_name(r.get("decode_policy")) for r in run.answered()}):
            by_policy[policy].append(run.label)
    if len(by_policy) < 2:
        return None
    parts = "; ".join(f"{policy}: {', '.join(labels)}" for policy, labels in sorted(by_policy.items()))
    return (f"The runs mix batching policies (answers decoded together, `generator.decode_batch`; {UNRECORDED}: "
            f"runs from before the setting or a backend that batches by its own rules): {parts}. Their costs were "
            "not measured alike; rerun them under one policy before deciding on cost.")


def replayed_note(runs: list[Run]) -> str | None:
    counts = [(run.label, sum(bool(r.get("timings_replayed")) for r in run.answered()), len(run.answered()))
              for run in runs]
    named = [f"{label} ({n} of {total})" for label, n, total in counts if n]
    if not named:
        return None
    return ("Answers served from the response cache with timings measured under another setup (another device, "
            "prefix reuse or batching policy), priced as if measured here: " + "; ".join(named) + ".")


def basis_note(pricing: Pricing) -> str | None:
    if pricing.time_basis != "cpu and wall":
        return None
    return ("Time priced on mixed bases: CPU time where the records have it, the wall clock (which grows with the "
            "machine's load) for those without.")


def timing_notes(runs: list[Run], pricing: Pricing) -> list[str]:
    """The sentences the first screen shows when the runs' costs were not measured alike (none: nothing shown)."""
    generated = [run for run in runs if run.answered()]
    return [n for n in (batch_policy_note(generated), replayed_note(generated), basis_note(pricing)) if n]
