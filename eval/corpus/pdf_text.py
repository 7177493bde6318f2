"""What a PDF's layout does to its text, undone or said: words hyphenated at line ends, and pages that are
mostly a table.

**Hyphenation.** A PDF typeset with hyphenation splits words at line ends ("en-" / "coding"); read line by
line and reflowed, that became "en- coding", which neither a retriever nor a metric matches with "encoding".
`dehyphenate` joins a word split at a line end: as one word ("encoding") when that is the likelier, else with
its hyphen ("self-contained", "MIME-Magic"), never with a space. The likelier is read off the document itself:
the joined word against the hyphenated one where either occurs elsewhere in it; when neither does, the
hyphen stays if both halves are words the document uses on their own (a compound of two words) or the first
is one of a few prefixes that keep it (self-, non-, well-, half-, all-, ex-), else the word is joined (a
syllable such as "en" is no word of the document). A soft hyphen (U+00AD) at a line end always joins.

**Tables.** Neither PDF parser reads a table as a table: its cells come out as loose text, one value after
another, and cells drawn as images or outlines come out empty. `table_pages` finds the pages that are mostly
a table (a grid of ruled lines or cell rectangles over at least `TABLE_SHARE` of the page, from pypdfium2's
page objects) and counts the characters inside the grid, so a document's warnings can say, per page, that
its table was read as loose text or gave almost no text.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from dataclasses import dataclass

log = logging.getLogger(__name__)

_BREAK = re.compile(r"(\w+)([-\u00ad\u2010])[ \t]*\r?\n[ \t]*(\w+)")
_WORD = re.compile(r"[^\W\d_]+")
_COMPOUND = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)+")
HYPHEN_PREFIXES = frozenset({"self", "non", "well", "half", "all", "ex"})


def _vocabulary(pages: list[str]) -> tuple[Counter, Counter]:
    """(words, hyphenated compounds) of the text, lower case, not counting the halves of line-end breaks."""
    text = "\n".join(_BREAK.sub(" ", p) for p in pages).lower()
    return Counter(_WORD.findall(text)), Counter(_COMPOUND.findall(text))


def _joined(head: str, tail: str, words: Counter, compounds: Counter) -> bool:
    """Whether head + tail is likelier one word than head-tail (the module docstring says how it is read)."""
    one, hyphenated = (head + tail).lower(), f"{head}-{tail}".lower()
    if words[one] != compounds[hyphenated]:
        return words[one] > compounds[hyphenated]
    if head.lower() in HYPHEN_PREFIXES:
        return False
    if not (head[-1:].isalpha() and tail[:1].isalpha() and tail[:1].islower()):
        return False  # "MIME-" / "Magic", "x86-" / "64": a name or a number keeps its hyphen
    return not (words[head.lower()] and words[tail.lower()])


def dehyphenate(pages: list[str]) -> tuple[list[str], int]:
    """The pages with every word split at a line end made whole again (joined, or with its hyphen), and how
    many were joined into one word."""
    words, compounds = _vocabulary(pages)
    joined = 0

    def repair(m: re.Match) -> str:
        nonlocal joined
        head, mark, tail = m.groups()
        if mark == "\u00ad" or _joined(head, tail, words, compounds):
            joined += 1
            return head + tail
        return f"{head}-{tail}"

    out = [_BREAK.sub(repair, p) for p in pages]
    return out, joined


TABLE_SHARE = 0.4  # a grid covering this share of a page makes it "mostly a table"
_LINE = 3.0  # points: a path thinner than this is a ruled line
_EMPTY_PER_CELL = 2  # characters per cell below which a table counts as empty


@dataclass
class TablePage:
    page: int  # 1-based
    share: float  # of the page's area under the grid
    cells: int
    chars: int  # non-space characters inside the grid

    @property
    def empty(self) -> bool:
        return self.chars < _EMPTY_PER_CELL * max(self.cells, 1)


def _grid(boxes: list[tuple[float, float, float, float]], page_area: float) -> tuple[tuple[float, ...], int] | None:
    """(the bounding box, the number of cells) of a grid made of ruled lines or cell rectangles, or None."""
    rows = [b for b in boxes if b[3] - b[1] <= _LINE and b[2] - b[0] >= 30]
    cols = [b for b in boxes if b[2] - b[0] <= _LINE and b[3] - b[1] >= 10]
    cells = [b for b in boxes if b[2] - b[0] > _LINE and b[3] - b[1] > _LINE
             and (b[2] - b[0]) * (b[3] - b[1]) < 0.5 * page_area]
    xs = {round(b[0]) for b in cells}
    ys = {round(b[1]) for b in cells}
    if len(rows) >= 3 and len(cols) >= 2:
        parts, n = rows + cols, (len(rows) - 1) * (len(cols) - 1)
    elif len(cells) >= 4 and len(xs) >= 2 and len(ys) >= 2:
        parts, n = cells, len(cells)
    else:
        return None
    return (min(b[0] for b in parts), min(b[1] for b in parts), max(b[2] for b in parts),
            max(b[3] for b in parts)), n


def table_pages(data: bytes) -> list[TablePage]:
    """The pages of a PDF that are mostly a table, with the characters inside their grids; [] when pypdfium2
    is not installed or cannot read the file (the text came from pypdf: no page says more than it knows)."""
    try:
        import pypdfium2 as pdfium
    except ImportError:
        return []
    out = []
    try:
        pdf = pdfium.PdfDocument(data)
    except Exception as err:  # noqa: BLE001 - pypdf read it; the table check is a bonus, not a second parse
        log.debug("no table check: pypdfium2 cannot open the PDF (%s)", err)
        return []
    try:
        for i in range(len(pdf)):
            page = pdf[i]
            width, height = page.get_size()
            area = max(width * height, 1.0)
            boxes = [tuple(o.get_bounds()) for o in page.get_objects(max_depth=4) if o.type == 2]  # paths
            found = _grid(boxes, area)
            if found is None:
                continue
            (left, bottom, right, top), cells = found
            share = (right - left) * (top - bottom) / area
            if share < TABLE_SHARE:
                continue
            inside = page.get_textpage().get_text_bounded(left, bottom, right, top)
            out.append(TablePage(i + 1, round(share, 2), cells, len("".join(inside.split()))))
    except Exception as err:  # noqa: BLE001 - as above
        log.debug("table check stopped: %s", err)
    finally:
        pdf.close()
    return out


def _pages(pages: list[int]) -> str:
    return "page" if len(pages) == 1 else "pages"


def _are(pages: list[int]) -> str:
    return "is" if len(pages) == 1 else "are"


def table_warning(pages: list[TablePage], ranges) -> str | None:
    """One warning naming the pages that are mostly a table (the PDF parsers read none as a table), those that
    gave almost no text apart."""
    if not pages:
        return None
    empty = [p.page for p in pages if p.empty]
    loose = [p.page for p in pages if not p.empty]
    parts = []
    if empty:
        parts.append(f"{_pages(empty)} {ranges(empty)} {_are(empty)} mostly a table whose cells gave almost no text "
                     "(drawn as images or outlines?): that content is not in the document")
    if loose:
        parts.append(f"{_pages(loose)} {ranges(loose)} {_are(loose)} mostly a table, read as loose text (one cell "
                     "after another, without rows and columns)")
    return "; ".join(parts)


__all__ = ["HYPHEN_PREFIXES", "TABLE_SHARE", "TablePage", "dehyphenate", "table_pages", "table_warning"]
