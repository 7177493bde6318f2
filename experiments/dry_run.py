"""A pre-flight estimate before a paid sweep: `python -m experiments.run ... run.dry_run=true` (issue 38, item 9).

It loads the benchmark, builds the arm (chunks, embeds, indexes, retrieves), and counts every prompt with the
run's tokenizer, exactly as the run would build it, but calls no generator: the generator is wrapped in
`TokenCounter`, which answers token counts and refuses to generate. Per config point it prints (and writes to
`dry_run.json` in the run folder, no records) the questions, documents, prompt tokens, output tokens and dollars under
the run's price (`price=`): without provider caching, and with it where the price prices it (a per-token price with a
cached rate whose provider caches without marks; long context's document written by a document's first question and
read by the others, as `llm.cost.PerTokenCost.cache_terms` bills it). An hourly price on a latency basis needs measured
time: no dollars.

Output tokens cannot be counted before a model writes them, so each answer's are expected (`expected_output`):
- the response cache's answer to this very prompt, where an earlier run left one (exact: the run will reuse it);
- else an answer that restates the question and gives the reference: the question's tokens plus the reference
  answer's, at most the prompt's `max_new_tokens` (SmolLM2's answers on the demo and on `make decide`'s example came
  out 1-20% longer than this, so the figure leans low for a chatty model and high for one that answers in a word);
- else (no reference) `max_new_tokens`.
The bound (`max_new_tokens` for every answer, what a paid run can reach) is printed beside the expectation, and
dollars are given for both.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from experiments.arms import ROLE_LONGCTX
from experiments.records import write_json_atomic
from llm.cache import CachedGenerator, response_key
from llm.cost import CostModel, HourlyCost, PerTokenCost
from llm.factory import SampledGenerator

log = logging.getLogger(__name__)


class TokenCounter:
    """The run's generator for everything but generating: `generates` is False, so the arms count each prompt
    (`prompt_tokens`) instead of asking for an answer; `generate` refuses."""

    generates = False

    def __init__(self, generator):
        self._generator = generator

    def __getattr__(self, name: str) -> Any:
        return getattr(self._generator, name)

    def generate(self, prompts):  # pragma: no cover - the arms never call it when `generates` is False
        raise RuntimeError("a dry run calls no generator")

    def expected_output(self, sample, prompt) -> tuple[int, str]:
        """The output tokens one answer is expected to take, and where the figure comes from (`ANSWERED`,
        `RESTATED` or `BOUND`: the module's docstring)."""
        hit = _cached_answer(self._generator, prompt)
        if hit is not None and hit.completion_tokens is not None:
            return int(hit.completion_tokens), ANSWERED
        bound = int(prompt.max_new_tokens or 0)
        refs = [a for a in (sample.answers if sample is not None else []) if isinstance(a, str) and a.strip()]
        if not refs:
            return bound, BOUND
        restated = self._generator.tokenizer.count(sample.question) + self._generator.tokenizer.count(refs[0])
        return (min(restated, bound) if bound else restated), RESTATED


ANSWERED, RESTATED, BOUND = "answered before", "question + reference", "max_new_tokens"


def _cached_answer(generator, prompt):
    """The response cache's generation for `prompt`, or None (no cache in the chain, or no entry)."""
    while generator is not None and not isinstance(generator, CachedGenerator):
        if isinstance(generator, SampledGenerator):
            return None  # several answers a prompt: each keyed by its draw, the run's first would not tell
        generator = getattr(generator, "inner", None)
    if generator is None:
        return None
    return generator.cache.get(response_key(generator.model_id, prompt, generator.inner.sampling_params()))


def priced(model: CostModel) -> bool:
    """Whether the price turns tokens into dollars (per token, or an hourly price at measured token rates)."""
    return isinstance(model, PerTokenCost) or (isinstance(model, HourlyCost) and model.basis == "throughput")


def provider_caching(model: CostModel) -> PerTokenCost | None:
    """The price that prices provider caching for long context, or None (no cached rate, or caching needs marks)."""
    if isinstance(model, PerTokenCost) and model.caches and not model.cache_control_required:
        return model
    return None


def estimate(answers_by_group: list[list[Any]], role: str, model: CostModel) -> dict[str, Any]:
    """Figures of one config point from its answers (`Answer.meta` with `prompt_tokens`, `max_new_tokens`,
    `context_tokens` and, where known, `expected_output_tokens` and its `output_source`), group by group (a group: one
    document's questions)."""
    prompt = output = expected = asked = skipped = 0
    sources: dict[str, int] = {}
    by_id: dict[str, list[int]] = {}  # each question's [prompt tokens, context tokens] (against a real run's records)
    plain = cached = at_most = 0.0
    cache = provider_caching(model) if role == ROLE_LONGCTX else None
    for answers in answers_by_group:
        fixed_paid = False
        for a in answers:
            if a.skipped is not None:
                skipped += 1
                continue
            pt, bound = int(a.meta["prompt_tokens"]), int(a.meta.get("max_new_tokens") or 0)
            out = int(a.meta.get("expected_output_tokens", bound))
            source = str(a.meta.get("output_source", BOUND))
            sources[source] = sources.get(source, 0) + 1
            asked, prompt, output, expected = asked + 1, prompt + pt, output + bound, expected + out
            if a.sample is not None:
                by_id[str(a.sample.id)] = [pt, int(a.meta.get("context_tokens") or 0)]
            if not priced(model):
                continue
            at_most += model.cost(pt, bound, 0.0) or 0.0
            one = model.cost(pt, out, 0.0) or 0.0
            plain += one
            if cache is None:
                cached += one
                continue
            fixed, per_answer = cache.cache_terms(pt, out, int(a.meta.get("context_tokens") or 0))
            cached += per_answer + (0.0 if fixed_paid else fixed)
            fixed_paid = True
    return {"questions": asked, "skipped": skipped, "documents": len(answers_by_group), "prompt_tokens": prompt,
            "prompt_tokens_mean": round(prompt / asked, 1) if asked else None, "output_tokens_expected": expected,
            "output_expected_from": sources, "output_tokens_at_most": output,
            "price": getattr(model, "name", None),
            "usd_without_provider_caching": round(plain, 6) if priced(model) else None,
            "usd_at_most": round(at_most, 6) if priced(model) else None,
            "usd_with_provider_caching": round(cached, 6) if priced(model) else None,
            "provider_caching_priced": cache is not None, "tokens_by_id": by_id}


def report(label: str, figures: dict[str, Any], run_dir: Path) -> None:
    """Print the point's estimate (one line of words, one JSON line) and write it to `dry_run.json`."""
    f = figures
    money = "no dollars: the price needs measured time (an hourly price on a latency basis) or names none"
    if f["usd_without_provider_caching"] is not None:
        money = (f"${f['usd_without_provider_caching']:.4f} under {f['price'] or 'the price'} without provider "
                 f"caching, ${f['usd_with_provider_caching']:.4f} with"
                 + ("" if f["provider_caching_priced"] else " (not priced for this arm and price: the same)")
                 + f", at most ${f['usd_at_most']:.4f}")
    sources = ", ".join(f"{n} {what}" for what, n in sorted(f["output_expected_from"].items()))
    line = (f"dry run: {label}: {f['questions']} questions over {f['documents']} documents "
            f"({f['skipped']} skipped), prompt tokens {f['prompt_tokens']:,} (mean {f['prompt_tokens_mean']}), "
            f"output tokens about {f['output_tokens_expected']:,} ({sources or 'none'}; at most "
            f"{f['output_tokens_at_most']:,}); {money}; nothing generated")
    print(line, flush=True)
    print(json.dumps({"dry_run": label, **{k: v for k, v in f.items() if k != "tokens_by_id"}},
                     sort_keys=True), flush=True)
    write_json_atomic(run_dir / "dry_run.json", {"label": label, **f})
    log.debug("%s", line)  # printed above: the console shows it once
