"""A spend cap for paid sweeps: `run.max_usd` (each config point) and `run.max_usd_sweep` (every point of the sweep
folder together). Default: none (nothing is estimated, nothing checked).

Before the first answer the point's dry-run estimate of what is left to answer (experiments/dry_run.py: every prompt
built and counted as the run builds it, priced under the run's price with each answer's output expected), plus what
its records already spent, is held against the cap; under `run.max_usd_sweep` what the sweep folder's other points'
records spent counts too. Over the cap, the run stops there. During the run, before each document's answers are
generated, what was spent plus those answers' estimate is held against it again, so the run stops before the answer
that would cross it (a price the dry run cannot put dollars on, an hourly price on measured time, is estimated at the
mean cost of the answers so far). What was spent is the records' own `cost_usd`.

A stop ends the run with one line, `stopped at run.max_usd=$0.01: ...` (what was spent, the estimate that would
cross it, how to resume), and exit code 3: every record written is kept, and the same command with a higher cap (the
cap is not part of a run's configuration) resumes where it stopped. Points the sweep started in parallel (a joblib
launcher) see each other's spend as it stood when they started.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from experiments import records as schema

log = logging.getLogger(__name__)

SPEND_CAP_EXIT = 3


class SpendCapReached(Exception):
    """The run stopped at a spend cap: its message is the one line the user sees."""


@dataclass(frozen=True)
class Cap:
    key: str  # the setting: run.max_usd or run.max_usd_sweep
    usd: float
    elsewhere: float = 0.0  # spent by the sweep's other points (run.max_usd_sweep)


def caps_of(run_cfg: Any, run_dir: Path, sweep_dir: Path | None) -> list[Cap]:
    """The caps a run keeps to (none by default); ValueError for a cap that is not a positive number."""
    caps = []
    for key, scope in (("max_usd", None), ("max_usd_sweep", sweep_dir or run_dir.parent)):
        value = run_cfg.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise ValueError(f"run.{key} must be a positive number of US dollars, got {value!r}")
        caps.append(Cap(f"run.{key}", float(value), 0.0 if scope is None else spent_under(scope, run_dir)))
    return caps


def spent_under(folder: Path, but: Path) -> float:
    """What the records under `folder` spent (`cost_usd` of their answers), `but` the run folder's own."""
    total = 0.0
    for path in Path(folder).rglob("records.jsonl"):
        if path.parent.resolve() != Path(but).resolve():
            total += spent(schema.read_records(path).values())
    return total


def spent(records: Iterable[dict[str, Any]]) -> float:
    return sum(float(r.get("cost_usd") or 0.0) for r in records if schema.is_answered(r))


def _usd(amount: float) -> str:
    return f"${amount:.4f}" if amount >= 0.01 else f"${amount:.3g}"


@dataclass
class SpendGuard:
    """The caps of one config point, its answers' estimates (`estimated`, by sample id) and what it spent."""

    caps: list[Cap]
    label: str
    run_dir: Path
    total: int  # the point's questions
    estimated: dict[str, float] = field(default_factory=dict)
    spent: float = 0.0
    answered: int = 0

    def start(self, done: dict[str, dict[str, Any]], todo: list[str]) -> None:
        """Before the first answer: what the records spent plus the estimate of the rest, against every cap."""
        answered = [r for r in done.values() if schema.is_answered(r)]
        self.spent, self.answered = spent(answered), len(answered)
        self.check(todo, "the dry run's estimate of the rest")

    def check(self, ids: list[str], what: str = "the next document's answers, estimated") -> None:
        """Stop (SpendCapReached) where what was spent plus the answers `ids`' estimate would cross a cap."""
        if not ids:
            return
        mean = self.spent / self.answered if self.answered else 0.0
        ahead = sum(self.estimated.get(i, mean) for i in ids)
        for cap in self.caps:
            if cap.elsewhere + self.spent + ahead > cap.usd:
                raise SpendCapReached(self._line(cap, ahead, what))

    def add(self, records: list[dict[str, Any]]) -> None:
        answered = [r for r in records if schema.is_answered(r)]
        self.spent += spent(answered)
        self.answered += len(answered)

    def _line(self, cap: Cap, ahead: float, what: str) -> str:
        sweep = f" with {_usd(cap.elsewhere)} spent by the sweep's other points" if cap.elsewhere else ""
        kept = (f"nothing recorded is lost ({self.run_dir / 'records.jsonl'})" if self.answered else
                "nothing was answered")
        return (f"stopped at {cap.key}={_usd(cap.usd)}: {self.label} spent {_usd(self.spent)} on {self.answered} of "
                f"{self.total} answers{sweep}, and {what} ({_usd(ahead)}) would cross it; {kept}: run the same "
                f"command with a higher {cap.key} to resume")


def spend_guard(run_cfg: Any, run_dir: Path, sweep_dir: Path | None, label: str, total: int,
                estimate: Callable[[], dict[str, float]]) -> SpendGuard | None:
    """The point's guard, its estimates made only where a cap is set (None: no cap)."""
    caps = caps_of(run_cfg, run_dir, sweep_dir)
    if not caps:
        return None
    guard = SpendGuard(caps, label, run_dir, total, estimate())
    if not guard.estimated:
        log.warning("%s: the price puts no dollars on a prompt before it is answered (price=cpu before any probe, or "
                    "measured time): %s is checked against what the answers spend as they come", label,
                    ", ".join(c.key for c in caps))
    return guard


def say_stopped(err: SpendCapReached) -> None:
    """End the process with the stop's one line on stderr and SPEND_CAP_EXIT."""
    import sys

    print(f"\n{err}", file=sys.stderr, flush=True)
    sys.exit(SPEND_CAP_EXIT)
