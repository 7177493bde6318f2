"""The report as a list of blocks, rendered twice: Markdown (report.md, images as relative links)
and a self-contained HTML page (report.html, images embedded as base64 data URIs).

Inline text may use `code` spans, **bold** and [relative links](questions.html#level=1k); everything else is
escaped.
"""

from __future__ import annotations

import base64
import html
import re
from dataclasses import dataclass, field
from pathlib import Path

from experiments.report.page.table_parts import column_parts, key_columns, shown_text


@dataclass
class Heading:
    level: int
    text: str
    anchor: str | None = None  # HTML id of the section it opens (level 2)


@dataclass
class Paragraph:
    text: str


@dataclass
class Bullets:
    items: list[str]


@dataclass
class Table:
    head: list[str]
    rows: list[list[str]]
    caption: str = ""
    css_class: str = ""  # HTML only: e.g. "answer", the report's first table
    nowrap: tuple[int, ...] = ()  # HTML only: columns whose values stay on one line (an interval, a decision)
    labels: tuple[int, ...] = ()  # HTML only: columns of "label (score)" cells: the label stays on one line
    key: int | None = None  # HTML only: the leading columns that name a row, repeated in each part of a table split
    # to fit the page (page/table_parts.py); None: those headed benchmark, level, config or role (at least 1)


@dataclass
class Image:
    path: Path
    alt: str


@dataclass
class Code:
    text: str
    language: str = ""


@dataclass
class Document:
    title: str
    blocks: list = field(default_factory=list)

    def add(self, *blocks) -> Document:
        self.blocks.extend(blocks)
        return self


def _md_cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def to_markdown(doc: Document) -> str:
    out = [f"# {doc.title}", ""]
    for b in doc.blocks:
        if isinstance(b, Heading):
            out += [f"{'#' * b.level} {b.text}", ""]
        elif isinstance(b, Paragraph):
            out += [b.text, ""]
        elif isinstance(b, Bullets):
            out += [f"- {item}" for item in b.items] + [""]
        elif isinstance(b, Table):
            if b.caption:
                out += [f"*{b.caption}*", ""]
            out.append("| " + " | ".join(_md_cell(h) for h in b.head) + " |")
            out.append("|" + "|".join("---" for _ in b.head) + "|")
            out += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in b.rows]
            out.append("")
        elif isinstance(b, Image):
            out += [f"![{b.alt}]({b.path.name})", ""]
        elif isinstance(b, Code):
            out += [f"```{b.language}", b.text.rstrip("\n"), "```", ""]
    return "\n".join(out).rstrip() + "\n"


_INLINE = re.compile(r"`([^`]+)`|\*\*([^*]+)\*\*|\[([^\]]+)\]\(([^()\s]+)\)")


def _inline_html(text: str) -> str:
    parts, pos = [], 0
    for m in _INLINE.finditer(text):
        parts.append(html.escape(text[pos:m.start()]))
        if m.group(1) is not None:
            parts.append(f"<code>{html.escape(m.group(1))}</code>")
        elif m.group(2) is not None:
            parts.append(f"<strong>{html.escape(m.group(2))}</strong>")
        else:  # a [text](link): relative links only (the viewer beside the report), never a script
            href = m.group(4) if not re.match(r"^[a-z][a-z0-9+.-]*:", m.group(4), re.I) else "#"
            parts.append(f'<a href="{html.escape(href)}">{_inline_html(m.group(3))}</a>')
        pos = m.end()
    parts.append(html.escape(text[pos:]))
    return "".join(parts)


# The page is as wide as a 1400-px window allows (tables and plots use it); running text keeps a readable measure
STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; max-width: 1360px; margin: 2em auto;
       padding: 0 1em; color: #1a1a1a; line-height: 1.45; }
p, ul, figcaption, pre { max-width: 75em; }
td code { overflow-wrap: anywhere; }
table.continued { margin-top: 0; }
table { border-collapse: collapse; margin: 0.8em 0 1.4em; font-size: 0.86em; }
th, td { border: 1px solid #bbb; padding: 0.25em 0.5em; text-align: left; vertical-align: top; }
th { background: #eef2f7; }
tr:nth-child(even) td { background: #fafafa; }
caption { caption-side: top; text-align: left; font-style: italic; padding-bottom: 0.3em; }
img { max-width: 100%; border: 1px solid #ddd; margin: 0.5em 0 1.2em; }
pre { background: #f4f4f4; padding: 0.8em; overflow-x: auto; font-size: 0.82em; }
code { background: #f1f1f1; padding: 0 0.2em; }
section { margin-bottom: 2em; }
.table-wrap { overflow-x: auto; max-width: 100%; }
table.answer { font-size: 0.9em; }
.nowrap { white-space: nowrap; }
table.answer th { vertical-align: bottom; }
td:first-child { min-width: 7em; }
td.prose { min-width: 24em; }
@media print { img { max-width: 100%; page-break-inside: avoid; } table { page-break-inside: auto; } }
"""


PROSE_CELL = 60  # characters: a longer cell is a sentence or more and gets a readable width


def _td(text: str, nowrap: bool = False, label: bool = False) -> str:
    """A table cell; a long one (a sentence in a wide table) keeps a readable width instead of being
    squeezed into a column a few words wide (its table scrolls sideways inside its wrapper); a nowrap
    one stays on one line; in a label one, "rag bm25 c128 k4 (61.2)", the words before the last " ("
    stay on one line and the score may wrap below them."""
    if label and " (" in text:
        name, _, rest = text.rpartition(" (")
        return f'<td><span class="nowrap">{_inline_html(name)}</span> {_inline_html("(" + rest)}</td>'
    css = ' class="nowrap"' if nowrap else ' class="prose"' if len(shown_text(text)) > PROSE_CELL else ""
    return f"<td{css}>{_inline_html(text)}</td>"


def _table_html(b: Table) -> list[str]:
    """The table, or its parts where it is wider than the page (page/table_parts.py), each in a scrolling wrapper
    (a table of one part that still overflows scrolls rather than spills over the page)."""
    out = []
    key = key_columns(b.head) if b.key is None else b.key
    for n, cols in enumerate(column_parts(b.head, [[str(c) for c in r] for r in b.rows], key, b.nowrap, b.labels,
                                          PROSE_CELL)):
        cap = f"<caption>{_inline_html(b.caption)}</caption>" if b.caption and n == 0 else ""
        head = "".join(f"<th>{_inline_html(b.head[i])}</th>" for i in cols)
        rows = "".join("<tr>" + "".join(_td(str(row[i]), i in b.nowrap, i in b.labels) for i in cols if i < len(row))
                       + "</tr>" for row in b.rows)
        classes = " ".join(c for c in (b.css_class if n == 0 else "", "continued" if n else "") if c)
        css = f' class="{html.escape(classes)}"' if classes else ""
        out.append(f'<div class="table-wrap"><table{css}>{cap}<thead><tr>{head}</tr></thead>'
                   f'<tbody>{rows}</tbody></table></div>')
    return out


def _data_uri(path: Path) -> str:
    data = Path(path).read_bytes()
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def to_html(doc: Document) -> str:
    body: list[str] = []
    open_section = False
    for b in doc.blocks:
        if isinstance(b, Heading):
            if b.level == 2:
                if open_section:
                    body.append("</section>")
                body.append(f'<section id="{html.escape(b.anchor or "")}">' if b.anchor else "<section>")
                open_section = True
            body.append(f"<h{b.level}>{_inline_html(b.text)}</h{b.level}>")
        elif isinstance(b, Paragraph):
            body.append(f"<p>{_inline_html(b.text)}</p>")
        elif isinstance(b, Bullets):
            body.append("<ul>" + "".join(f"<li>{_inline_html(i)}</li>" for i in b.items) + "</ul>")
        elif isinstance(b, Table):
            body += _table_html(b)
        elif isinstance(b, Image):
            body.append(f'<figure><img src="{_data_uri(b.path)}" alt="{html.escape(b.alt)}" '
                        f'data-file="{html.escape(b.path.name)}"><figcaption>{html.escape(b.alt)}</figcaption></figure>')
        elif isinstance(b, Code):
            body.append(f"<pre><code>{html.escape(b.text)}</code></pre>")
    if open_section:
        body.append("</section>")
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{html.escape(doc.title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
            f"<h1>{html.escape(doc.title)}</h1>\n" + "\n".join(body) + "\n</body>\n</html>\n")
