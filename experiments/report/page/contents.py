"""The report's numbered sections: one list in page order, and each title numbered by its place in it (a
section moved or added renumbers every heading and every "section N" reference on the page)."""

from __future__ import annotations

SECTIONS = [("verdict", "Verdict"), ("whatif", "Deployment what-if"), ("plots", "Plots"),
            ("diagnostics", "Diagnostics"), ("reproducibility", "Reproducibility")]  # (anchor, title), in page order


def section_number(anchor: str) -> int:
    """A section's number: its place in SECTIONS, from 1."""
    for number, (key, _) in enumerate(SECTIONS, 1):
        if key == anchor:
            return number
    raise KeyError(f"no report section {anchor!r} in SECTIONS")


def section_title(anchor: str) -> str:
    """"3. Plots": a section's heading."""
    return f"{section_number(anchor)}. {dict(SECTIONS)[anchor]}"


def section_ref(anchor: str) -> str:
    """"section 4": how the page refers to a section."""
    return f"section {section_number(anchor)}"


def contents() -> list[str]:
    """The numbered section titles, in page order (the overview's list)."""
    return [section_title(anchor) for anchor, _ in SECTIONS]
