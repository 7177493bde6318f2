"""How the report's tables write a value in a cell: numbers, dollars, shares and ratios, "-" for none."""

from __future__ import annotations

from typing import Any


def fmt(v: Any, digits: int = 2) -> str:
    if v is None or v == "":
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def usd(v: float | None) -> str:
    if v is None:
        return "-"
    if v == 0:
        return "$0"
    return f"${v:.4f}" if v >= 0.01 else f"${v:.2e}"


def pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.0f}%"


def ratio(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"
