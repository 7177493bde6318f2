"""Machine time, not waiting time, for requests that overlap (issue 38, item 4).

A server that answers several requests at once (or queues them: llama.cpp, the project's server) serves each of
them for only part of the wall time it is in flight. `ServiceShares` splits the wall clock among the requests in
flight: while n are in flight each is charged 1/n of every second, so the shares of all requests add up to the time
the client kept the server busy, whatever the concurrency. One request at a time: its share is its wall time.
An hourly price on a `latency` basis charges this share (`Generation.latency_s`); what one user waits stays the
wall time (`Generation.user_latency_s`).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable


class ServiceShares:
    def __init__(self, clock: Callable[[], float] = time.perf_counter):
        self._clock = clock
        self._lock = threading.Lock()
        self._charged: dict[int, float] = {}  # request -> seconds charged so far
        self._last = 0.0
        self._ids = itertools.count()
        self.most_in_flight = 0

    def _advance(self, now: float) -> None:
        if self._charged:
            each = (now - self._last) / len(self._charged)
            for key in self._charged:
                self._charged[key] += each
        self._last = now

    def start(self) -> int:
        """A request goes in flight: its ticket."""
        with self._lock:
            self._advance(self._clock())
            ticket = next(self._ids)
            self._charged[ticket] = 0.0
            self.most_in_flight = max(self.most_in_flight, len(self._charged))
            return ticket

    def stop(self, ticket: int) -> float:
        """The request is done: the seconds of machine time it is charged."""
        with self._lock:
            self._advance(self._clock())
            return self._charged.pop(ticket)
