"""One config point -> records.jsonl + metrics.json in the Hydra run directory.

    python -m experiments.run                                   # the defaults
    python -m experiments.run arm=rag retriever=minilm rag.top_k=8
    python -m experiments.run -m arm=longctx,rag rag.chunk_size=128,256 rag.top_k=2,4

A rerun in the same directory resumes: samples already recorded (ok or skipped) are not redone,
failed ones are retried. A directory holding records of another configuration is refused (a
changed sweep reusing a sweep folder would otherwise mix two configurations); settings that
cannot change a record (sample selection, timeouts, retries, concurrency) do not count as
another configuration. Generations are cached across runs (`run.cache_dir`), so rerunning a
finished sweep in a new directory makes no generation call either.

Ctrl-C ends a run with one line, `interrupted: 7 of 24 answers of longctx recorded in DIR; run the same command
again to resume`, and exit code 130 (no traceback): every record written is whole, and the same command resumes.

A sample whose generation or judge call still fails after the backend's retries is recorded as
`failed` with the reason (secrets masked), counted in metrics.json, and retried on the next resume.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any, cast

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import hydra
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException
from tqdm import tqdm
from tqdm.contrib.logging import logging_redirect_tqdm

from eval import metrics
from eval.benchmarks import SELECTION_KEYS, load_benchmark, multi_document
from eval.metrics.reference_free import is_pairwise
from eval.sample import Sample
from experiments import (
    dry_run,
    folder_names,  # noqa: F401  (registers ${safe_dirname:...} before Hydra composes)
    redact,
)
from experiments import records as schema
from experiments.arms import Answer, arm_spec
from experiments.context_cuts import context_cuts, cuts_line
from experiments.dry_run import TokenCounter
from experiments.eta import TimeEstimate
from experiments.logs import set_log_level
from experiments.records import RecordStore, write_json_atomic
from experiments.retime import retime
from experiments.run_metrics import aggregate
from experiments.spend_cap import SpendCapReached, SpendGuard, say_stopped, spend_guard
from experiments.versions import run_versions
from llm.cost import HourlyCost, cache_state_note, cost_basis, full_rate_note, record_cost
from llm.priced_with import PricedWith
from llm.work_model import WorkModel
from llm.work_probe import calibrated, kept

log = logging.getLogger("experiments.run")


def arm_knobs(cfg: DictConfig) -> dict[str, Any]:
    """The settings that define this config point for its arm (what a report row shows)."""
    knobs: dict[str, Any] = {"arm": cfg.arm.name, "benchmark": cfg.benchmark.name, "generator": cfg.generator.model}
    knobs.update(arm_spec(cfg.arm.name).knobs(cfg))
    return knobs


# Settings that choose which samples run (eval.benchmarks.SELECTION_KEYS), or how patiently a backend is
# asked, but cannot change a sample's record: left out of the config hash, so changing them keeps a run resumable.
OPERATIONAL_KEYS = ("timeout_s", "max_retries", "backoff_base_s", "backoff_max_s", "max_concurrency", "stream",
                    "stream_usage", "api_key_env", "warmup")


def config_hash(cfg: DictConfig) -> str:
    """Hash of what changes this run's records: arm knobs plus the configs the arm reads."""
    def plain(node):
        return OmegaConf.to_container(node, resolve=True) if node is not None else None

    benchmark = {k: v for k, v in plain(cfg.benchmark).items() if k not in SELECTION_KEYS}
    generator = {k: v for k, v in plain(cfg.generator).items() if k not in OPERATIONAL_KEYS}
    payload = {"knobs": arm_knobs(cfg), "benchmark": benchmark, "generator": generator}
    spec = arm_spec(cfg.arm.name)
    sections = {section: plain(cfg.get(section)) for section in spec.sections}  # the config sections the arm reads
    payload.update(spec.hashed(sections, multi_document(str(cfg.benchmark.name))))
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:12]


def _consecutive_groups(samples: list[Sample]) -> list[list[Sample]]:
    groups: list[list[Sample]] = []
    for s in samples:
        if groups and s.group and groups[-1][0].group == s.group:
            groups[-1].append(s)
        else:
            groups.append([s])
    return groups


def _record(ans: Answer, knobs: dict[str, Any], chash: str, cost_model, judge=None,
            secrets: set[str] | frozenset[str] = frozenset()) -> dict[str, Any]:
    """The record of one answer, through the schema's constructors (which mask `secrets` in reasons)."""
    sample, base = ans.sample, schema.base_record(ans.sample, knobs["arm"], chash)
    if ans.skipped is not None:
        return schema.skipped_record(base, ans.skipped, secrets)
    if ans.text is None:  # retrieval only (generator=none)
        return schema.retrieved_record(base, ans.meta)
    u = ans.usage
    # charged: the generator's share of its batch plus this request's retrieval (not the user's wait), by the wall
    # clock or (price basis cpu) in process CPU seconds
    cost = record_cost(cost_model, {**ans.meta, **u}) if cost_model else None  # the arm's token counts too
    if is_pairwise(sample.metric):  # judged against another arm's answer after the sweep
        if ans.texts:
            raise ValueError("generator.samples > 1 cannot be judged pairwise (a question without references)")
        return schema.pairwise_record(base, sample.question, ans.text, u, cost, ans.meta)
    if ans.texts:  # generator.samples: every answer scored, the question's score their mean
        each = [metrics.score(sample.metric, t, sample.reference(), judge=judge) for t in ans.texts]
        return schema.sampled_record(base, ans.texts, each, u, cost, ans.meta, secrets)
    values = metrics.score(sample.metric, ans.text, sample.reference(), judge=judge)
    return schema.scored_record(base, ans.text, values, u, cost, ans.meta, secrets)


# tqdm's bar without its own remaining-time guess: the run's estimate (experiments/eta.py, which knows a cached
# answer from a generated one) is the only time estimate a user reads, never two disagreeing on one line
PROGRESS_BAR = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed} elapsed]"


def run_samples(samples: list[Sample], arm, generator, store: RecordStore, knobs: dict[str, Any], chash: str,
                progress: bool = True, cost_model=None, secrets: set[str] | frozenset[str] = frozenset(),
                judge=None, guard: SpendGuard | None = None) -> list[dict[str, Any]]:
    done = store.load()
    other = sorted({r.get("config_hash") for r in done.values()} - {chash}, key=str)
    if other:
        raise ValueError(
            f"{store.path} holds records of another configuration (config_hash {', '.join(map(str, other))}; this "
            f"run is {chash}): resuming would mix the two. Use a new hydra.run.dir / hydra.sweep.dir (cached "
            "generations make the rerun cheap) or move records.jsonl away")
    todo = [s for s in samples if not schema.is_final(done.get(s.id))]
    if len(todo) < len(samples):
        log.info("resuming: %d of %d samples already recorded", len(samples) - len(todo), len(samples))
    if guard is not None:  # run.max_usd: the estimate of the rest against the cap, before the first answer
        guard.start(done, [s.id for s in todo])
    bar = tqdm(total=len(todo), desc=f"{knobs['arm']}", unit="sample", disable=not progress, file=sys.stderr,
               dynamic_ncols=True, bar_format=PROGRESS_BAR)
    estimate = TimeEstimate(len(todo), arm_label(knobs))
    with logging_redirect_tqdm():  # a log line goes above the bar, which is redrawn at its count: the two agree
        _answer_groups(samples, todo, arm, generator, store, knobs, chash, bar, estimate,
                       (cost_model, judge, secrets), guard)
    bar.close()
    by_id = store.load()
    return [by_id[s.id] for s in samples if s.id in by_id]


def _answer_groups(samples: list[Sample], todo: list[Sample], arm, generator, store: RecordStore,
                   knobs: dict[str, Any], chash: str, bar, estimate: TimeEstimate, scoring: tuple,
                   guard: SpendGuard | None = None) -> None:
    """Answer `todo` a document's questions at a time, record each answer, and count every recorded answer on the
    bar and in the time estimate alike (`scoring`: the cost model, the judge and the secrets to mask; `guard`: the
    spend cap, checked before each document's answers and told what they cost)."""
    cost_model, judge, secrets = scoring
    spec = arm_spec(knobs["arm"])
    siblings: dict[str, list[Sample]] = {}
    for s in samples:
        if s.group:
            siblings.setdefault(s.group, []).append(s)
    # Samples over one context go to the generator together, so a backend can read the context once.
    for group in _consecutive_groups(todo):
        whole = siblings.get(group[0].group or "", group)
        if len(whole) > len(group) and hasattr(arm, "prepare"):
            arm.prepare(whole)  # resumed: the cut is sized on all the document's questions, as in an uninterrupted run
        if guard is not None:  # stop before the answers that would cross the cap
            guard.check([s.id for s in group])
        try:
            answers = spec.answer(arm, generator, group)
            records = [_record(a, knobs, chash, cost_model, judge, secrets) for a in answers]
        except Exception as err:  # recorded, counted and retried on resume
            log.exception("generation failed for %d samples of group %s", len(group), group[0].group)
            for sample in group:
                store.append(schema.failed_record(schema.base_record(sample, knobs["arm"], chash),
                                                  f"{type(err).__name__}: {err}", secrets))
            bar.update(len(group))
            estimate.answered(len(group), False)  # counted as the bar counts them; no pace from a failure
            continue
        for rec in records:
            if schema.status_of(rec) == schema.FAILED:
                log.warning("%s failed: %s", rec["id"], rec["reason"])
            if schema.status_of(rec) == schema.SKIPPED:
                log.warning("%s skipped: %s", rec["id"], rec["reason"])
            store.append(rec)
            bar.update(1)
        if guard is not None:
            guard.add(records)
        said = estimate.answered(len(records), any(schema.is_answered(r) and not r.get("cached") for r in records))
        if said:
            log.info("%s", said)


def arm_label(knobs: dict[str, Any]) -> str:
    """The config point in a few words for the log: `longctx`, `rag bm25 c256 k2`."""
    short = {"retriever": "", "chunk_size": "c", "top_k": "k"}
    return " ".join([str(knobs["arm"]), *(f"{p}{knobs[k]}" for k, p in short.items() if knobs.get(k) is not None)])


def _build_judge(cfg: DictConfig, samples: list[Sample]):
    """The judge for judge-scored metrics (None when no sample needs one): `cfg.judge` asked through
    llm's OpenAI-compatible backend (retries, whole-attempt timeout), judgments cached beside the
    response cache. Handed to the metric with each sample; nothing global. A retrieval-only run
    (`generator=none`) has no answers to judge, so it needs no judge (nor its API key)."""
    if cfg.get("judge") is None or not any(metrics.needs_judge(s.metric) for s in samples):
        return None
    if cfg.generator.get("backend") == "none":
        return None
    from llm.judge_backend import build_judge

    j = cfg.judge
    return build_judge(j.model, j.base_url, Path(cfg.run.cache_dir) / "judgments.sqlite", timeout_s=float(j.timeout_s),
                       max_retries=int(j.max_retries))


def run(cfg: DictConfig, run_dir: Path, sweep_dir: Path | None = None) -> dict[str, Any]:
    t0 = time.perf_counter()
    set_log_level(cfg.run.get("log_level", "info"))
    spec = arm_spec(cfg.arm.name)  # an unknown arm fails here, before any loading
    if not cfg.run.get("dry_run"):
        dry_run.forget()  # a real run may fill the response cache and keep probe rates: earlier estimates go stale
    elif dry_run.repeat(arm_label(arm_knobs(cfg)), _dry_run_key(cfg), run_dir):
        return {"score": None}
    from llm.factory import build_generator

    # the tokenizer now (weights load on the first generation): a corpus's length levels count its tokens
    generator = build_generator(cast(dict[str, Any], OmegaConf.to_container(cfg.generator, resolve=True)),
                                cfg.run.cache_dir)
    loaded = load_benchmark(cast(dict[str, Any], OmegaConf.to_container(cfg.benchmark, resolve=True)),
                            count_tokens=generator.tokenizer.count)
    if not loaded.samples:
        raise ValueError(f"benchmark {cfg.benchmark.name}: no samples selected")
    _say_losses(loaded.losses)
    try:
        return _answer(cfg, run_dir, spec, generator, loaded, t0, sweep_dir)
    except KeyboardInterrupt:
        raise RunInterrupted(_interrupted_line(run_dir, loaded.samples, arm_label(arm_knobs(cfg)))) from None


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C while a run answers: its message is the one line the user sees (what was recorded, how to resume)."""


def _interrupted_line(run_dir: Path, samples: list[Sample], label: str) -> str:
    done = RecordStore(run_dir / "records.jsonl").load() if (run_dir / "records.jsonl").exists() else {}
    recorded = sum(1 for s in samples if schema.is_final(done.get(s.id)))
    return (f"interrupted: {recorded} of {len(samples)} answers of {label} recorded in {run_dir}; run the same "
            "command again to resume")


def _answer(cfg: DictConfig, run_dir: Path, spec, generator, loaded, t0: float,
            sweep_dir: Path | None = None) -> dict[str, Any]:
    """Answer every loaded sample not yet recorded, within the spend caps (experiments/spend_cap.py), then write
    metrics.json (`run.dry_run`: only count and price every prompt)."""
    price = PricedWith(_price_of(cfg))
    base_cost = price.cost_model()
    knobs, chash = arm_knobs(cfg), config_hash(cfg)
    if cfg.run.get("dry_run"):
        return _dry_run(cfg, run_dir, spec, TokenCounter(generator), loaded.samples, price, knobs)
    judge = _build_judge(cfg, loaded.samples)
    # price basis cpu: every answer's tokens at the probe's rates, whatever the load
    price = PricedWith(price.price, _work_rates(base_cost, generator, cfg.run.cache_dir,
                                                budget_s=float(cfg.run.get("probe_budget_s") or 90)))
    cost_model = price.cost_model()
    arm = spec.build(generator, OmegaConf.to_container(cfg, resolve=True))
    if callable(getattr(arm, "check", None)):  # e.g. retriever=oracle on a benchmark without evidence: one line
        arm.check(loaded.samples)
    _say_chunks_over_limit(knobs, spec.chunks_over_limit(arm, loaded.samples))
    store = RecordStore(run_dir / "records.jsonl")
    guard = spend_guard(cfg.run, run_dir, sweep_dir, arm_label(knobs), len(loaded.samples),
                        lambda: _estimated_usd(cfg, spec, generator, loaded.samples, cost_model))
    records = run_samples(loaded.samples, arm, generator, store, knobs, chash, progress=cfg.run.progress,
                          cost_model=cost_model, secrets=run_secrets(cfg), judge=judge, guard=guard)
    repeats = int(cfg.run.get("timing_repeats") or 0)
    if repeats:  # re-time a sample of the answers (experiments/retime.py)
        by_id = {str(r["id"]): r for r in records}
        retime(loaded.samples, by_id, arm, spec, generator, store, repeats, int(cfg.run.get("timing_groups") or 4),
               cost_model)
        records = [by_id[s.id] for s in loaded.samples if s.id in by_id]
    cuts = context_cuts(loaded.samples, records, getattr(generator, "context_window", None))
    line = cuts_line(cuts)
    if line:
        log.warning("%s: %s", arm_label(knobs), line)
    cache_stats = spec.cache_stats(arm)
    truncation = spec.embedder_truncation(arm)
    cached = sum(int(r.get("cached_prompt_tokens") or 0) for r in records if schema.is_answered(r))
    note = full_rate_note(cost_model, cached)
    unseen = cache_state_note(base_cost, [r for r in records if schema.is_answered(r)])
    for said in (note, unseen):  # once per run
        if said:
            log.warning("%s", said)
    result = {"knobs": knobs, "config_hash": chash, **aggregate(records), "cached_prompt_tokens_full_rate_note": note,
              "cache_state_note": unseen,
              "skipped_at_load": loaded.skipped, "load_losses": loaded.losses, "context_cuts": cuts,
              "data_fingerprint": loaded.notes.get("data fingerprint"),
              "generation_calls": getattr(generator, "calls", None),
              "index_builds": spec.index_builds(arm), "index_seconds": spec.index_seconds(arm),
              "index_cost": spec.index_cost(arm),
              "n_documents": len({s.group or s.id for s in loaded.samples}), "cache_stats": cache_stats,
              "embedder_truncation": truncation, **price.to_metrics(),  # what it priced with, as data
              "cost_basis": cost_basis(base_cost, [r for r in records if schema.is_answered(r)]),
              "decode_batch_policy": decode_policy(generator),
              "versions": run_versions(),
              "wall_s": round(time.perf_counter() - t0, 2)}
    write_json_atomic(run_dir / "metrics.json", result)
    log.info("score %s on %d samples (%d skipped, %d failed) -> %s", result["score"], result["n"],
             result["n_skipped"], result["n_failed"], run_dir)
    return result


def _work_rates(cost_model, generator, cache_dir, measure: bool = True, budget_s: float = 90.0) -> WorkModel | None:
    """Under an hourly price on the cpu basis, the local generator's per-token CPU rates (llm/work_probe.py: measured
    once per timing setup within `budget_s` (`run.probe_budget_s`) and kept in the cache folder; `measure=False`: only
    kept ones); None otherwise, or for a generator that reports no CPU time."""
    if not isinstance(cost_model, HourlyCost) or cost_model.basis != "cpu" or not getattr(generator, "local", False):
        return None
    backend = _backend_of(generator)
    return calibrated(backend, cache_dir, budget_s) if measure else kept(backend, cache_dir)


def _backend_of(generator):
    """The backend itself, under the response cache, retries and sampling wrappers."""
    while getattr(generator, "inner", None) is not None:
        generator = generator.inner
    return generator


def _say_chunks_over_limit(knobs: dict[str, Any], over: dict[str, Any] | None) -> None:
    """One line before any answer when the embedder would cut chunks to its input limit (it embeds their start
    only): the config, the embedder and the share of chunks cut."""
    if over and over["truncated"]:
        log.warning("%s: %s would cut %d of %d chunks (%.0f%%) to its %s-token input limit and embed their start "
                    "only; rag.chunk_size counts the generator's tokens: use smaller chunks or an embedder that "
                    "reads more", arm_label(knobs), over["embedder"], over["truncated"], over["chunks"],
                    100 * over["share"], over.get("max_input_tokens", "?"))


def decode_policy(generator) -> int | None:
    """The generator's batching policy (`generator.decode_batch`: answers decoded together, for every arm alike);
    None for a backend that does not batch by this setting (a server batches as it does)."""
    while generator is not None and not hasattr(generator, "decode_batch"):
        generator = getattr(generator, "inner", None)
    return None if generator is None else int(generator.decode_batch)


def _counted(cfg: DictConfig, spec, counter: TokenCounter, samples: list[Sample]) -> list[list[Answer]]:
    """Every prompt built and counted as the run builds it (the answers of each document together), nothing
    generated."""
    arm = spec.build(counter, OmegaConf.to_container(cfg, resolve=True))
    return [spec.answer(arm, counter, group) for group in _consecutive_groups(samples)]


def _estimated_usd(cfg: DictConfig, spec, generator, samples: list[Sample], cost_model) -> dict[str, float]:
    """Each question's expected dollars under the run's price, as a dry run estimates them (the spend cap's)."""
    counter = TokenCounter(generator)
    reuse = bool(getattr(_backend_of(counter), "reuse_prefix", False))
    return dry_run.answer_usd(_counted(cfg, spec, counter, samples), spec.role, cost_model, reuse,
                              decode_policy(counter) or 1)


def _dry_run(cfg: DictConfig, run_dir: Path, spec, counter: TokenCounter, samples: list[Sample], price: PricedWith,
             knobs: dict[str, Any]) -> dict[str, Any]:
    """`run.dry_run=true`: every prompt built and counted as the run would, nothing generated
    (experiments/dry_run.py)."""
    groups = _counted(cfg, spec, counter, samples)
    # price=cpu: an earlier probe's rates
    cost_model = PricedWith(price.price, _work_rates(price.cost_model(), counter, cfg.run.cache_dir,
                                                     measure=False)).cost_model()
    reuse = bool(getattr(_backend_of(counter), "reuse_prefix", False))
    figures = dry_run.estimate(groups, spec.role, cost_model, reuse_prefix=reuse,
                               decode_batch=decode_policy(counter) or 1)
    dry_run.report(arm_label(knobs), figures, run_dir)
    dry_run.remember(_dry_run_key(cfg), figures)
    return {"score": None, **figures}


def _dry_run_key(cfg: DictConfig) -> str:
    """What a dry run's figures depend on: the records' config hash (an arm's hash leaves out the sections it does
    not read, so long context's is the same whatever RAG knob a sweep varies), the questions chosen, the generator
    as a whole and the price."""
    parts = {"config": config_hash(cfg), "benchmark": OmegaConf.to_container(cfg.benchmark, resolve=True),
             "generator": OmegaConf.to_container(cfg.generator, resolve=True),
             "price": _price_of(cfg),
             "cache_dir": str(cfg.run.cache_dir)}
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _price_of(cfg: DictConfig) -> dict[str, Any] | None:
    """The run's price config (conf/price), as plain data; None without one."""
    price = cfg.get("price")
    return None if price is None else cast(dict[str, Any], OmegaConf.to_container(price, resolve=True))


def _say_losses(losses: list[dict[str, Any]]) -> None:
    """One line before the answers: what the load left out or read doubtfully (each was named when it happened;
    the report's first screen names them again)."""
    if losses:
        log.warning("loaded with losses (named above; in metrics.json and the report): %s",
                    "; ".join(f"{x['count']} {x['kind']}" for x in losses))


def run_secrets(cfg: DictConfig) -> set[str]:
    """What must never be written: values under credential keys, and the variables named by `*_env` keys."""
    plain = OmegaConf.to_container(cfg, resolve=False)
    return redact.collect_secrets(plain) | redact.named_env_secrets(plain)


# an absolute path: Hydra resolves a relative one against the calling file under `python -m` but against the
# module's package under the `rol-run` entry point, where "../conf" is no package
@hydra.main(config_path=str(Path(__file__).resolve().parents[1] / "conf"), config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> float | None:
    from hydra.core.hydra_config import HydraConfig

    run_dir = Path(HydraConfig.get().runtime.output_dir)
    secrets = run_secrets(cfg)
    redact.install_log_filter(secrets)
    if isinstance(sys.stderr, redact.RedactingStream):
        sys.stderr.secrets |= secrets
    redact.scrub_run_dir(run_dir)  # before anything reads or copies Hydra's saved config
    try:
        result = run(cfg, run_dir, _sweep_dir())
    except SpendCapReached as err:  # run.max_usd: one line, the records kept, resumed under a higher cap
        say_stopped(err)
    except (ValueError, FileNotFoundError, OmegaConfBaseException) as err:  # bad config or input: one line
        # (a KeyError of the code itself is a bug: it keeps its traceback)
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt as err:  # Ctrl-C: one line, no traceback; the records on disk are whole
        say_interrupted(str(err) if isinstance(err, RunInterrupted) else
                        f"interrupted before any answer was recorded in {run_dir}; run the same command again to "
                        "resume")
    return result["score"]


def _sweep_dir() -> Path | None:
    """The multirun's sweep folder (what run.max_usd_sweep sums over); None for a single run."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    hc = HydraConfig.get()
    return Path(hc.sweep.dir) if hc.mode == RunMode.MULTIRUN else None


INTERRUPTED_EXIT = 130  # 128 + SIGINT, as a shell reports a process ended by Ctrl-C


def say_interrupted(line: str) -> None:
    """End the process on Ctrl-C with `line` on stderr (after any progress bar) and exit code 130."""
    print(f"\n{line}", file=sys.stderr, flush=True)
    sys.exit(INTERRUPTED_EXIT)


def cli() -> None:
    """`python -m experiments.run`: refuses keys on the command line before Hydra saves them anywhere."""
    redact.protect_stderr()
    refused = redact.secret_overrides(sys.argv[1:])
    if refused:
        print(f"error: {', '.join(refused)}: credentials are read from environment variables only "
              "(set e.g. OPENAI_API_KEY and name it with generator.api_key_env); nothing was run", file=sys.stderr)
        sys.exit(2)
    try:
        main()
    except KeyboardInterrupt:  # before a run started (Hydra composing the config): nothing was recorded
        say_interrupted("interrupted before any answer was recorded; run the same command again to resume")


if __name__ == "__main__":
    cli()
