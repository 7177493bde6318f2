"""The report's sections are numbered by their place in one list: headings and "section N" references follow it."""

import pytest

from experiments.report.page import contents


def test_titles_and_references_follow_the_list_order(monkeypatch):
    assert contents.contents()[0] == "1. Verdict" and contents.section_ref("diagnostics") == "section 4"
    monkeypatch.setattr(contents, "SECTIONS", [("plots", "Plots"), ("verdict", "Verdict")])
    assert contents.contents() == ["1. Plots", "2. Verdict"]
    assert contents.section_title("verdict") == "2. Verdict" and contents.section_ref("plots") == "section 1"


def test_an_unknown_section_is_named():
    with pytest.raises(KeyError, match="'appendix'"):
        contents.section_title("appendix")
