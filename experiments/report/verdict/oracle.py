"""The oracle router: a virtual arm that, per sample, takes the better answer of two configs.

No real router can beat it (it peeks at the scores), so it bounds what any RAG-or-long-context
router (Self-Route included) could gain. Ties go to the cheaper config (`prefer_first`).
"""

from __future__ import annotations

from dataclasses import dataclass

from experiments.report.runs import Run


@dataclass
class OracleResult:
    score: float  # x100, over the shared samples
    n: int
    share_first: float  # share of samples where the first config scores strictly higher
    share_second: float  # ... the second config strictly higher
    share_tie: float  # both score the same
    choice: dict[str, str]  # sample id -> "first" | "second" | "tie" (a tie is answered by the first)


def oracle_router(first: Run, second: Run, level: str | None = None) -> OracleResult | None:
    """Per shared sample max(score of `first`, score of `second`); equal scores are ties."""
    a, b = first.scores(level), second.scores(level)
    shared = sorted(set(a) & set(b))
    if not shared:
        return None
    choice = {i: "first" if a[i] > b[i] else "second" if b[i] > a[i] else "tie" for i in shared}
    best = [max(a[i], b[i]) for i in shared]
    share = lambda kind: sum(c == kind for c in choice.values()) / len(shared)  # noqa: E731
    return OracleResult(score=100 * sum(best) / len(best), n=len(shared), share_first=share("first"),
                        share_second=share("second"), share_tie=share("tie"), choice=choice)


def mean_prompt_tokens(result: OracleResult, first: Run, second: Run) -> float | None:
    """Mean prompt tokens of the oracle's answers: each sample is answered by one of its two configs
    (`first` on ties), with that config's prompt tokens."""
    by_first = {str(r["id"]): r for r in first.records}
    by_second = {str(r["id"]): r for r in second.records}
    toks = [(by_first if c in ("first", "tie") else by_second)[i].get("prompt_tokens")
            for i, c in result.choice.items()]
    toks = [t for t in toks if t is not None]
    return sum(toks) / len(toks) if toks else None
