"""Section "Reproducibility", what it takes to reproduce each run: the runs' data fingerprints, config hashes, model
ids, package versions and shared config, and how to rerun each config.

The data fingerprint of a run is sha256 of its benchmark config (JSON, sorted keys) and the sorted
ids of the samples it recorded: two runs with the same fingerprint saw the same questions drawn
the same way. Package versions are those a run recorded (metrics.json `versions`) when it did,
otherwise those of the environment that wrote the report (said so in the table)."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from experiments.report.page.cells import fmt
from experiments.report.page.contents import Outline
from experiments.report.page.document import Code, Document, Heading, Paragraph, Table
from experiments.report.page.report_summary import Facts, Summary
from experiments.report.runs import Run
from experiments.versions import package_versions

ANCHOR, TITLE = "reproducibility", "Reproducibility"

RUNS_HEAD = ["config", "benchmark", "config hash", "models", "data fingerprint", "dataset revision", "overrides",
             "records", "wall s", "run dir"]
EXPLAINED = ("Data fingerprint: sha256 of the run's benchmark config and the sorted ids of the samples it recorded "
             "(same fingerprint, same questions). Config hash: the runner's hash of everything that changes the "
             "records. Rerun a config with `python -m experiments.run` and the overrides shown.")


REVISION_KEYS = ("revision", "path", "data_dir", "data_files", "dataset", "repo", "seed", "version", "sha")


def data_fingerprint(run: Run) -> str:
    bench_cfg = run.config.get("benchmark") if isinstance(run.config, dict) else None
    ids = sorted(str(r["id"]) for r in run.records)
    payload = json.dumps({"benchmark": bench_cfg, "ids": ids}, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:12]


def dataset_revision(run: Run) -> str:
    bench = run.config.get("benchmark") if isinstance(run.config, dict) else None
    if not isinstance(bench, dict):
        return "-"
    parts = [f"{k}={bench[k]}" for k in sorted(bench)
             if any(t in k.lower() for t in REVISION_KEYS) and bench[k] is not None]
    return ", ".join(parts) if parts else "-"


def model_ids(run: Run) -> str:
    cfg = run.config if isinstance(run.config, dict) else {}
    ids = []
    gen = cfg.get("generator") or {}
    model = gen.get("model") or run.knobs.get("generator")
    if model:
        rev = gen.get("revision")
        ids.append(f"generator {model}" + (f"@{rev}" if rev else "")
                   + (f" ({gen['backend']})" if gen.get("backend") else ""))
    ids += run.spec.model_ids(cfg, run.knobs)
    return "; ".join(ids) if ids else "-"


def _flatten(d: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(d, dict):
        out: dict[str, Any] = {}
        for k, v in d.items():
            out.update(_flatten(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: d}


class _EscapedDumper(yaml.SafeDumper):
    """YAML whose strings holding a line break, tab or other control character are written double-quoted with
    escapes (`"\\n"`), as the config was written, not as raw line breaks (a stop string "\\n" read as a blank
    line)."""


def _escaped_str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = '"' if any(ord(c) < 32 or c in "\x7f\u2028\u2029" for c in value) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_EscapedDumper.add_representer(str, _escaped_str)


def escaped_yaml(data: Any) -> str:
    """`data` as YAML with control characters escaped (see `_EscapedDumper`)."""
    return yaml.dump(data, Dumper=_EscapedDumper, sort_keys=True, allow_unicode=True)


def shared_config(runs: list[Run]) -> tuple[str, list[str]]:
    """YAML of the config keys every run has with the same value, and the keys that vary."""
    flats = [_flatten(r.config) for r in runs if r.config]
    if not flats:
        return "", []
    keys = set(flats[0])
    for f in flats[1:]:
        keys &= set(f)
    common = {k: flats[0][k] for k in sorted(keys)
              if all(json.dumps(f[k], default=str) == json.dumps(flats[0][k], default=str) for f in flats)}
    varying = sorted({k for f in flats for k in f} - set(common))
    nested: dict[str, Any] = {}
    for k, v in common.items():
        node = nested
        parts = k.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = v
    return escaped_yaml(nested), varying


@dataclass
class RunRow:
    """One run of the reproducibility table, its folder relative to the report's."""
    label: str
    benchmark: str
    config_hash: str
    models: str
    data_fingerprint: str
    dataset_revision: str
    overrides: str
    n_records: int
    wall_s: Any
    run_dir: str


@dataclass
class Reproducibility:
    """The reproducibility section's rows: package versions, one row per run, the duplicates merged and the
    config every run shares."""
    versions: dict[str, str]
    versions_recorded: bool  # recorded by every run; False: those of the environment that wrote the report
    runs: list[RunRow]
    merged: list[str]  # duplicate run folders merged, relative to the report's folder
    common: str  # YAML of the config keys every run has with the same value
    varying: list[str]  # the keys that differ between runs (or that some runs lack)


def _relative(path: Path, out: Path) -> str:
    try:
        return os.path.relpath(path, out)
    except ValueError:  # another drive
        return str(path)


def recorded_versions(runs: list[Run]) -> dict[str, str] | None:
    """The package versions every run recorded (each package's versions joined); None unless all recorded."""
    recorded = [r for r in runs if isinstance(r.metrics.get("versions"), dict)]
    if not recorded or len(recorded) != len(runs):
        return None
    return {k: ", ".join(sorted({str(r.metrics['versions'].get(k)) for r in recorded if r.metrics['versions'].get(k)}))
            for k in sorted({k for r in recorded for k in r.metrics["versions"]})}


def reproducibility(runs: list[Run], out: Path, dupes: dict[str, list[Path]]) -> Reproducibility:
    """The section's rows, run folders named relative to the report's folder `out`."""
    recorded = recorded_versions(runs)
    rows = [RunRow(r.label, r.benchmark, str(r.metrics.get("config_hash", "-")), model_ids(r), data_fingerprint(r),
                   dataset_revision(r), " ".join(r.overrides) or "-", len(r.records), r.metrics.get("wall_s", "-"),
                   _relative(r.path, out)) for r in runs]
    common, varying = shared_config(runs)
    return Reproducibility(versions=recorded if recorded is not None else package_versions(),
                           versions_recorded=recorded is not None, runs=rows,
                           merged=[os.path.relpath(p, out) for v in dupes.values() for p in v],
                           common=common, varying=varying)


def rows(f: Facts) -> Reproducibility:
    return reproducibility(f.runs, f.out, f.loaded.duplicates)


def render(doc: Document, s: Summary, outline: Outline) -> None:
    rep: Reproducibility = s.sections[ANCHOR]
    doc.add(Paragraph(EXPLAINED), Heading(3, "Package versions"), Paragraph(
        "Recorded by the runs." if rep.versions_recorded else
        "Of the environment that wrote this report (the runs did not record theirs)."))
    doc.add(Table(["package", "version"], [[k, v] for k, v in rep.versions.items()]))
    doc.add(Heading(3, "Runs"), Table(RUNS_HEAD, [_run_cells(r) for r in rep.runs]))
    if rep.merged:
        doc.add(Paragraph(f"{len(rep.merged)} duplicate run(s) of an identical config point were merged (the one "
                          "with the most records is shown): " + ", ".join(f"`{p}`" for p in rep.merged) + "."))
    _shared_config(doc, rep)


def _run_cells(r: RunRow) -> list[str]:
    return [r.label, r.benchmark, r.config_hash, r.models, r.data_fingerprint, r.dataset_revision,
            f"`{r.overrides}`" if r.overrides != "-" else "-", str(r.n_records), fmt(r.wall_s), f"`{r.run_dir}`"]


def _shared_config(doc: Document, rep: Reproducibility) -> None:
    """The config all runs share, and the keys that differ between them."""
    if not rep.common:
        doc.add(Paragraph("The run directories have no .hydra/config.yaml."))
        return
    doc.add(Heading(3, "Config shared by all runs"), Code(rep.common, "yaml"))
    if rep.varying:
        doc.add(Paragraph("Keys that differ between runs (or that some runs lack): "
                          + ", ".join(f"`{k}`" for k in rep.varying) + "."))
