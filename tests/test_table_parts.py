"""A table wider than the page is split, in the HTML report only, into parts that each fit and repeat the columns
that name a row (experiments/report/page/table_parts.py); the browser check is in tests/test_first_screen.py."""

from __future__ import annotations

import re

from experiments.report.page.document import Document, Table, to_html, to_markdown
from experiments.report.page.table_parts import PAGE_PX, column_parts, column_px, key_columns, narrowest_px

WIDE_HEAD = ["benchmark", "level", "decision", *(f"measure number {i}" for i in range(14)), "to decide",
             "recommendation"]
WIDE_ROW = ["sim", "8k", "**rag**", *("+37.5 [+6.1, +68.9]" for _ in range(14)), "decided",
            "Use RAG: RAG is better (the whole 97% interval is above 0), 35x fewer prompt tokens at 0.03x the cost."]


def _widths(head, rows, prose_cell=60):
    return [column_px(h, [r[i] for r in rows], False, False, i == 0, prose_cell) for i, h in enumerate(head)]


def test_a_wide_table_splits_into_parts_that_fit_and_repeat_the_key_columns():
    parts = column_parts(WIDE_HEAD, [WIDE_ROW], key_columns(WIDE_HEAD), (), (), 60)
    widths = _widths(WIDE_HEAD, [WIDE_ROW])
    assert sum(widths) > PAGE_PX and len(parts) >= 2
    assert all(p[:2] == [0, 1] for p in parts), "benchmark and level open every part"
    assert [i for p in parts for i in p[2:]] == list(range(2, len(WIDE_HEAD))), "every other column once, in order"
    assert all(sum(widths[i] for i in p) <= PAGE_PX for p in parts)
    assert len(WIDE_HEAD) - 1 in parts[-1]  # the recommendation, past the edge before, is in a part of its own


def test_a_table_that_fits_stays_whole_and_markdown_is_never_split():
    narrow = Table(["package", "version"], [["torch", "2.13.0"]])
    wide = Table(WIDE_HEAD, [WIDE_ROW])
    html = to_html(Document("t", [narrow, wide]))
    assert html.count("<table") == 1 + len(column_parts(WIDE_HEAD, [WIDE_ROW], 2, (), (), 60))
    assert html.count('<table class="continued">') >= 1 and html.count("<caption>") == 0
    assert re.search(r'<table class="continued"><thead><tr><th>benchmark</th><th>level</th>', html)
    assert to_markdown(Document("t", [wide])).count("| benchmark |") == 1


def test_a_cell_is_as_narrow_as_its_longest_shown_word():
    link = "[92 (23%)](questions.html#bench=sim_longctx&cell=both_right)"  # shows "92 (23%)"
    assert narrowest_px(link) == narrowest_px("92 (23%)") < narrowest_px("questions.html#bench=sim_longctx")
    assert narrowest_px("`../runs/a/very/long/path/to/a/run/folder`") < narrowest_px("../runs/a/very/long/path")
    assert narrowest_px("a b", whole=True) > narrowest_px("a b")
    assert key_columns(["config", "benchmark", "score"]) == 2 and key_columns(["package", "version"]) == 1
