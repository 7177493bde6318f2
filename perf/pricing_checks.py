"""The report's pricing against hand formulas, on records built by hand (issue 38): two figures that
perf/cost_fairness.py reports and that anyone can print with `python perf/pricing_checks.py`.

- `server_q_rescale_error()`: long-context records from backends that measure no prefill of their own (an HTTP
  server with a prefix cache, vLLM offline) priced by the hour, at q = 1, 4 and 20 queries per document, against
  seconds(q) = rest + prefill / q by hand; under a throughput price (the price's rates) and under a latency price
  (the rates fitted on the runs' records). The largest relative error.
- `discounted_twice_error()`: records whose `cost_usd` a provider already discounted (Anthropic-style: the first
  question writes the document, the others read it), and records priced by the hour on a throughput basis whose
  server's prefix cache served the document: the what-if's "no prefix cache" cost per answer against every token
  at the full rate by hand. The largest relative error.

Before issue 38 (the report's pricing of commit ace636c) they printed 1.6 and 0.698; now 0 (the records follow the
token model exactly, so the fitted rates are exact too).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

try:
    import common  # noqa: F401  (run as a script: the repository root on sys.path)
except ImportError:  # imported as perf.pricing_checks
    pass

from experiments.report.pricing import Pricing
from experiments.report.runs import Run
from experiments.report.settings import Price, ReportSettings

DOC, QUESTION, ANSWER = 8000, 100, 50  # tokens: the document, the rest of the prompt, the completion
PREFILL_TPS, DECODE_TPS = 20000.0, 2000.0
USD_PER_HOUR = 3.6  # 0.001 USD a second
QS = (1, 4, 20)


def _base(i: int, arm: str) -> dict[str, Any]:
    return {"id": f"{arm}{i}", "benchmark": "b", "task": "t", "language": "en", "length_level": "8k",
            "group": f"d{i // 4}", "status": "ok", "score": 1.0, "arm": arm}


def _seconds(prefilled: int, completion: int) -> float:
    return prefilled / PREFILL_TPS + completion / DECODE_TPS


def _runs(price: dict[str, Any], cost) -> list[Run]:
    """Long context: 2 documents x 4 questions through a server whose prefix cache serves the document to every
    question but a document's first; RAG: prompts of several lengths (what a fit of the rates needs)."""
    lc, rag = [], []
    for i in range(8):
        cached = 0 if i % 4 == 0 else DOC
        pt = DOC + QUESTION
        secs = _seconds(pt - cached, ANSWER)
        lc.append({**_base(i, "longctx"), "prompt_tokens": pt, "completion_tokens": ANSWER, "context_tokens": DOC,
                   "cached_prompt_tokens": cached, "generation_s": secs, "retrieval_s": None, "latency_s": secs,
                   "cost_usd": cost(pt, ANSWER, secs, cached)})
        pt_rag, ct_rag = 400 + 300 * i, 20 + 15 * (i % 3)
        secs = _seconds(pt_rag, ct_rag)
        rag.append({**_base(i, "rag"), "prompt_tokens": pt_rag, "completion_tokens": ct_rag, "context_tokens": pt_rag
                    - QUESTION, "n_chunks": 10, "generation_s": secs, "retrieval_s": 0.0, "latency_s": secs,
                    "cached_prompt_tokens": 0,  # the same server: it says what its cache served, here nothing
                    "cost_usd": cost(pt_rag, ct_rag, secs, 0)})
    knobs_rag = {"arm": "rag", "benchmark": "b", "generator": "g", "retriever": "bm25", "chunk_size": 64, "top_k": 2}
    return [Run(Path("lc"), {"knobs": {"arm": "longctx", "benchmark": "b", "generator": "g"}, "price": price}, lc),
            Run(Path("rag"), {"knobs": knobs_rag, "price": price}, rag)]


def _pricing(price: dict[str, Any], runs: list[Run]) -> Pricing:
    return Pricing(ReportSettings(price=Price(dict(price), from_command_line=False)), runs)


def server_q_rescale_error() -> float:
    """The largest relative error of long context's cost per answer at q = 1, 4, 20 (with a prefix cache) and
    without a cache, against the hand formula, for records with no prefill time."""
    rate = USD_PER_HOUR / 3600
    prefill, rest = DOC / PREFILL_TPS, _seconds(QUESTION, ANSWER)
    worst = 0.0
    for basis in ("throughput", "latency"):
        price = {"name": "h", "kind": "hourly", "usd_per_hour": USD_PER_HOUR, "basis": basis}
        if basis == "throughput":
            price.update(prefill_tokens_per_s=PREFILL_TPS, decode_tokens_per_s=DECODE_TPS)
        runs = _runs(price, lambda pt, ct, secs, cached: secs * rate)
        pricing = _pricing(price, runs)
        lc = runs[0]
        for q in QS:
            got = pricing.mean_answer_cost_at(lc, q, prefix_cache=True)
            want = (rest + prefill / q) * rate
            worst = max(worst, abs(got - want) / want)  # type: ignore[operator]
        got = pricing.mean_answer_cost_at(lc, 10, prefix_cache=False)
        worst = max(worst, abs(got - (rest + prefill) * rate) / ((rest + prefill) * rate))  # type: ignore[operator]
    return worst


def discounted_twice_error() -> float:
    """The largest relative error of the what-if's "no prefix cache" cost per answer (and its break-even terms)
    against every token at the full rate, for records whose own cost the provider or server cache discounted."""
    worst = 0.0
    sonnet = {"name": "claude", "kind": "per_token", "input_usd_per_million": 3.0, "output_usd_per_million": 15.0,
              "cached_input_usd_per_million": 0.3, "cache_write_usd_per_million": 3.75,
              "min_cached_prefix_tokens": 1024}

    def billed(pt, ct, secs, cached):  # Anthropic: the document's first question writes it, the others read it
        written = DOC if not cached and pt > DOC else 0
        return ((pt - cached - written) * 3.0 + cached * 0.3 + written * 3.75 + ct * 15.0) / 1e6

    runs = _runs(sonnet, billed)
    full = ((DOC + QUESTION) * 3.0 + ANSWER * 15.0) / 1e6
    worst = max(worst, _no_cache_error(_pricing(sonnet, runs), runs[0], full))
    hourly = {"name": "h", "kind": "hourly", "usd_per_hour": USD_PER_HOUR, "basis": "throughput",
              "prefill_tokens_per_s": PREFILL_TPS, "decode_tokens_per_s": DECODE_TPS}
    rate = USD_PER_HOUR / 3600
    runs = _runs(hourly, lambda pt, ct, secs, cached: secs * rate)
    full = _seconds(DOC + QUESTION, ANSWER) * rate
    return max(worst, _no_cache_error(_pricing(hourly, runs), runs[0], full))


def _no_cache_error(pricing: Pricing, lc: Run, full: float) -> float:
    no_cache = pricing.mean_answer_cost_at(lc, 10, prefix_cache=False)
    terms = pricing.lc_cost_terms(lc)
    return max(abs(no_cache - full) / full, abs(terms[2] - full) / full)  # type: ignore[index,operator]


if __name__ == "__main__":
    import common as _common

    _common.emit({"server_q_rescale_error": round(server_q_rescale_error(), 6),
                  "discounted_twice_error": round(discounted_twice_error(), 6)})
