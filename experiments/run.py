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
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import hydra  # noqa: E402
from omegaconf import DictConfig, OmegaConf  # noqa: E402
from tqdm import tqdm  # noqa: E402

from eval import metrics  # noqa: E402
from eval.benchmarks import load_benchmark  # noqa: E402
from eval.sample import Sample  # noqa: E402
from experiments.aggregate import aggregate  # noqa: E402
from experiments.arms import ARMS, Answer, answer_group, build_arm  # noqa: E402
from experiments import redact  # noqa: E402
from experiments.versions import run_versions  # noqa: E402
from experiments.records import FINAL, RecordStore, write_json_atomic  # noqa: E402

log = logging.getLogger("experiments.run")


def arm_knobs(cfg: DictConfig) -> dict[str, Any]:
    """The settings that define this config point for its arm (what a report row shows)."""
    arm = cfg.arm.name
    knobs: dict[str, Any] = {"arm": arm, "benchmark": cfg.benchmark.name, "generator": cfg.generator.model}
    if arm in ("rag", "selfroute"):
        knobs.update(retriever=cfg.retriever.name, chunk_size=cfg.rag.chunk_size, chunk_overlap=cfg.rag.chunk_overlap,
                     top_k=cfg.rag.top_k, order=cfg.rag.order)
        for key in ("budget_tokens",):
            if cfg.rag.get(key) is not None:
                knobs[f"rag_{key}"] = cfg.rag[key]
        for group, default in (("chunker", "tokens"), ("reranker", "none")):
            node = cfg.get(group)
            name = node.get("name") or node.get("kind") if node is not None else None
            if name and name != default:  # defaults stay out, so older runs and new ones line up
                knobs[group] = name
    if arm in ("longctx", "selfroute"):
        knobs.update(truncation=cfg.longctx.truncation or "benchmark")
        if cfg.longctx.get("budget_tokens") is not None:
            knobs["budget_tokens"] = cfg.longctx.budget_tokens
    return knobs


# Settings that choose which samples run, or how patiently a backend is asked, but cannot change a
# sample's record: left out of the config hash, so changing them keeps a run resumable.
SELECTION_KEYS = ("tasks", "levels", "limit", "skip_bad")
OPERATIONAL_KEYS = ("timeout_s", "max_retries", "backoff_base_s", "backoff_max_s", "max_concurrency", "stream",
                    "stream_usage", "api_key_env")


def config_hash(cfg: DictConfig) -> str:
    """Hash of what changes this run's records: arm knobs plus the configs the arm reads."""
    def plain(node):
        return OmegaConf.to_container(node, resolve=True) if node is not None else None

    benchmark = {k: v for k, v in plain(cfg.benchmark).items() if k not in SELECTION_KEYS}
    generator = {k: v for k, v in plain(cfg.generator).items() if k not in OPERATIONAL_KEYS}
    payload = {"knobs": arm_knobs(cfg), "benchmark": benchmark, "generator": generator}
    if cfg.arm.name in ("rag", "selfroute"):
        payload.update(rag=plain(cfg.rag), retriever=plain(cfg.retriever), chunker=plain(cfg.get("chunker")),
                       reranker=plain(cfg.get("reranker")))
    if cfg.arm.name in ("longctx", "selfroute"):
        payload["longctx"] = plain(cfg.longctx)
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:12]


def _base_record(sample: Sample, knobs: dict[str, Any], chash: str) -> dict[str, Any]:
    return {
        "id": sample.id, "benchmark": sample.benchmark, "task": sample.task, "language": sample.language,
        "length_level": sample.length_level, "group": sample.group, "arm": knobs["arm"], "config_hash": chash,
        "depth": sample.metadata.get("depth"), "answers": sample.answers,
    }


def _consecutive_groups(samples: list[Sample]) -> list[list[Sample]]:
    groups: list[list[Sample]] = []
    for s in samples:
        if groups and s.group and groups[-1][0].group == s.group:
            groups[-1].append(s)
        else:
            groups.append([s])
    return groups


def _record(ans: Answer, knobs: dict[str, Any], chash: str, cost_model) -> dict[str, Any]:
    sample, base = ans.sample, _base_record(ans.sample, knobs, chash)
    if ans.skipped is not None:
        return {**base, "status": "skipped", "reason": ans.skipped, "score": 0.0}
    if ans.text is None:  # retrieval only (generator=none)
        return {**base, "status": "retrieved", **ans.meta}
    values = metrics.score(sample.metric, ans.text, sample.reference())
    u = ans.usage
    # charged: the generator's share of its batch plus this request's retrieval (not the user's wait)
    seconds = u["generation_s"] + (u.get("retrieval_s") or 0.0)
    cost = cost_model.cost(u["prompt_tokens"], u["completion_tokens"], seconds) if cost_model else None
    record = {**base, "status": "ok", "prediction": ans.text, "score": values["score"], "scores": values,
              **u, "cost_usd": cost, **ans.meta}
    if values.get("failed"):  # the judge could not be asked: not a zero, a failure to retry on resume
        from eval.metrics.judge import last_judge_error

        record.update(status="failed", reason=f"judge call failed: {last_judge_error() or 'no reply'}")
    return record


def run_samples(samples: list[Sample], arm, generator, store: RecordStore, knobs: dict[str, Any], chash: str,
                progress: bool = True, cost_model=None, secrets: set[str] | frozenset[str] = frozenset()
                ) -> list[dict[str, Any]]:
    done = store.load()
    other = sorted({r.get("config_hash") for r in done.values()} - {chash}, key=str)
    if other:
        raise ValueError(
            f"{store.path} holds records of another configuration (config_hash {', '.join(map(str, other))}; this "
            f"run is {chash}): resuming would mix the two. Use a new hydra.run.dir / hydra.sweep.dir (cached "
            "generations make the rerun cheap) or move records.jsonl away")
    todo = [s for s in samples if done.get(s.id, {}).get("status") not in FINAL]
    if len(todo) < len(samples):
        log.info("resuming: %d of %d samples already recorded", len(samples) - len(todo), len(samples))
    bar = tqdm(total=len(todo), desc=f"{knobs['arm']}", unit="sample", disable=not progress, file=sys.stderr,
               dynamic_ncols=True)
    # Samples over one context go to the generator together, so a backend can read the context once.
    for group in _consecutive_groups(todo):
        try:
            answers = answer_group(arm, generator, group)
            records = [_record(a, knobs, chash, cost_model) for a in answers]
        except Exception as err:  # noqa: BLE001 - recorded, counted and retried on resume
            log.exception("generation failed for %d samples of group %s", len(group), group[0].group)
            reason = redact.redact_text(f"{type(err).__name__}: {err}", secrets)
            for sample in group:
                store.append({**_base_record(sample, knobs, chash), "status": "failed", "reason": reason})
            bar.update(len(group))
            continue
        for rec in records:
            if rec["status"] == "failed":
                rec["reason"] = redact.redact_text(rec["reason"], secrets)
                log.warning("%s failed: %s", rec["id"], rec["reason"])
            if rec["status"] == "skipped":
                log.warning("%s skipped: %s", rec["id"], rec["reason"])
            store.append(rec)
            bar.update(1)
    bar.close()
    by_id = store.load()
    return [by_id[s.id] for s in samples if s.id in by_id]


def _quiet_libraries() -> None:
    for name in ("bm25s", "jieba", "sentence_transformers", "faiss", "httpx", "urllib3"):
        logging.getLogger(name).setLevel(logging.WARNING)
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
    except ImportError:
        pass


def _configure_judge(cfg: DictConfig) -> None:
    """Judge-scored metrics use `cfg.judge`, caching judgments beside the response cache."""
    if cfg.get("judge") is None:
        return
    from eval.metrics.judge import Judge, configure_judge

    j = cfg.judge
    configure_judge(Judge(model=j.model, base_url=j.base_url, timeout=j.timeout_s, max_retries=j.max_retries,
                          cache_path=Path(cfg.run.cache_dir) / "judgments.sqlite"))


def _cost_model(price: dict[str, Any] | None):
    try:
        from llm.cost import build_cost_model
    except ImportError:
        return None
    return build_cost_model(price)


def run(cfg: DictConfig, run_dir: Path) -> dict[str, Any]:
    t0 = time.perf_counter()
    _quiet_libraries()
    if cfg.arm.name not in ARMS:
        raise ValueError(f"arm.name={cfg.arm.name!r}; allowed: {', '.join(ARMS)}")
    loaded = load_benchmark(OmegaConf.to_container(cfg.benchmark, resolve=True))
    if not loaded.samples:
        raise ValueError(f"benchmark {cfg.benchmark.name}: no samples selected")
    _configure_judge(cfg)
    from llm.factory import build_generator

    generator = build_generator(OmegaConf.to_container(cfg.generator, resolve=True), cfg.run.cache_dir)
    arm = build_arm(cfg.arm.name, generator, OmegaConf.to_container(cfg, resolve=True))
    price = OmegaConf.to_container(cfg.price, resolve=True) if cfg.get("price") is not None else None
    cost_model = _cost_model(price)
    knobs, chash = arm_knobs(cfg), config_hash(cfg)
    records = run_samples(loaded.samples, arm, generator, RecordStore(run_dir / "records.jsonl"), knobs, chash,
                          progress=cfg.run.progress, cost_model=cost_model, secrets=run_secrets(cfg))
    cache_stats = arm.cache_stats() if hasattr(arm, "cache_stats") else None
    result = {"knobs": knobs, "config_hash": chash, **aggregate(records),
              "skipped_at_load": loaded.skipped, "generation_calls": getattr(generator, "calls", None),
              "index_builds": getattr(arm, "index_builds", None), "index_seconds": _index_seconds(arm),
              "n_documents": len({s.group or s.id for s in loaded.samples}), "cache_stats": cache_stats, "price": price,
              "versions": run_versions(),
              "wall_s": round(time.perf_counter() - t0, 2)}
    write_json_atomic(run_dir / "metrics.json", result)
    log.info("score %s on %d samples (%d skipped, %d failed) -> %s", result["score"], result["n"],
             result["n_skipped"], result["n_failed"], run_dir)
    return result


def _index_seconds(arm) -> float | None:
    """Measured chunk + embed + index build time of the arm's indexes, total (None: no index)."""
    secs = getattr(arm, "index_seconds", None)
    return None if secs is None else round(secs, 4)


def run_secrets(cfg: DictConfig) -> set[str]:
    """What must never be written: values under credential keys, and the variables named by `*_env` keys."""
    plain = OmegaConf.to_container(cfg, resolve=False)
    return redact.collect_secrets(plain) | redact.named_env_secrets(plain)


@hydra.main(config_path="../conf", config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> float | None:
    from hydra.core.hydra_config import HydraConfig

    run_dir = Path(HydraConfig.get().runtime.output_dir)
    secrets = run_secrets(cfg)
    redact.install_log_filter(secrets)
    if isinstance(sys.stderr, redact.RedactingStream):
        sys.stderr.secrets |= secrets
    redact.scrub_run_dir(run_dir)  # before anything reads or copies Hydra's saved config
    try:
        result = run(cfg, run_dir)
    except (ValueError, FileNotFoundError, KeyError) as err:  # bad config or input: one clear line, no traceback
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    return result["score"]


def cli() -> None:
    """`python -m experiments.run`: refuses keys on the command line before Hydra saves them anywhere."""
    redact.protect_stderr()
    refused = redact.secret_overrides(sys.argv[1:])
    if refused:
        print(f"error: {', '.join(refused)}: credentials are read from environment variables only "
              "(set e.g. OPENAI_API_KEY and name it with generator.api_key_env); nothing was run", file=sys.stderr)
        sys.exit(2)
    main()


if __name__ == "__main__":
    cli()
