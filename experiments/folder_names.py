"""Short, flat, readable run-folder names from a run's overrides (the `safe_dirname` resolver).

Hydra names run folders after `hydra.job.override_dirname` (`arm=rag,retriever=minilm`). A value
holding a `/` would become nested folders, and `..` would climb out of the sweep folder:
`benchmark.path=../shared/data/loong` or `generator.base_url=http://127.0.0.1:8089/v1`. Here such a
value becomes its last two path parts joined by `-` plus `~` and a short hash of the whole value
(`benchmark.path=data-loong~3f2a1c`), a value longer than `MAX_VALUE` keeps its start plus a hash,
and the whole name is capped at `MAX_NAME` characters the same way. Names without such values are
unchanged, so existing run folders keep their names. The full overrides are in
`.hydra/overrides.yaml` of each run.
"""

from __future__ import annotations

import hashlib
import re

from omegaconf import OmegaConf

MAX_VALUE = 48
MAX_NAME = 160
_ITEM = re.compile(r",(?=[\w.+~@/-]+=)")  # the commas that start another key=value, not those inside a list
_UNSAFE = re.compile(r"[\x00-\x1f\\\s\"'*?<>|]+")


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:6]


def _safe_value(value: str) -> str:
    if "/" in value or "\\" in value:
        parts = [p for p in re.split(r"[/\\]+", re.sub(r"^[a-z]+://", "", value)) if p not in ("", ".", "..")]
        value_out = "-".join(parts[-2:]) or "path"
        value_out = f"{_UNSAFE.sub('-', value_out)}~{_short_hash(value)}"
    else:
        value_out = _UNSAFE.sub("-", value)
    if len(value_out) > MAX_VALUE:
        value_out = f"{value_out[:MAX_VALUE - 7]}~{_short_hash(value)}"
    return value_out


def safe_dirname(override_dirname: str) -> str:
    """`override_dirname` with every value made safe for one folder name (see the module doc)."""
    items = []
    for item in _ITEM.split(str(override_dirname)) if override_dirname else []:
        key, sep, value = item.partition("=")
        items.append(f"{_UNSAFE.sub('-', key)}{sep}{_safe_value(value)}" if sep else _safe_value(item))
    name = ",".join(items)
    if len(name) > MAX_NAME:
        name = f"{name[:MAX_NAME - 7]}~{_short_hash(name)}"
    assert "/" not in name and name not in (".", "..")
    return name


def register() -> None:
    """Make `${safe_dirname:...}` available to the config (conf/config.yaml's hydra.run/sweep names)."""
    if not OmegaConf.has_resolver("safe_dirname"):
        OmegaConf.register_new_resolver("safe_dirname", safe_dirname)


register()
