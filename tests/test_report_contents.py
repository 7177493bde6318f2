"""The report's sections are one list of modules in page order: headings and "section N" references follow it."""

import pytest

from experiments.report.page.contents import Outline
from experiments.report.page.sections import OUTLINE, SECTIONS


def test_titles_and_references_follow_the_list_order():
    assert OUTLINE.contents() == ["1. Verdict", "2. Deployment what-if", "3. Plots", "4. Diagnostics",
                                  "5. Reproducibility"]
    assert OUTLINE.ref("diagnostics") == "section 4"
    moved = Outline((("plots", "Plots"), ("verdict", "Verdict")))
    assert moved.contents() == ["1. Plots", "2. Verdict"]
    assert moved.title("verdict") == "2. Verdict" and moved.ref("plots") == "section 1"


def test_an_unknown_section_is_named():
    with pytest.raises(KeyError, match="'appendix'"):
        OUTLINE.title("appendix")


def test_every_section_owns_its_rows_and_its_rendering():
    """Each module of the list has a name of its own, a rows function and a render function; the first screen
    opens the page and every unnumbered part after it sits under a numbered section."""
    anchors = [section.ANCHOR for section in SECTIONS]
    assert len(set(anchors)) == len(anchors)
    assert all(callable(section.rows) and callable(section.render) for section in SECTIONS)
    assert SECTIONS[0].TITLE is None and SECTIONS[1].TITLE is not None
    assert [s.ANCHOR for s in SECTIONS if s.TITLE] == [anchor for anchor, _ in OUTLINE.numbered]
    with pytest.raises(KeyError, match="'routing'"):
        OUTLINE.ref("routing")  # a subsection has no number of its own
