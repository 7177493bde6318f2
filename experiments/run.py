"""One config point -> records.jsonl + metrics.json in the Hydra run directory.

    python -m experiments.run                                   # the defaults
    python -m experiments.run arm=rag retriever=minilm rag.top_k=8
    python -m experiments.run -m arm=longctx,rag rag.chunk_size=128,256 rag.top_k=2,4

A rerun in the same directory resumes: samples already recorded (ok or skipped) are not redone,
failed ones are retried. Generations are cached across runs (`run.cache_dir`), so rerunning a
finished sweep in a new directory makes no generation call either.
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
from experiments.records import FINAL, RecordStore  # noqa: E402
from llm.prompt import PromptTooLong  # noqa: E402

log = logging.getLogger("experiments.run")

ARMS = ("longctx", "rag")


def arm_knobs(cfg: DictConfig) -> dict[str, Any]:
    """The settings that define this config point for its arm (what a report row shows)."""
    arm = cfg.arm.name
    knobs: dict[str, Any] = {"arm": arm, "benchmark": cfg.benchmark.name, "generator": cfg.generator.model}
    if arm == "rag":
        knobs.update(retriever=cfg.retriever.name, chunk_size=cfg.rag.chunk_size, chunk_overlap=cfg.rag.chunk_overlap,
                     top_k=cfg.rag.top_k, order=cfg.rag.order)
    elif arm == "longctx":
        knobs.update(truncation=cfg.longctx.truncation or "benchmark")
    return knobs


def config_hash(cfg: DictConfig) -> str:
    """Hash of what changes this run's records: arm knobs plus the benchmark and generator configs."""
    payload = {"knobs": arm_knobs(cfg), "benchmark": OmegaConf.to_container(cfg.benchmark, resolve=True),
               "generator": OmegaConf.to_container(cfg.generator, resolve=True)}
    if cfg.arm.name == "rag":
        payload["rag"] = OmegaConf.to_container(cfg.rag, resolve=True)
        payload["retriever"] = OmegaConf.to_container(cfg.retriever, resolve=True)
    else:
        payload["longctx"] = OmegaConf.to_container(cfg.longctx, resolve=True)
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:12]


def build_arm(cfg: DictConfig, generator):
    arm = cfg.arm.name
    if arm == "longctx":
        from longctx.arm import LongContextArm, LongContextConfig

        return LongContextArm(generator, LongContextConfig(**OmegaConf.to_container(cfg.longctx, resolve=True)))
    if arm == "rag":
        from rag.arm import RagArm, RagConfig
        from rag.retrievers import build_retriever

        retriever = build_retriever(OmegaConf.to_container(cfg.retriever, resolve=True))
        return RagArm(generator, retriever, RagConfig(**OmegaConf.to_container(cfg.rag, resolve=True)))
    raise ValueError(f"arm.name={arm!r}; allowed: {', '.join(ARMS)}")


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


def run_samples(samples: list[Sample], arm, generator, store: RecordStore, knobs: dict[str, Any], chash: str,
                progress: bool = True) -> list[dict[str, Any]]:
    done = store.load()
    todo = [s for s in samples if done.get(s.id, {}).get("status") not in FINAL]
    if len(todo) < len(samples):
        log.info("resuming: %d of %d samples already recorded", len(samples) - len(todo), len(samples))
    bar = tqdm(total=len(todo), desc=f"{knobs['arm']}", unit="sample", disable=not progress, file=sys.stderr,
               dynamic_ncols=True)
    # Samples over one context go to the generator together, so a backend can read the context once.
    for group in _consecutive_groups(todo):
        ready: list[tuple[Sample, Any]] = []
        for sample in group:
            try:
                ready.append((sample, arm.build(sample)))
            except PromptTooLong as err:
                store.append({**_base_record(sample, knobs, chash), "status": "skipped", "reason": str(err), "score": 0.0})
                log.warning("%s skipped: %s", sample.id, err)
                bar.update(1)
        if not ready:
            continue
        try:
            gens = generator.generate([p for _, p in ready])
        except Exception as err:  # noqa: BLE001 - recorded, counted and retried on resume
            log.exception("generation failed for %d samples of group %s", len(ready), group[0].group)
            for sample, _ in ready:
                store.append({**_base_record(sample, knobs, chash), "status": "failed", "reason": f"{type(err).__name__}: {err}"})
            bar.update(len(ready))
            continue
        for (sample, prompt), gen in zip(ready, gens):
            values = metrics.score(sample.metric, gen.text, sample.reference())
            store.append({
                **_base_record(sample, knobs, chash), "status": "ok", "prediction": gen.text, "score": values["score"],
                "scores": values, "prompt_tokens": gen.prompt_tokens, "completion_tokens": gen.completion_tokens,
                "latency_s": round(gen.latency_s, 4), "ttft_s": gen.ttft_s, "cached": gen.cached, **prompt.meta,
            })
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


def run(cfg: DictConfig, run_dir: Path) -> dict[str, Any]:
    t0 = time.perf_counter()
    _quiet_libraries()
    if cfg.arm.name not in ARMS:
        raise ValueError(f"arm.name={cfg.arm.name!r}; allowed: {', '.join(ARMS)}")
    loaded = load_benchmark(OmegaConf.to_container(cfg.benchmark, resolve=True))
    if not loaded.samples:
        raise ValueError(f"benchmark {cfg.benchmark.name}: no samples selected")
    from llm.factory import build_generator

    generator = build_generator(OmegaConf.to_container(cfg.generator, resolve=True), cfg.run.cache_dir)
    arm = build_arm(cfg, generator)
    knobs, chash = arm_knobs(cfg), config_hash(cfg)
    records = run_samples(loaded.samples, arm, generator, RecordStore(run_dir / "records.jsonl"), knobs, chash,
                          progress=cfg.run.progress)
    result = {"knobs": knobs, "config_hash": chash, **aggregate(records),
              "skipped_at_load": loaded.skipped, "generation_calls": getattr(generator, "calls", None),
              "index_builds": getattr(arm, "index_builds", None), "wall_s": round(time.perf_counter() - t0, 2)}
    (run_dir / "metrics.json").write_text(json.dumps(result, indent=2, ensure_ascii=False))
    log.info("score %s on %d samples (%d skipped, %d failed) -> %s", result["score"], result["n"],
             result["n_skipped"], result["n_failed"], run_dir)
    return result


@hydra.main(config_path="../conf", config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> float | None:
    from hydra.core.hydra_config import HydraConfig

    try:
        result = run(cfg, Path(HydraConfig.get().runtime.output_dir))
    except (ValueError, FileNotFoundError) as err:  # bad config or input: one clear line, no traceback
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    return result["score"]


if __name__ == "__main__":
    main()
