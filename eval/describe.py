"""What a benchmark holds, as one JSON object: counts by task and length level, evidence, skips.

    python -m eval.describe --benchmark loong --path ../shared/data/loong
    python -m eval.describe --benchmark loogle --path ../shared/data/loogle --task shortdep_qa
    python -m eval.describe --benchmark synthetic --set levels=[1k,32k]
    python -m eval.describe --document docs/git-clean.html [--json]

`--document FILE` (repeatable; `rol-describe --document ...`): a team's document as the arms see it, its parsed
text followed by what the parse kept and dropped, counted (footnotes, tables, navigation ...:
eval/corpus/document_view.py); `--json` prints one JSON object per document instead.

`with_evidence` counts samples with at least one usable gold evidence item (a char span or a
document); `skipped` is {reason: count} for items the loader could not build. Samples whose
metadata names a `domain` (LaRA) are also counted per domain and per length level, domain and task
(`by_domain`, `by_level_domain_task`); `notes` is what the loader says besides counts (LaRA: how
evidence is defined, which metric is official, which files were missing); `losses` names what the load left
out or read doubtfully (benchmark=corpus: unreadable files and their questions, quotes that did not align,
CSV cells read as one answer, documents read with a warning), as a run's metrics.json does.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path
from statistics import mean, median
from typing import Any, cast

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

from eval.benchmarks import BENCHMARKS, LoadResult, load_benchmark
from eval.sample import level_sort_key

CONF_DIR = Path(__file__).resolve().parents[1] / "conf" / "benchmark"


def benchmark_config(name: str, overrides: list[str] | None = None) -> dict[str, Any]:
    """The `conf/benchmark/<name>.yaml` defaults with `key=value` overrides (values parsed as YAML)."""
    import yaml
    from omegaconf import OmegaConf

    path = CONF_DIR / f"{name}.yaml"
    cfg = OmegaConf.load(path) if path.exists() else OmegaConf.create({"name": name})
    for item in overrides or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--set {item!r}: expected key=value")
        OmegaConf.update(cfg, key.strip(), yaml.safe_load(value) if value else None, force_add=True)
    out = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(out, dict)
    return cast(dict[str, Any], out)  # a config's keys are strings


def describe(result: LoadResult) -> dict[str, Any]:
    samples = result.samples
    lengths = [len(s.context) for s in samples]
    evidence = [s for s in samples if s.evidence]
    qualities = [sp.quality for s in samples for sp in s.evidence]
    out: dict[str, Any] = {
        "samples": len(samples),
        "contexts": len({s.group or s.id for s in samples}),
        "by_task": dict(sorted(Counter(s.task for s in samples).items())),
        "by_length_level": dict(sorted(Counter(s.length_level for s in samples).items())),
        "by_language": dict(sorted(Counter(s.language for s in samples).items())),
        "with_evidence": len(evidence),
        "evidence_items": len(qualities),
        "evidence_char_spans": sum(sp.is_char_span for s in samples for sp in s.evidence),
        "evidence_documents": sum(not sp.is_char_span for s in samples for sp in s.evidence),
        "evidence_quality_mean": round(mean(qualities), 4) if qualities else None,
        "with_distractors": sum(bool(s.distractors) for s in samples),
        "context_chars": ({"min": min(lengths), "median": int(median(lengths)), "max": max(lengths)}
                          if lengths else None),
        "metrics": dict(sorted(Counter(s.metric for s in samples).items())),
        "truncation": dict(sorted(Counter(s.template.truncation for s in samples).items())),
        "skipped": dict(result.skipped),
    }
    if any(s.metadata.get("domain") for s in samples):
        out["by_domain"] = dict(sorted(Counter(str(s.metadata.get("domain")) for s in samples).items()))
        nested: dict[str, dict[str, Counter]] = {}
        for s in samples:
            nested.setdefault(s.length_level, {}).setdefault(str(s.metadata.get("domain")), Counter())[s.task] += 1
        out["by_level_domain_task"] = {
            level: {d: dict(sorted(c.items())) for d, c in sorted(nested[level].items())}
            for level in sorted(nested, key=level_sort_key)
        }
    if result.notes:
        out["notes"] = dict(result.notes)
    if result.losses:
        out["losses"] = [dict(x) for x in result.losses]
    return out


def show_documents(paths: list[str], as_json: bool) -> int:
    """Print each document's parsed text and what its parse kept and dropped; 2 when one cannot be read."""
    from eval.corpus.document_view import document_view, render

    for path in paths:
        try:
            view = document_view(path)
        except (ValueError, OSError) as err:
            print(f"error: {path}: {err}", file=sys.stderr)
            return 2
        print(json.dumps(view, ensure_ascii=False) if as_json else render(view))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m eval.describe", description=__doc__.splitlines()[0])
    ap.add_argument("--benchmark", choices=sorted(BENCHMARKS.names()), help="required unless --document is given")
    ap.add_argument("--document", action="append", metavar="FILE",
                    help="show this file's parsed text as the arms see it, and what its parse kept and dropped")
    ap.add_argument("--json", action="store_true", help="with --document: one JSON object per document")
    ap.add_argument("--path", help="local file or folder in the benchmark's official layout")
    ap.add_argument("--task", action="append", help="only this task (repeatable)")
    ap.add_argument("--level", action="append", help="only this length level (repeatable)")
    ap.add_argument("--limit", type=int)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="any other key of conf/benchmark/<name>.yaml")
    args = ap.parse_args(argv)
    if args.document:
        return show_documents(args.document, args.json)
    if not args.benchmark:
        ap.error("--benchmark (or --document) is required")
    try:
        cfg = benchmark_config(args.benchmark, args.set)
        if args.path:
            cfg["path"] = args.path
        if args.task:
            cfg["tasks"] = args.task
        if args.level:
            cfg["levels"] = args.level
        if args.limit is not None:
            cfg["limit"] = args.limit
        result = load_benchmark(cfg)
    except (ValueError, FileNotFoundError, KeyError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(json.dumps(describe(result), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
