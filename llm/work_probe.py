"""The per-token CPU rates of a local generator, measured once per timing setup by a probe (llm/work_model.py).

The probe is a fixed design (`PROBE_VERSION`, `design`) run through the generator's own `generate`, so its batches
take the paths the runs' answers take (the padded batch, the shared-prefix tree, one answer alone; tokenising
included) and decode as many answers together as the runs do (`decode_batch`, the generator's policy):

- short prompts decoded together, 16 new tokens and 1 (what a decode step of the batch costs, and a prefill);
- one short prompt alone, 16 new tokens (a step of an answer decoded alone, another path);
- a shared document of a quarter of the window with a batch of questions over it, 16 new tokens each (with prefix
  reuse; without it, one prompt of that length alone): its prefill, measured on its own, pins the attention term
  where long context is priced, and its decode the document's read per step;
- a few prompts of about 270 tokens, 32 new tokens and 1 (prefill, and the decode's reads of each prompt at every
  step);
- the document at half the window; the short batches once more, to see the noise; the document at the whole window
  (at most 8,192 tokens);
- two prompts of a quarter window decoded together, 32 new tokens (the reads of long prompts in a padded batch).

The order puts what every fit needs first: a busy machine's budget leaves out the longest batches.

Each call's CPU seconds are one measured unit (a shared document's call two: its prefill, and the rest); the rates
are fitted on them, and refitted on their residuals (`llm.work_model.fit_rows`): the spread of those refits is the
interval every cost priced at the rates carries. A probe announces itself in one line (what it measures, its
budget) and keeps to its budget (`budget_s`, `run.probe_budget_s`, 90 s by default, after the model's load): before
each batch it predicts the batch's time from the batches so far and leaves out a batch that would overrun, saying so;
a busy machine gives a noisier fit and wider intervals, never a longer wait. With too few batches measured, no rates:
the run prices its measured CPU seconds and says why.

The result is kept in `<cache_dir>/work_rates/<key>.json` (or the folder named by the environment variable
`RAGLC_WORK_RATES_DIR`, to share one probe between sweeps with different cache folders), keyed by the model, the
timing setup (`timing_context()`: backend, device, dtype, threads, batch policy), the context window (which sizes the
design) and the machine (host name and processor), so every config of a sweep, and every later sweep on the same
setup, is priced at the same rates whatever the machine's load while each config ran. Delete the file to measure
again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from llm.prompt import Prompt
from llm.work_model import WorkModel, answer_features, fit_rows, shared_prefill_features

log = logging.getLogger(__name__)

PROBE_VERSION = 3
# the probe's default budget (`run.probe_budget_s`), seconds after the model's load: on 2 cores shared at load 6-7,
# SmolLM2's first batches (short ones, a quarter-window document, the mid prompts) took about 60 s at an 8k window
BUDGET_S = 90.0
NEW_TOKENS = 16
READ_TOKENS = 32  # the mid prompts' decode: long enough that reading the prompts at every step shows
SHORT_WORDS, MID_WORDS, QUESTION_WORDS = 32, 256, 12
LONG_CAP = 8192  # tokens: the longest shared document measured (a larger window is priced by extrapolation)
ROOM = 96  # tokens left in the window beside the longest document: a question and the new tokens
MIN_UNITS = 8  # measured units a fit needs (seven rates)
clock = time.perf_counter  # what the budget is read on
WORDS = ("river stone lantern maple orbit velvet harbor quartz meadow signal ember falcon prism tundra willow "
         "cobalt saffron glacier ").split()


@dataclass(frozen=True)
class Unit:
    """One batch of the design: `prompts` prompts of `words` words (`doc_words`: a shared document before each of
    them, with prefix reuse), each decoding up to `new` tokens."""

    name: str
    prompts: int
    words: int
    new: int
    doc_words: int = 0

    def proxy(self) -> float:
        """A rough size of the batch's work (prefilled tokens, their attention, decode steps), only to predict its
        time from the batches measured before it."""
        doc = 1.1 * self.doc_words
        own = 1.1 * self.words
        prefill = doc + doc * doc / 4000 + self.prompts * (own + own * own / 4000)
        return prefill + 30.0 * (self.new - 1) * (1 + (doc + own) / 4000)


def _text(words: int, salt: int) -> str:
    return " ".join(WORDS[(i * 7 + salt) % len(WORDS)] for i in range(words))


def window_of(generator) -> int:
    return int(getattr(generator, "context_window", None) or 4096)


def long_tokens(window: int) -> list[int]:
    """The shared documents' lengths in tokens: a quarter, half and all of the window (less `ROOM`), at most
    `LONG_CAP`; the ones too short to add anything to the mid prompts left out."""
    top = min(window - ROOM, LONG_CAP)
    return [n for n in sorted({top // 4, top // 2, top}) if n > 2 * MID_WORDS]


def design(generator) -> list[Unit]:
    """The probe's batches in the order they run (cheap first: a budget cut leaves out the longest)."""
    batch = max(1, int(getattr(generator, "decode_batch", 1) or 1))
    window = window_of(generator)
    per_word = _tokens_per_word(generator)
    short = min(SHORT_WORDS, max(1, int((window - NEW_TOKENS - 8) / per_word)))
    mid = min(MID_WORDS, max(1, int((window - NEW_TOKENS - 8) / per_word)))
    cheap = [Unit("batch", batch, short, NEW_TOKENS), Unit("alone", 1, short, NEW_TOKENS),
             Unit("batch-prefill", batch, short, 1)]
    mids = [Unit("mid", max(2, batch // 2), mid, READ_TOKENS), Unit("mid-prefill", max(2, batch // 2), mid, 1)]
    reuse = bool(getattr(generator, "reuse_prefix", False)) and batch > 1
    lengths = long_tokens(window)
    longs = [Unit(f"document-{n}", batch if reuse else 1, QUESTION_WORDS, NEW_TOKENS, max(1, int(n / per_word)))
             for n in lengths]
    # two prompts of a quarter window decoded together: the reads of long prompts in a padded batch (a
    # small term on a large model, which the budget may leave out; on a small one it is most of a long prompt's cost)
    rows = [Unit(f"rows-{lengths[0]}", 2, max(1, int(lengths[0] / per_word)), READ_TOKENS)] if lengths else []
    return cheap + longs[:1] + mids + longs[1:2] + cheap + longs[2:] + rows


def _tokens_per_word(generator) -> float:
    count = getattr(getattr(generator, "tokenizer", None), "count", None)
    return max(0.5, count(_text(200, 0)) / 200) if callable(count) else 1.1


def probe_key(generator) -> str:
    setup = {"model": getattr(generator, "model_id", type(generator).__name__), "timing": generator.timing_context(),
             "window": getattr(generator, "context_window", None), "host": platform.node(),
             "processor": platform.processor() or platform.machine(), "version": PROBE_VERSION}
    return hashlib.sha256(json.dumps(setup, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _rows(generator, unit: Unit, salt: int) -> list[tuple[np.ndarray, float]] | None:
    """Run one batch; its measured units `(features, CPU seconds)` (None: the generator reports no CPU time)."""
    doc = _text(unit.doc_words, salt) + " " if unit.doc_words else ""
    shared = bool(doc) and unit.prompts > 1
    prompts = [Prompt(user=doc + _text(unit.words, salt + 13 * (k + 1)), max_new_tokens=unit.new, chat=False,
                      prefix_chars=len(doc) if shared else 0) for k in range(unit.prompts)]
    gens = generator.generate(prompts)
    if any(g.cpu_s is None for g in gens):
        return None
    context = generator.tokenizer.count(doc) if shared else 0
    recs = [{"prompt_tokens": g.prompt_tokens, "completion_tokens": g.completion_tokens, "context_tokens": context,
             "prefix_group_size": g.prefix_group_size, "prefill_cpu_s": g.prefill_cpu_s,
             "decode_batch": g.decode_batch, "decode_steps": g.decode_steps} for g in gens]
    features = [answer_features(r) for r in recs]  # never None: every generation counts its tokens
    x = np.sum([f for f in features if f is not None], axis=0)
    y = float(sum(g.cpu_s or 0.0 for g in gens))  # none is None (checked above)
    prefill = gens[0].prefill_cpu_s
    if prefill is None:
        return [(x, y)]
    shared_x = shared_prefill_features(recs[0])  # the answers' shares of it sum to the whole
    return [(shared_x, float(prefill)), (x - shared_x, y - float(prefill))]


def announce(generator, units: list[Unit], budget_s: float, path: Path | None) -> str:
    """The one line a probe says before it starts."""
    per_word = _tokens_per_word(generator)
    longest = max(round(per_word * (u.doc_words + u.words)) for u in units)
    batch = max(u.prompts for u in units)
    kept = f"kept in {path} for every run of this setup" if path else "not kept (no cache folder)"
    return (f"work probe (price basis cpu, llm/work_probe.py): measuring what "
            f"{getattr(generator, 'model_id', 'the model')} computes per token on this machine before the first "
            f"answer: {len(units)} batches of prompts up to {longest:,} tokens, {batch} answers decoded together as "
            f"the runs decode them; at most {budget_s:.0f} s; {kept}")


def _measure_units(generator, units: list[Unit], budget_s: float) -> tuple[list, list[str], int, float]:
    """(measured units, names of the batches the budget left out, answers, seconds) of the design's batches."""
    rows: list[tuple[np.ndarray, float]] = []
    left_out: list[str] = []
    answers, done_proxy, t0 = 0, 0.0, clock()
    for salt, unit in enumerate(units):
        spent = clock() - t0
        predicted = unit.proxy() * spent / done_proxy if done_proxy else 0.0
        if spent + predicted > budget_s:
            left_out.append(unit.name)
            continue
        got = _rows(generator, unit, 31 * salt)
        if got is None:
            return [], [], 0, 0.0
        rows += got
        answers += unit.prompts
        done_proxy += unit.proxy()
    return rows, left_out, answers, clock() - t0


def measure(generator, budget_s: float = BUDGET_S, path: Path | None = None) -> WorkModel | None:
    """Run the probe on `generator` (announced, within `budget_s` after an untimed warm-up that loads the model)
    and fit the rates; None when the generator reports no CPU time (a remote endpoint), a probe prompt does not fit
    its window, or the budget left too few batches to fit: the run then prices its measured CPU seconds, and says
    so, instead of failing."""
    where = str(path) if path else "the work probe"
    try:
        units = design(generator)
        log.info("%s", announce(generator, units, budget_s, path))
        generator.generate([Prompt(user=_text(8, 0), max_new_tokens=2, chat=False)])  # warm-up (loads), untimed
        rows, left_out, answers, seconds = _measure_units(generator, units, budget_s)
    except ValueError as exc:  # e.g. PromptTooLong: a window too small for the probe's prompts
        log.warning("%s: no per-token CPU rates: the probe could not run (%s); costs are the measured CPU seconds",
                    where, exc)
        return None
    if not rows and not left_out:
        return None  # no CPU time reported
    longest = max((u.doc_words + u.words for u in units if u.name not in left_out), default=0)
    note = (f"the {budget_s:.0f} s budget left out {len(left_out)} of {len(units)} batches ({', '.join(left_out)}): "
            f"prompts longer than about {round(_tokens_per_word(generator) * longest):,} tokens are priced by "
            "extrapolation, with wider intervals") if left_out else ""
    work = fit_rows(rows, answers, MIN_UNITS, f"a probe of {len(units) - len(left_out)} batches, {answers} prompts",
                    note=note)
    if work is None:
        log.warning("%s: no per-token CPU rates: the probe's %.0f s budget measured %d units, fewer than the %d a "
                    "fit needs (the machine is busy); this run prices its measured CPU seconds, which move with the "
                    "load", where, budget_s, len(rows), MIN_UNITS)
        return None
    log.info("work rates measured in %.0f s: %s", seconds, work.describe())
    if left_out or work.rel_error > NOISY:
        log.warning("%s: %s%s; every cost priced at these rates carries their interval (delete the file to measure "
                    "again on a quieter machine)", where, note or "the probe's fit is noisy",
                    f" (typical error {work.rel_error:.0%})" if work.rel_error > NOISY else "")
    return work


NOISY = 0.15  # a typical error above this is said in a warning: the machine was busy while the probe measured


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


_FAILED: set[str] = set()  # probes of this process that gave no rates: not measured again for every config


def calibrated(generator, cache_dir: str | Path | None, budget_s: float = BUDGET_S) -> WorkModel | None:
    """The generator's work rates from the cache folder, or measured now (and kept there)."""
    work = kept(generator, cache_dir)
    if work is not None:
        return work
    key = probe_key(generator)
    if key in _FAILED:
        return None
    path = _kept_path(generator, cache_dir)
    work = measure(generator, budget_s, path)
    if work is None:
        _FAILED.add(key)
        return None
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{time.time_ns()}.tmp")
        tmp.write_text(json.dumps(work.to_dict(), indent=1), encoding="utf-8")
        tmp.replace(path)
    return work
