"""One BLAS thread for the report's arithmetic.

The report's matrices are small (documents x configs: the cross-fit's weighted means, the plan's simulations,
bootstrap resamples), and it multiplies them thousands of times. OpenBLAS starts a thread per core for each
product and its threads spin while they wait: on a machine whose cores are busy (a shared node, a sweep still
running, two reports at once) a product of a 160-document matrix took 3.4 ms with the default threads against 0.09
ms with one, and the whole report at 25k records 16.2 s of CPU against 11.3 s. So the report (`build_report`) and
the plan (`python -m experiments.plan`) run with one BLAS thread (threadpoolctl), whatever the machine; the limit is
lifted when they return, so a caller's own work keeps its threads. `RAGLC_REPORT_BLAS_THREADS=N` sets another
count (0: leave the library's default).

The runs' other threads (torch's, for generation and embedding) are set by `generator.threads` and the retriever's
own settings; see docs/incoming/issue-53.md.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

ENV = "RAGLC_REPORT_BLAS_THREADS"


def report_blas_threads() -> int:
    """The BLAS threads the report runs with: `RAGLC_REPORT_BLAS_THREADS`, else 1 (0: the library's default)."""
    raw = os.environ.get(ENV, "1").strip() or "1"
    try:
        n = int(raw)
    except ValueError:
        raise ValueError(f"{ENV}={raw!r}: a whole number of threads (0: the library's default)") from None
    if n < 0:
        raise ValueError(f"{ENV}={n}: 0 or more threads")
    return n


@contextmanager
def report_threads() -> Iterator[None]:
    """BLAS limited to `report_blas_threads()` threads inside the block."""
    n = report_blas_threads()
    if n == 0:
        yield
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=n, user_api="blas"):
        yield


__all__ = ["ENV", "report_blas_threads", "report_threads"]
