"""The report's pricing in words: how the runs were priced (the what-if's line, `describe`) and what the cost ratio is
priced by and what its interval is (the first screen's and the verdict's phrase, `basis`)."""

from __future__ import annotations

import json

from experiments.report.pricing import Pricing
from llm.cost import PerTokenCost, full_rate_note


def describe(p: Pricing) -> str:
    """How the runs were priced, in words: generation, provider caching, the notes, indexing (the what-if's line)."""
    return _generation(p) + _notes(p) + _indexing(p)


def _generation(p: Pricing) -> str:
    """What priced generation, provider caching included."""
    if p.source == "records":
        text = "Generation cost: each record's own `cost_usd` (the price configured when the runs were made"
        text += f": `{json.dumps(p.run_prices[0], sort_keys=True)}`)." if len(p.run_prices) == 1 else ")."
    elif p.source == "hourly":
        text = (f"Generation cost: measured {time_words(p)} x ${p.model.hourly_rate:g} per machine hour.")
    elif p.source == "tokens":
        m = p.model
        assert isinstance(m, PerTokenCost)  # what a price of kind per_token builds
        text = (f"Generation cost: ${m.input_usd_per_million:g} per million prompt tokens and "
                f"${m.output_usd_per_million:g} per million completion tokens.")
    else:
        text = "Generation cost: no price configured (price kind none)."
    if p.cache_model is not None:
        m = p.cache_model
        ttl = f" within its {m.cache_ttl_s:g}-second time-to-live" if m.cache_ttl_s else ""
        text += (f" Provider prompt caching ({m.name or 'the per-token price'}): cached prompt tokens at "
                 f"${m.cached_input_usd_per_million:g} per million, cache writes at ${m.write_rate:g}, prefixes "
                 f"from {m.min_cached_prefix_tokens} tokens; long context's document is written by a document's "
                 f"first question and read by the others{ttl}.")
    if p.source == "records" and p.time_basis:
        text += f" Time priced by {time_words(p)}."
    return text


def _notes(p: Pricing) -> str:
    """What the price left unpriced or modelled, and its tiers."""
    text = ""
    note = full_rate_note(p.model, p.full_rate_cached)
    if note:
        text += f" Note: {note}."
    if p.prefill_note:
        text += f" {p.prefill_note}."
    if p.uncacheable_note:
        text += f" {p.uncacheable_note}."
    tiers = p.model if isinstance(p.model, PerTokenCost) else p.cache_model
    if isinstance(tiers, PerTokenCost) and tiers.long_prompt_threshold_tokens is not None:
        text += (f" Prompts above {tiers.long_prompt_threshold_tokens:,} tokens are billed whole at "
                 f"${tiers.long_input_usd_per_million:g} / ${tiers.long_output_usd_per_million:g} per million.")
    if isinstance(tiers, PerTokenCost) and tiers.batch:
        text += f" Priced through the provider's batch API ({tiers.batch_discount:.0%} off every token)."
    return text


def _indexing(p: Pricing) -> str:
    """How indexing was priced: by machine time where generation is, else per embedded token."""
    if p.hourly_rate is not None:
        return (f" Indexing: embedded tokens (chunks x chunk_size per document) at {p.ix.embed_tokens_per_s:g} "
                f"tokens/s of machine time at ${p.hourly_rate:g} per hour, or the measured index build time "
                f"when the run recorded one (`index_seconds`, every retriever); without it lexical retrievers "
                f"(as the retriever declares, e.g. BM25) cost nothing.")
    return (f" Indexing: embedded tokens (chunks x chunk_size per document, an upper bound) at "
            f"${p.ix.embed_usd_per_million:g} per million for dense retrievers, "
            f"${p.ix.lexical_usd_per_million:g} for lexical ones (as the retriever declares, e.g. BM25).")


def time_words(p: Pricing) -> str:
    """The clock that priced time, in words (the report says which basis priced it)."""
    vcpus = getattr(p.time_model, "vcpus", 1)
    if p.work is not None:
        return (f"process CPU seconds / {vcpus} vCPUs, each answer charged its tokens at per-token rates one "
                f"probe measured for every run alike, so the machine's load while a config ran cannot make it "
                f"dearer: {p.work.describe()}")
    cpu = f"process CPU seconds / {vcpus} vCPUs (the work done, not the load-dependent wall clock)"
    return {"cpu": cpu + (f"; {p.work_note}" if p.work_note else ""),
            "cpu and wall": f"process CPU seconds / {vcpus} vCPUs where recorded, wall-clock seconds for the "
                            "records without CPU time (old runs, remote endpoints): mixed bases",
            "wall": "wall-clock seconds (they grow with the machine's load)"}.get(
                str(p.time_basis), "wall-clock seconds (they grow with the machine's load)")

def basis(p: Pricing) -> str:
    """Which pricing the deployment cost (the verdict's cost ratio) uses, and what its interval is, in a phrase."""
    words = interval_words(p)
    return _basis(p) + (f"; {words}" if words else "")

def interval_words(p: Pricing) -> str:
    """What the cost ratio's interval is (experiments/report/verdict/cost_ratio.py), in a phrase."""
    if p.rate_draws:
        return ("its interval: where another probe of this setup would put it, 95% of the time (the ratio priced "
                "at the probe's refits of its rates on its own noise), \"cost tie\" where it holds 1: neither "
                "arm is cheaper")
    if p.time_priced():
        return "no interval: measured time, whose noise nothing models here"
    if p.source in ("tokens", "records") or p.cache_model is not None:
        return "no interval: exact token counts at published prices (the interval is the point)"
    return ""

def _basis(p: Pricing) -> str:
    if p.cache_model is not None:
        return f"{p.cache_model.name or 'a'} per-token price with provider prompt caching for long context"
    basis = "" if p.time_basis is None else f" ({p.time_basis} time)"
    if p.work is not None:  # every answer's tokens at the probe's rates: no measured second prices it
        return (f"CPU time at the runs' probe's per-token rates at ${p.hourly_rate:g} per hour, long context "
                "with a prefix cache")
    if p.source == "records":
        return "the records' own cost_usd" + ("" if p.hourly_rate is None else
                                              f"{basis}, long context with a prefix cache")
    if p.source == "hourly":
        return (f"measured machine time{basis} at ${p.hourly_rate:g} per hour, long context with a "
                "prefix cache")
    if p.source == "tokens":
        name = p.model.name if isinstance(p.model, PerTokenCost) else None
        return f"{name or 'a'} per-token price without prompt caching"
    return "no price"
