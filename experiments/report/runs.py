"""Find run directories (those holding metrics.json) and read what they recorded."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from eval.sample import level_sort_key
from experiments import records as schema
from experiments.arms import ArmSpec, spec_of_run
from experiments.redact import redact, redact_text


@dataclass
class Run:
    path: Path
    metrics: dict[str, Any]
    records: list[dict[str, Any]] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)  # .hydra/config.yaml, when the run dir has it
    overrides: list[str] = field(default_factory=list)  # .hydra/overrides.yaml
    label_suffix: str = ""  # set by the report when two config points would read the same
    scope_override: str | None = None  # set by the report when one report mixes generators
    _by_level: dict[str, list[dict[str, Any]]] | None = field(default=None, repr=False, compare=False)
    _scores: dict[Any, dict[str, float]] = field(default_factory=dict, repr=False, compare=False)

    @property
    def scope(self) -> str:
        """What a verdict compares within: the benchmark (and the generator, when a report mixes them)."""
        return self.scope_override or self.benchmark

    def records_at(self, level: str | None = None) -> list[dict[str, Any]]:
        """Records of one length level (None: all of them)."""
        if level is None:
            return self.records
        if self._by_level is None:
            self._by_level = {}
            for r in self.records:
                self._by_level.setdefault(str(r.get("length_level")), []).append(r)
        return self._by_level.get(str(level), [])

    def scores(self, level: str | None = None) -> dict[str, float]:
        """{sample id: score 0..1} of the scored samples (ok, and skipped as 0); failed ones are left out."""
        if level not in self._scores:
            self._scores[level] = {str(r["id"]): float(r["score"]) for r in self.records_at(level)
                                   if schema.is_scored(r)}
        return self._scores[level]

    def reset_scores(self) -> None:
        """Forget the cached scores (after the report set some, e.g. from pairwise judgments)."""
        self._scores.clear()

    def answered(self, level: str | None = None) -> list[dict[str, Any]]:
        """Records the model answered (status ok): the ones with tokens, latency and cost."""
        return [r for r in self.records_at(level) if schema.is_answered(r)]

    def score_at(self, level: str | None = None) -> float | None:
        s = self.scores(level)
        return 100 * sum(s.values()) / len(s) if s else None

    def mean_of(self, key: str, level: str | None = None) -> float | None:
        vals = [r[key] for r in self.answered(level) if r.get(key) is not None]
        return sum(vals) / len(vals) if vals else None

    @property
    def knobs(self) -> dict[str, Any]:
        return self.metrics.get("knobs", {})

    @property
    def arm(self) -> str:
        return str(self.knobs.get("arm", "?"))

    @property
    def spec(self) -> type[ArmSpec]:
        """The arm's spec (the plain `ArmSpec` for an arm no module registers)."""
        return spec_of_run(self.arm)

    @property
    def benchmark(self) -> str:
        return str(self.knobs.get("benchmark", "?"))

    @property
    def budget_matched(self) -> bool:
        """Long context cut to a fixed token budget (a control arm, not a full long-context config)."""
        return self.spec.budget_matched(self.knobs)

    @property
    def upper_bound(self) -> bool:
        """Reads the gold evidence (retriever=oracle): shown beside the others, never chosen by the verdict."""
        return self.spec.upper_bound(self.knobs)

    @property
    def token_budget(self) -> int | None:
        """Context tokens the run puts in a prompt at most (its spec says; None: the model's window)."""
        return self.spec.token_budget(self.knobs)

    @property
    def retrieval_depth(self) -> int | None:
        """Ranked passages the run retrieves for a prompt, where its evidence recall@k is read (its spec says;
        None: it ranks none)."""
        return self.spec.retrieval_depth(self.knobs)

    @property
    def retrieval_only(self) -> bool:
        return bool(self.records) and all(schema.status_of(r) == schema.RETRIEVED for r in self.records)

    @property
    def label(self) -> str:
        return self.config_label + self.label_suffix

    @property
    def config_label(self) -> str:
        """The arm's label of its knobs; an imported run's own `label` (its config name) as given."""
        return str(self.knobs.get("label") or self.spec.label(self.knobs, self.retrieval_only))


def _read_yaml(path: Path) -> Any:
    if not path.exists():
        return None
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        raise ValueError(f"{path}: unreadable YAML ({err})") from None


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
            if not isinstance(metrics, dict):
                raise ValueError(f"{m}: metrics.json is not a JSON object")
            run = Run(m.parent.resolve(), metrics)
            hydra = m.parent / ".hydra"
            # the report prints configs and overrides: mask any credential a user put there
            run.config = redact(_read_yaml(hydra / "config.yaml") or {})
            run.overrides = [redact_text(str(o)) for o in (_read_yaml(hydra / "overrides.yaml") or [])]
            if with_records:
                run.records = list(schema.read_records(m.parent / "records.jsonl").values())
            found[run.path] = run
    if not found:
        raise FileNotFoundError(f"no run directories (with metrics.json) under {', '.join(map(str, paths))}")
    return [found[k] for k in sorted(found)]


def dedupe(runs: list[Run]) -> tuple[list[Run], dict[str, list[Path]]]:
    """One run per config point (same config hash); the others are listed as duplicates.

    A sweep that crosses arm=longctx with RAG-only knobs repeats the same long-context point;
    the response cache makes the repeats free and the report shows the point once. Of the
    repeats, the one with the most records is kept (an interrupted copy loses to a finished one).
    """
    seen: dict[str, Run] = {}
    dupes: dict[str, list[Path]] = {}
    for run in runs:
        key = run.metrics.get("config_hash") or str(run.path)
        if key in seen:
            keep, drop = (run, seen[key]) if len(run.records) > len(seen[key].records) else (seen[key], run)
            seen[key] = keep
            dupes.setdefault(key, []).append(drop.path)
        else:
            seen[key] = run
    return list(seen.values()), dupes


def levels_of(runs: list[Run]) -> list[str]:
    """The length levels the runs' records cover, smallest first."""
    return sorted({str(r.get("length_level")) for run in runs for r in run.records}, key=level_sort_key)


def disambiguate(runs: list[Run]) -> None:
    """Scope verdicts by generator when a report mixes them; make labels unique within a scope."""
    # retrieval-only runs (no generator) do not split a report into scopes
    if len({r.knobs.get("generator") for r in runs if not r.retrieval_only}) > 1:
        for r in runs:
            r.scope_override = f"{r.benchmark} / {r.knobs.get('generator')}"
    seen = Counter((r.scope, r.config_label) for r in runs)
    for r in runs:
        if seen[(r.scope, r.config_label)] > 1:
            r.label_suffix = f" #{str(r.metrics.get('config_hash', ''))[:6] or r.path.name}"
