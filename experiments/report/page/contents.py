"""The numbers of the report's sections: each numbered section's title carries its place among the numbered ones
in the page's one list of sections (experiments.report.page.sections.SECTIONS), so a section moved or added
renumbers every heading and every "section N" reference on the page."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Outline:
    """The numbered sections, (anchor, title) in page order."""
    numbered: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, sections: Iterable[Any]) -> Outline:
        """The outline of a list of sections (each with `ANCHOR` and `TITLE`; a TITLE of None is not numbered)."""
        return cls(tuple((section.ANCHOR, section.TITLE) for section in sections if section.TITLE))

    def number(self, anchor: str) -> int:
        """A section's number: its place in the outline, from 1."""
        for number, (key, _) in enumerate(self.numbered, 1):
            if key == anchor:
                return number
        raise KeyError(f"no numbered report section {anchor!r} (sections: {', '.join(k for k, _ in self.numbered)})")

    def title(self, anchor: str) -> str:
        """"3. Plots": a section's heading."""
        return f"{self.number(anchor)}. {dict(self.numbered)[anchor]}"

    def ref(self, anchor: str) -> str:
        """"section 4": how the page refers to a section."""
        return f"section {self.number(anchor)}"

    def contents(self) -> list[str]:
        """The numbered section titles, in page order (the overview's list)."""
        return [self.title(anchor) for anchor, _ in self.numbered]
