"""Finding verdict rows: a benchmark's row over all levels, the rows whose oracle router is shown."""

from __future__ import annotations

from experiments.report.verdict.row import ALL, VerdictRow


def oracle_rows(rows: list[VerdictRow]) -> list[VerdictRow]:
    """The rows whose oracle router is listed beside the configs: each benchmark's row over all levels, or
    its only row."""
    return [v for v in rows if v.oracle and (v.level == ALL or sum(x.benchmark == v.benchmark for x in rows) == 1)]



def overall_row(rows: list[VerdictRow], benchmark: str) -> VerdictRow | None:
    """A benchmark's row over all levels, else its first row."""
    mine = [v for v in rows if v.benchmark == benchmark]
    return next((v for v in mine if v.level == ALL), mine[0] if mine else None)
