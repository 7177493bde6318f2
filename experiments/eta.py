"""A config point's time estimate, from its first answers: one log line once the first answers that were
generated (not served from the response cache) come in, and a new one at a quarter, half and three quarters
of the way when the pace has moved by more than a third. It assumes the rest is generated at the pace so
far; answers the response cache serves make the run faster than that."""

from __future__ import annotations

import time

RECHECK = (0.25, 0.5, 0.75)  # shares of the way at which the estimate is looked at again
DRIFT = 1 / 3  # a new estimate is said when it differs from the last said by more than this share


def duration(seconds: float) -> str:
    """"45 s", "12 min", "1 h 05 min"."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"


class TimeEstimate:
    """`answered(n, generated)` after each group of `n` answers (`generated`: the group was not all served from
    the cache) returns the line to log, or None."""

    def __init__(self, total: int, label: str, clock=time.perf_counter):
        self.total, self.label, self.clock = total, label, clock
        self.done = 0
        self.generated = 0  # answers generated (their time measures the pace)
        self.seconds = 0.0  # spent on them
        self.last: float | None = None  # the estimate said last (seconds left)
        self.checks = list(RECHECK)
        self._t = clock()

    def answered(self, n: int, generated: bool) -> str | None:
        now = self.clock()
        spent, self._t = now - self._t, now
        self.done += n
        if not generated:
            return None
        self.generated += n
        self.seconds += spent
        left_n = self.total - self.done
        if left_n <= 0:
            return None
        pace = self.seconds / self.generated
        left = pace * left_n
        if self.last is not None:
            due = [c for c in self.checks if self.done >= c * self.total]
            if not due:
                return None
            self.checks = [c for c in self.checks if c not in due]
            if abs(left - self.last) <= DRIFT * self.last:
                return None
        self.last = left
        return (f"time estimate, {self.label}: about {duration(left)} more for {left_n} of {self.total} questions "
                f"({pace:.1f} s an answer over the {self.generated} generated so far)")


__all__ = ["TimeEstimate", "duration"]
