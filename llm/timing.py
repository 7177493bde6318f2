"""Timers that hold on an accelerator: the one way this project times work that may run on a GPU.

A CUDA kernel launch returns before the kernel has run, so `time.perf_counter()` read right after a
forward pass measures the launch, not the work: a 53k-token prefill on an H200 read 0.16 s where it
takes about 1 s, and its time landed in whatever was timed next (the decode). `DeviceClock.now()`
therefore waits for the device (`torch.cuda.synchronize`) before every clock read, and a timed
region (`span()`) reads it at both ends. On the CPU the wait is nothing, so the same code times both.

    clock = DeviceClock("cuda:0")
    with clock.span() as prefill:
        model(ids)
    prefill.seconds

`device` is a string or `torch.device` ("cpu", "cuda", "cuda:1", "mps", "xpu", "auto" or None: the
CPU), any object with a `synchronize()` method (a stream, a test's fake device), or a tuple of these. Generation,
embedding and reranking time their GPU work through here (llm/transformers_backend.py, rag/arm.py,
rag/embedders.py, rag/rerank.py).

Every span also reads the process's CPU time (`Span.cpu_s`, `time.process_time`: all its threads): the work
done, which, unlike the wall clock, does not grow when other processes share the machine's cores. An hourly
price with `basis: cpu` charges it (llm/cost.py), so a loaded machine does not make an arm look dearer.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

ACCELERATORS = ("cuda", "mps", "xpu")


def _no_wait() -> None:
    return None


def synchronizer(device: Any) -> Callable[[], None]:
    """What waits until `device` has finished the work queued on it (nothing for the CPU)."""
    if device is None:
        return _no_wait
    if isinstance(device, (list, tuple)):  # several devices (an embedder here, a reranker there): wait for all
        waits = [synchronizer(d) for d in device]

        def wait_all() -> None:
            for wait in waits:
                wait()
        return wait_all
    sync = getattr(device, "synchronize", None)
    if callable(sync):  # a stream, an event, a fake device
        return sync
    kind = str(getattr(device, "type", device)).split(":")[0].strip().lower()
    if kind in ("", "cpu", "meta"):
        return _no_wait
    if kind not in (*ACCELERATORS, "auto"):
        raise ValueError(f"device {device!r}: unknown kind {kind!r}; known: cpu, auto, {', '.join(ACCELERATORS)}")
    import torch

    if kind == "auto":  # as rag/embedders.py resolves it: cuda when torch sees a GPU
        if not torch.cuda.is_available():
            return _no_wait
        kind, device = "cuda", "cuda"
    if kind == "cuda":
        target = torch.device(device) if isinstance(device, str) else device
        return lambda: torch.cuda.synchronize(target)
    module = getattr(torch, kind)
    return module.synchronize


@dataclass
class Span:
    """One timed region: `seconds` is set when it ends."""

    start: float
    seconds: float | None = None
    cpu_start: float = 0.0
    cpu_s: float | None = None  # CPU seconds the process spent in the region (all its threads)


class DeviceClock:
    """A clock whose every reading comes after the device finished its queued work."""

    def __init__(self, device: Any = "cpu", clock: Callable[[], float] = time.perf_counter,
                 cpu_clock: Callable[[], float] = time.process_time):
        self.device = device
        self._sync = synchronizer(device)
        self._clock = clock
        self._cpu = cpu_clock

    def cpu_now(self) -> float:
        """The process's CPU seconds so far (all threads), once the device finished its queued work."""
        self._sync()
        return self._cpu()

    def now(self) -> float:
        """The time once everything queued on the device has run."""
        self._sync()
        return self._clock()

    def since(self, start: float) -> float:
        """Seconds from `start` (an earlier `now()`) until the device's queued work is done."""
        return self.now() - start

    @contextmanager
    def span(self) -> Iterator[Span]:
        """Time a region: the device is drained before the start is read and before the end is read."""
        s = Span(self.now(), cpu_start=self._cpu())
        yield s
        s.seconds = self.now() - s.start
        s.cpu_s = self._cpu() - s.cpu_start
