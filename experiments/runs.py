"""Find run directories (those holding metrics.json) and read what they recorded."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Run:
    path: Path
    metrics: dict[str, Any]
    records: list[dict[str, Any]] = field(default_factory=list)

    @property
    def knobs(self) -> dict[str, Any]:
        return self.metrics.get("knobs", {})

    @property
    def label(self) -> str:
        k = self.knobs
        if k.get("arm") == "rag":
            return f"rag {k.get('retriever')} c{k.get('chunk_size')} k{k.get('top_k')}" + ("" if k.get("order") == "document" else f" {k.get('order')}")
        extra = "" if k.get("truncation") in (None, "benchmark") else f" {k.get('truncation')}"
        return f"{k.get('arm', '?')}{extra}"


def find_runs(paths: list[str | Path], with_records: bool = False) -> list[Run]:
    """Every run directory under `paths` (a multirun folder, run folders, or a mix), sorted by path."""
    found: dict[Path, Run] = {}
    for p in map(Path, paths):
        if not p.exists():
            raise FileNotFoundError(f"{p}: no such run or multirun directory")
        candidates = [p / "metrics.json"] if (p / "metrics.json").exists() else sorted(p.rglob("metrics.json"))
        for m in candidates:
            try:
                metrics = json.loads(m.read_text())
            except ValueError as err:
                raise ValueError(f"{m}: unreadable metrics.json ({err})") from None
            run = Run(m.parent.resolve(), metrics)
            if with_records and (m.parent / "records.jsonl").exists():
                run.records = [json.loads(line) for line in (m.parent / "records.jsonl").read_text().splitlines() if line.strip()]
            found[run.path] = run
    if not found:
        raise FileNotFoundError(f"no run directories (with metrics.json) under {', '.join(map(str, paths))}")
    return [found[k] for k in sorted(found)]


def dedupe(runs: list[Run]) -> tuple[list[Run], dict[str, list[Path]]]:
    """One run per config point (same config hash); the others are listed as duplicates.

    A sweep that crosses arm=longctx with RAG-only knobs repeats the same long-context point;
    the response cache makes the repeats free and the report shows the point once.
    """
    seen: dict[str, Run] = {}
    dupes: dict[str, list[Path]] = {}
    for run in runs:
        key = run.metrics.get("config_hash") or str(run.path)
        if key in seen:
            dupes.setdefault(key, []).append(run.path)
        else:
            seen[key] = run
    return list(seen.values()), dupes
