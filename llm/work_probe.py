"""The per-token CPU rates of a local generator, measured once per timing setup by a probe (llm/work_model.py).

Prompts of known lengths (16, 128 and 512 words, less in a small window) are generated in batches of two, once with
one new token and once with 8, and one prompt of 1,536 words (about 2,000 tokens) alone, with 1 and 16, through the
generator's own `generate` (its padded-batch path, tokenising included, as every arm's answers are). Each batch's CPU
seconds and tokens are one measured unit; the work model's rates are fitted on them. The result is kept in
`<cache_dir>/work_rates/<key>.json` (or the folder named by the environment variable `RAGLC_WORK_RATES_DIR`, to share
one probe between sweeps with different cache folders), keyed by the model, the timing setup (`timing_context()`:
backend, device, dtype, threads, batch policy) and the machine (host name and processor), so every config of a sweep,
and every later sweep on the same setup, is priced at the same rates whatever the machine's load while each config
ran. A probe disturbed by a neighbour's burst of work (a poor fit) is measured again (`measure`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
import time
from pathlib import Path
from typing import Any

from llm.prompt import Prompt
from llm.work_model import WorkModel, fit_work_model

log = logging.getLogger(__name__)

PROBE_VERSION = 2
NEW_TOKENS = (1, 8)
# one long prompt pins the attention terms where long context is priced: fitted on prompts of at most 512 words,
# four probes priced the demo's RAG at 0.26-0.61x of long context's cost at 1k; with it, three at 0.46-0.56x
LONG_WORDS, LONG_NEW_TOKENS = 1536, (1, 16)
WORDS = ("river stone lantern maple orbit velvet harbor quartz meadow signal ember falcon prism tundra willow "
         "cobalt saffron glacier ").split()


def probe_lengths(window: int | None) -> list[int]:
    """Prompt lengths (in words, about 1.3 tokens each) the probe measures, within the generator's window: short,
    so that the probe costs a sweep seconds (SmolLM2 on one CPU thread prefills about 200 tokens a second)."""
    top = max(1, min(512, (window or 4096) // 8))
    return sorted({min(16, top), max(1, top // 4), top})


def _text(words: int, salt: int) -> str:
    return " ".join(WORDS[(i * 7 + salt) % len(WORDS)] for i in range(words))


def probe_key(generator) -> str:
    setup = {"model": getattr(generator, "model_id", type(generator).__name__), "timing": generator.timing_context(),
             "host": platform.node(), "processor": platform.processor() or platform.machine(),
             "version": PROBE_VERSION}
    return hashlib.sha256(json.dumps(setup, sort_keys=True, default=str).encode()).hexdigest()[:16]


# a probe whose fit explains less than this share of its batches' CPU seconds was disturbed (on a busy machine a
# neighbour's burst lands on some batches: one probe beside a test run and two sweeps fitted R² 0.12, where probes
# on a steadily loaded machine fit 0.998 or better); it is measured again, at most `PROBE_TRIES` times in all
MIN_R2, PROBE_TRIES = 0.95, 3


def measure(generator) -> WorkModel | None:
    """Run the probe on `generator` (untimed warm-up first, as every arm gets) and fit the rates, again where the fit
    is poor (`MIN_R2`), keeping the best; None when the generator reports no CPU time (a remote endpoint), a probe
    prompt does not fit its window, or the batches cannot be fitted: the run then prices its measured CPU seconds,
    and says so, instead of failing."""
    best: WorkModel | None = None
    for attempt in range(1, PROBE_TRIES + 1):
        try:
            work = _measure(generator)
        except ValueError as exc:  # e.g. PromptTooLong: a window too small for the probe's prompts
            log.warning("no per-token CPU rates: the probe could not run (%s); costs are the measured CPU seconds",
                        exc)
            return None
        if work is None:
            return best
        best = work if best is None or work.r2 > best.r2 else best
        if work.r2 >= MIN_R2:
            return work
        log.info("work probe %d of %d fitted R² %.2f (under %.2f: the machine was busy): measuring again", attempt,
                 PROBE_TRIES, work.r2, MIN_R2)
    log.warning("the work probe fitted R² %.2f at best in %d tries: the machine was too busy to measure per-token "
                "rates well, so this sweep's price=cpu costs rest on rough rates (kept for the whole sweep, so its "
                "configs are still priced alike); delete the kept file to measure again on a quieter machine",
                best.r2, PROBE_TRIES)
    return best


def long_length(window: int | None) -> int | None:
    """The one long prompt's length in words (about 2,000 tokens; a quarter of a small window), or None where the
    window holds no prompt longer than the short ones."""
    words = min(LONG_WORDS, (window or 8192) // 4)
    return words if words > max(probe_lengths(window)) else None


def _measure(generator) -> WorkModel | None:
    window = getattr(generator, "context_window", None)
    generator.generate([Prompt(user=_text(8, 0), max_new_tokens=2, chat=False)])  # warm-up, untimed
    units = [(words, new, 2, salt) for salt, words in enumerate(probe_lengths(window)) for new in NEW_TOKENS]
    long = long_length(window)
    if long is not None:  # alone in its batch: it costs as much as every short batch together
        units += [(long, new, 1, 50 + new) for new in LONG_NEW_TOKENS]
    records: list[dict[str, Any]] = []
    for words, new, batch, salt in units:
        gens = generator.generate([Prompt(user=_text(words, salt + k), max_new_tokens=new, chat=False)
                                   for k in range(batch)])
        if any(g.cpu_s is None for g in gens):
            return None
        records += [{"group": f"{words}-{new}", "prompt_tokens": g.prompt_tokens,
                     "completion_tokens": g.completion_tokens, "cpu_s": g.cpu_s} for g in gens]
    return fit_work_model(records, min_units=5, source=f"a probe of {len(records)} prompts up to "
                                                       f"{max(r['prompt_tokens'] for r in records):,} tokens")


def _kept_path(generator, cache_dir: str | Path | None) -> Path | None:
    folder = os.environ.get("RAGLC_WORK_RATES_DIR") or (None if cache_dir is None else Path(cache_dir) / "work_rates")
    return None if folder is None else Path(folder) / f"{probe_key(generator)}.json"


def kept(generator, cache_dir: str | Path | None) -> WorkModel | None:
    """The generator's work rates as an earlier probe left them in the cache folder; None when there are none (or
    they cannot be read). Measures nothing: what a dry run prices `price=cpu` by."""
    path = _kept_path(generator, cache_dir)
    if path is None or not path.exists():
        return None
    try:
        return WorkModel.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, KeyError, TypeError, json.JSONDecodeError) as exc:
        log.warning("%s: unreadable work rates (%s): not used", path, exc)
        return None


def calibrated(generator, cache_dir: str | Path | None) -> WorkModel | None:
    """The generator's work rates from the cache folder, or measured now (and kept there)."""
    work = kept(generator, cache_dir)
    if work is not None:
        return work
    path = _kept_path(generator, cache_dir)
    t0 = time.perf_counter()
    work = measure(generator)
    if work is None:
        return None
    log.info("work rates measured in %.1fs: %s", time.perf_counter() - t0, work.describe())
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{time.time_ns()}.tmp")
        tmp.write_text(json.dumps(work.to_dict(), indent=1), encoding="utf-8")
        tmp.replace(path)
    return work
