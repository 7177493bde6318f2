"""The oracle router: a virtual arm that, per sample, takes the better answer of two configs.

No real router can beat it (it peeks at the scores), so it bounds what any RAG-or-long-context
router (Self-Route included) could gain. Ties go to the cheaper config (`prefer_first`).
"""

from __future__ import annotations

from dataclasses import dataclass

from experiments.report.run_dirs import Run


@dataclass
class OracleResult:
    score: float  # x100, over the shared samples
    n: int
    share_first: float  # share of samples answered by the first (cheaper) config
    choice: dict[str, str]  # sample id -> "first" | "second"


def oracle_router(first: Run, second: Run, level: str | None = None) -> OracleResult | None:
    """Per shared sample max(score of `first`, score of `second`); ties go to `first`."""
    a, b = first.scores(level), second.scores(level)
    shared = sorted(set(a) & set(b))
    if not shared:
        return None
    choice = {i: "first" if a[i] >= b[i] else "second" for i in shared}
    best = [max(a[i], b[i]) for i in shared]
    return OracleResult(score=100 * sum(best) / len(best), n=len(shared),
                        share_first=sum(c == "first" for c in choice.values()) / len(shared), choice=choice)
