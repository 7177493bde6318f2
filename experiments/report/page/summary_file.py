"""summary.json: the report's Summary as JSON, and read back into a view the page renders from alone.

Its top level is the Summary's: the settings, the report's folder, what every section shares (`vrows`, `plans`,
`agreements`), each section's own rows under `sections` by the section's anchor (`sections.configs.rows`: the
per-config table, configs.csv's rows), the viewer and the figures. A verdict row is its stages' results, each under
its name (`comparison`, `own`, `family`, `router`, `words`: experiments.report.verdict_row), beside the row's
properties. Version 3 (version 2 kept a verdict row as one flat record; version 1 every section's rows at the top
level, the per-config table under `summary`).

Written: plain dicts and lists; a dataclass as its fields (those marked `field(metadata=NOT_IN_JSON)`, what
the rows were computed from, left out) plus the report's row properties, evaluated; a run as the few
values the page names it by (`RUN_KEYS`, its config hash); paths as strings; and a `version` key. Read back:
every object a `Record`, a dict whose keys are also its attributes, so `present` renders a loaded summary as
it renders the one `summarize` returned (tests/test_report.py checks the same report.md)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np

from eval.storage import atomic_write_text
from experiments.report.runs import Run

SUMMARY_FILE = "summary.json"
SUMMARY_VERSION = 3
RUN_KEYS = ("label", "benchmark", "scope", "arm")  # what the page reads of a run (and metrics.config_hash)
NOT_IN_JSON = {"summary_json": False}  # a field's metadata: what the rows were computed from, left out
OWN_PACKAGE = "experiments.report"  # the classes whose properties are written beside their fields


class Record(dict):
    """A JSON object read back: its keys are also its attributes (a key shadows a dict method's name)."""

    def __getattribute__(self, name: str) -> Any:
        if not name.startswith("__") and dict.__contains__(self, name):
            return dict.__getitem__(self, name)
        return super().__getattribute__(name)

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"summary.json has no {name!r} here (keys: {', '.join(self)})")


def _run(run: Run) -> dict[str, Any]:
    return {**{k: getattr(run, k) for k in RUN_KEYS}, "metrics": {"config_hash": run.metrics.get("config_hash")}}


def _properties(obj: Any) -> dict[str, Any]:
    cls = type(obj)
    if not cls.__module__.startswith(OWN_PACKAGE):
        return {}
    return {name: getattr(obj, name) for name in dir(cls) if isinstance(getattr(cls, name, None), property)}


def plain(obj: Any) -> Any:
    """`obj` as JSON values (see the module's docstring)."""
    if isinstance(obj, Run):
        return _run(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        kept = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if f.metadata.get("summary_json", True)}
        return {k: plain(v) for k, v in {**kept, **_properties(obj)}.items()}
    if isinstance(obj, dict):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [plain(v) for v in (sorted(obj) if isinstance(obj, (set, frozenset)) else obj)]
    if isinstance(obj, np.ndarray):
        return plain(obj.tolist())
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, Path):
        return str(obj)
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    raise TypeError(f"summary.json: cannot write a {type(obj).__name__}")


def save_summary(summary: Any, path: Path) -> Path:
    atomic_write_text(path, json.dumps({"version": SUMMARY_VERSION, **plain(summary)}, ensure_ascii=False, indent=1))
    return path


def load_summary(path: Path) -> Record:
    """A summary.json read back (refused, naming the file, when it is not one or of another version)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"), object_hook=Record)
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not JSON ({err})") from None
    if not isinstance(data, Record) or data.get("version") != SUMMARY_VERSION:  # every JSON object is a Record
        found = data.get("version") if isinstance(data, dict) else None
        raise ValueError(f"{path}: not a report summary of version {SUMMARY_VERSION} (version: {found!r})")
    return data
