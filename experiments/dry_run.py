"""A pre-flight estimate before a paid sweep: `python -m experiments.run ... run.dry_run=true` (issue 38, item 9).

It loads the benchmark, builds the arm (chunks, embeds, indexes, retrieves), and counts every prompt with the
run's tokenizer, exactly as the run would build it, but calls no generator: the generator is wrapped in
`TokenCounter`, which answers token counts and refuses to generate. Per config point it prints (and writes to
`dry_run.json` in the run folder, no records) the questions, documents, prompt tokens, output tokens and dollars under
the run's price (`price=`): without provider caching, and with it where the price prices it (a per-token price with a
cached rate whose provider caches without marks; long context's document written by a document's first question and
read by the others, as `llm.cost.PerTokenCost.cache_terms` bills it). `price=cpu` is priced at the per-token CPU
rates an earlier run's probe kept in the cache folder (llm/work_probe.py; a dry run measures nothing, so without them:
no dollars). An hourly price on a latency basis needs measured time: no dollars.

Output tokens cannot be counted before a model writes them, so each answer's are expected (`expected_output`):
- the response cache's answer to this very prompt, where an earlier run left one (exact: the run will reuse it);
- else an answer that restates the question and gives the reference: the question's tokens plus the reference
  answer's, at most the prompt's `max_new_tokens` (SmolLM2's answers on the demo and on `make decide`'s example came
  out 1-25% longer than this, so the figure leans low for a chatty model and high for one that answers in a word);
- else (no reference) `max_new_tokens`.
The bound (`max_new_tokens` for every answer, what a paid run can reach) is printed beside the expectation, and
dollars are given for both.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from eval.answers import answer_texts
from experiments.arms import ROLE_LONGCTX
from experiments.records import write_json_atomic
from llm.cache import CachedGenerator, response_key
from llm.cost import CostModel, HourlyCost, PerTokenCost
from llm.factory import SampledGenerator
from llm.work_model import WorkPriced

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
        refs = answer_texts(sample.answers if sample is not None else [])
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
    """Whether the price turns tokens into dollars (per token, an hourly price at measured token rates, or the cpu
    price at an earlier probe's per-token CPU rates)."""
    return (isinstance(model, (PerTokenCost, WorkPriced))
            or (isinstance(model, HourlyCost) and model.basis == "throughput"))


def _answer_cost(model: CostModel, prompt: int, output: int, context: int, shared_by: int, batch: int = 1) -> float:
    """One answer's dollars under `model`; `shared_by`: the answers one prefilled document is shared by (prefix
    reuse; 0 without), which the cpu price at probe rates charges as a real run's records are charged; `batch`: the
    answers decoded together with it (each charged its share of the steps)."""
    if not isinstance(model, WorkPriced):
        return model.cost(prompt, output, 0.0) or 0.0
    rec = {"prompt_tokens": prompt, "completion_tokens": output, "cpu_s": 0.0, "decode_batch": batch,
           "decode_steps": max(output - 1, 0)}
    if shared_by and context:
        rec.update(context_tokens=context, prefix_group_size=shared_by, prefill_cpu_s=0.0)
    return model.cost(prompt, output, model.charged_seconds(rec) or 0.0) or 0.0


def provider_caching(model: CostModel) -> PerTokenCost | None:
    """The price that prices provider caching for long context, or None (no cached rate, or caching needs marks)."""
    if isinstance(model, PerTokenCost) and model.caches and not model.cache_control_required:
        return model
    return None


def estimate(answers_by_group: list[list[Any]], role: str, model: CostModel,
             reuse_prefix: bool = False, decode_batch: int = 1) -> dict[str, Any]:
    """Figures of one config point from its answers (`Answer.meta` with `prompt_tokens`, `max_new_tokens`,
    `context_tokens` and, where known, `expected_output_tokens` and its `output_source`), group by group (a group: one
    document's questions). `reuse_prefix`: long context prefills each document once for its questions (the
    transformers backend's `reuse_prefix`), as the cpu price at probe rates charges it; `decode_batch`: the
    generator's batch policy (a group's questions are decoded up to that many together)."""
    prompt = output = expected = asked = skipped = 0
    sources: dict[str, int] = {}
    by_id: dict[str, list[int]] = {}  # each question's [prompt tokens, context tokens] (against a real run's records)
    plain = cached = at_most = 0.0
    cache = provider_caching(model) if role == ROLE_LONGCTX else None
    for answers in answers_by_group:
        fixed_paid = False
        asked_here = sum(1 for a in answers if a.skipped is None)
        shared_by = asked_here if reuse_prefix and role == ROLE_LONGCTX else 0
        batch = max(1, min(asked_here, decode_batch))
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
            ctx = int(a.meta.get("context_tokens") or 0)
            at_most += _answer_cost(model, pt, bound, ctx, shared_by, batch)
            one = _answer_cost(model, pt, out, ctx, shared_by, batch)
            plain += one
            if cache is None:
                cached += one
                continue
            fixed, per_answer = cache.cache_terms(pt, out, ctx)
            cached += per_answer + (0.0 if fixed_paid else fixed)
            fixed_paid = True
    return {"questions": asked, "skipped": skipped, "documents": len(answers_by_group), "prompt_tokens": prompt,
            "prompt_tokens_mean": round(prompt / asked, 1) if asked else None, "output_tokens_expected": expected,
            "output_expected_from": sources, "output_tokens_at_most": output,
            "price": getattr(model, "name", None) or getattr(getattr(model, "base", None), "name", None),
            "cpu_rates": model.work.source if isinstance(model, WorkPriced) else None,
            "usd_without_provider_caching": _usd(plain) if priced(model) else None,
            "usd_at_most": _usd(at_most) if priced(model) else None,
            "usd_with_provider_caching": _usd(cached) if priced(model) else None,
            "provider_caching_priced": cache is not None, "tokens_by_id": by_id}


def answer_usd(answers_by_group: list[list[Any]], role: str, model: CostModel, reuse_prefix: bool = False,
               decode_batch: int = 1) -> dict[str, float]:
    """Each question's expected dollars (by sample id, its expected output, without provider caching) under
    `model`, as `estimate` prices them; {} where the price puts no dollars on a prompt (`priced`). The spend cap's
    estimate (experiments/spend_cap.py)."""
    if not priced(model):
        return {}
    out: dict[str, float] = {}
    for answers in answers_by_group:
        asked = sum(1 for a in answers if a.skipped is None)
        shared_by = asked if reuse_prefix and role == ROLE_LONGCTX else 0
        for a in answers:
            if a.skipped is None and a.sample is not None:
                pt, bound = int(a.meta["prompt_tokens"]), int(a.meta.get("max_new_tokens") or 0)
                out[str(a.sample.id)] = _answer_cost(model, pt, int(a.meta.get("expected_output_tokens", bound)),
                                                     int(a.meta.get("context_tokens") or 0), shared_by,
                                                     max(1, min(asked, decode_batch)))
    return out


def _usd(amount: float) -> float:
    """Six significant digits: a small model's cpu price is fractions of a cent a point."""
    return float(f"{amount:.6g}")


def _dollars(amount: float) -> str:
    return f"${amount:.4f}" if amount >= 0.01 else f"${amount:.3g}"


# the estimates of this process's dry runs by `experiments.run._dry_run_key`: a sweep's points that build the same
# prompts (long context, repeated for every RAG knob of `make decide`'s grid) are counted once. A real run empties
# it (`forget`): its answers and probe rates change what the next estimate reads.
_ESTIMATED: dict[str, dict[str, Any]] = {}


def remember(key: str, figures: dict[str, Any]) -> None:
    _ESTIMATED[key] = figures


def forget() -> None:
    _ESTIMATED.clear()


def repeat(label: str, key: str, run_dir: Path) -> bool:
    """Report an earlier point's estimate again where this point builds the very same prompts (same key); False
    when no point of this process did."""
    figures = _ESTIMATED.get(key)
    if figures is None:
        return False
    log.info("dry run: %s builds the same prompts as an earlier point of this sweep: its estimate again", label)
    report(label, figures, run_dir)
    return True


def report(label: str, figures: dict[str, Any], run_dir: Path) -> None:
    """Print the point's estimate (one line of words, one JSON line) and write it to `dry_run.json`."""
    f = figures
    money = ("no dollars: the price needs measured time (an hourly price on a latency basis; price=cpu: the rates of "
             "a probe that the first real run measures), or names none")
    if f["usd_without_provider_caching"] is not None:
        money = (f"{_dollars(f['usd_without_provider_caching'])} under {f['price'] or 'the price'}"
                 + (f" (CPU rates from {f['cpu_rates']})" if f["cpu_rates"] else "")
                 + f" without provider caching, {_dollars(f['usd_with_provider_caching'])} with"
                 + ("" if f["provider_caching_priced"] else " (not priced for this arm and price: the same)")
                 + f", at most {_dollars(f['usd_at_most'])}")
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
