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


def cost_ratio_cell(point: float | None, low: float | None, high: float | None) -> str:
    """RAG ÷ long context's cost with its interval: "0.54x [0.48-0.61]", "0.98x [0.85-1.12] cost tie" where the
    interval holds 1 (neither arm is cheaper), "0.54x" where the interval is the point (exact token prices)."""
    if point is None:
        return "-"
    if low is None or high is None or low >= high:
        return ratio(point)
    return f"{ratio(point)} [{low:.2f}-{high:.2f}]" + (" cost tie" if low <= 1.0 <= high else "")
