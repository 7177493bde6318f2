"""A table too wide for the page, split into parts that fit (HTML only; report.md keeps one table).

A browser lays a table out no narrower than the sum of its columns' narrowest widths: the longest word of each
column (or its whole text where it may not wrap). A table of 18 columns is wider than a 1400-px window
whatever wraps, and its last columns ("to decide", "records", "break-even") hid behind a sideways scroll. So
each column's narrowest width is estimated from its text, and the columns after the table's key columns (those
that name a row: benchmark, level, config) are packed, in order, into parts no wider than the page; every part
repeats the key columns, so each row can be read across without scrolling. tests/test_report_layout.py checks
the result in headless Chromium at 1400 px.
"""

from __future__ import annotations

import re

# the widest a table may be: a 1400-px window less the page's margins (document.STYLE: body padding 1em, the
# table area `.table-wrap` up to the window's width), with room to spare for estimates a little short
PAGE_PX = 1300
CHAR_PX = 8.3  # one character of a table cell (0.86em of a 16-px font), a wide one's width (digits, capitals)
CELL_PX = 18  # a cell's padding (0.5em each side) and border
PROSE_PX = 24 * 13.8  # document.PROSE_CELL's cells: min-width 24em at the table's font
LABEL_COLUMN_PX = 7 * 13.8  # `td:first-child { min-width: 7em }`
BREAKABLE_CODE = 16  # characters: a long path or name in `code` breaks anywhere (overflow-wrap), like this many

_LINK = re.compile(r"\[([^\]]+)\]\([^()\s]+\)")
_CODE = re.compile(r"`([^`]+)`")


KEY_HEADS = frozenset({"benchmark", "level", "config", "role"})  # headers of columns that name a row


def key_columns(head: list[str]) -> int:
    """How many leading columns name a row (headed as in KEY_HEADS), at least one."""
    n = 0
    while n < len(head) and head[n] in KEY_HEADS:
        n += 1
    return max(n, 1)


def shown_text(cell: str) -> str:
    """The text a reader sees in a cell: a [text](link) shows its text, `code` and **bold** their words."""
    return _LINK.sub(r"\1", str(cell)).replace("**", "")


def narrowest_px(text: str, whole: bool = False) -> float:
    """The narrowest a cell of `text` can be laid out: its longest word (code: at most BREAKABLE_CODE
    characters, it breaks anywhere), or all of it when `whole` (a cell that keeps to one line)."""
    shown = shown_text(text)
    if whole:
        return len(shown.replace("`", "")) * CHAR_PX + CELL_PX
    words = [min(len(word), BREAKABLE_CODE) for span in _CODE.findall(shown) for word in span.split()]
    words += [len(w) for w in _CODE.sub(" ", shown).split()]
    return max(words, default=0) * CHAR_PX + CELL_PX


def column_px(head: str, cells: list[str], nowrap: bool, label: bool, first: bool, prose_cell: int) -> float:
    """The narrowest width of one column: its header's longest word, and each cell's narrowest width."""
    widest = narrowest_px(head)
    for cell in cells:
        if label and " (" in cell:  # "rag bm25 c128 k4 (61.2)": the label stays on one line
            widest = max(widest, narrowest_px(cell.rpartition(" (")[0], whole=True))
        elif len(shown_text(cell)) > prose_cell and not nowrap:
            widest = max(widest, PROSE_PX)
        else:
            widest = max(widest, narrowest_px(cell, whole=nowrap))
    return max(widest, LABEL_COLUMN_PX) if first else widest


def column_parts(head: list[str], rows: list[list[str]], key: int, nowrap: tuple[int, ...], labels: tuple[int, ...],
                 prose_cell: int, page_px: float = PAGE_PX) -> list[list[int]]:
    """The column indices of each part: the first `key` columns, then as many of the next ones, in order, as fit
    `page_px` (at least one per part). One part holding every column when the whole table fits."""
    widths = [column_px(h, [str(r[i]) for r in rows if i < len(r)], i in nowrap, i in labels, i == 0, prose_cell)
              for i, h in enumerate(head)]
    if sum(widths) <= page_px or key >= len(head):
        return [list(range(len(head)))]
    keys = list(range(key))
    parts: list[list[int]] = []
    part, used = list(keys), sum(widths[:key])
    for i in range(key, len(head)):
        if len(part) > key and used + widths[i] > page_px:
            parts.append(part)
            part, used = list(keys), sum(widths[:key])
        part.append(i)
        used += widths[i]
    parts.append(part)
    return parts
