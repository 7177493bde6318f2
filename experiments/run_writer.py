"""A run directory as the runner lays it out: `records.jsonl`, `metrics.json` (knobs, config hash and the
aggregates of `experiments.run_metrics`), `.hydra/config.yaml` and `.hydra/overrides.yaml`. Written here
for runs that did not come from the runner: imported predictions (`experiments.importers.predictions`) and the
report's simulated sweeps."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import yaml

from experiments import records as schema
from experiments.run_metrics import aggregate


def write_run_dir(run_dir: Path, knobs: dict[str, Any], records: list[dict[str, Any]], config: dict[str, Any],
                  overrides: list[str], config_hash: str | None = None,
                  extra_metrics: dict[str, Any] | None = None) -> Path:
    """Write the run; records without a `config_hash` get this run's (default: a hash of the knobs)."""
    run_dir = Path(run_dir)
    (run_dir / ".hydra").mkdir(parents=True, exist_ok=True)
    chash = config_hash or hashlib.sha256(json.dumps(knobs, sort_keys=True).encode()).hexdigest()[:12]
    for r in records:
        r.setdefault("config_hash", chash)
    schema.write_records(run_dir / "records.jsonl", records)
    metrics = {"knobs": knobs, "config_hash": chash, **aggregate(records), **(extra_metrics or {})}
    schema.write_json_atomic(run_dir / "metrics.json", metrics)
    (run_dir / ".hydra" / "config.yaml").write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    (run_dir / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(overrides, allow_unicode=True), encoding="utf-8")
    return run_dir
