"""A document as the arms see it: the text its parse gives (what long context reads whole, or cut to its window,
and what RAG chunks), and what the parse kept and dropped, counted. `rol-describe --document FILE` prints it.

The text is the parser's own (eval/corpus/parsers.py, the same function a run's load calls, so the same text as
the parse cache holds). What is counted, per kind of file:

- HTML: the content taken (the page's `<main>`, its `<article>`s or its `<body>`) and its words against the
  page's; the tables (rows on lines, cells separated by tabs) and footnotes kept; the words outside the content;
  and each kind of furniture removed inside it (navigation, page headers and footers, asides, forms and search
  boxes, heading anchors, on-page tables of contents, hidden elements, scripts and styles), elements and words
  (eval/corpus/html_text.py says what counts as furniture);
- PDF: the pages, those with almost no text (a scan: there is no OCR) and those that are mostly a table (read as
  loose text);
- Word: the paragraphs and the tables kept (the tables' rows after the paragraphs, cells separated by tabs) and the
  words of page headers and footers, which are not read;
- text and Markdown: the encoding read; nothing is dropped.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from eval.corpus.html_text import parse_page
from eval.corpus.parsers import HTML_SUFFIXES, NEAR_EMPTY_PAGE, decoded, parse_bytes
from eval.corpus.pdf_text import table_pages


def document_view(path: str | Path) -> dict[str, Any]:
    """The document's parsed text and what the parse kept and dropped (the module doc); `Unparsable` (a
    ValueError) says why a file gives no text."""
    path = Path(path)
    data = path.read_bytes()
    suffix = path.suffix.lower()
    doc = parse_bytes(data, suffix)
    if suffix in HTML_SUFFIXES:
        kept, dropped = _html(data, doc.text)
    elif suffix == ".pdf":
        kept, dropped = _pdf(data, doc.text, doc.page_starts)
    elif suffix == ".docx":
        kept, dropped = _docx(data)
    else:
        kept, dropped = {"encoding": decoded(data)[1]}, {}
    return {"document": str(path), "kind": suffix.lstrip("."), "title": doc.title, "characters": len(doc.text),
            "words": len(doc.text.split()), "kept": kept, "dropped": dropped, "warnings": list(doc.warnings),
            "text": doc.text}


def _html(data: bytes, text: str) -> tuple[dict[str, Any], dict[str, Any]]:
    page = parse_page(decoded(data)[0])
    kept = {"content taken": f"the page's <{page.content}>", "words kept": len(text.split()),
            "words in the page": page.words_in_page, "tables": page.tables, "footnotes": page.footnotes}
    where = f"outside the <{page.content}>"
    dropped: dict[str, Any] = {where: {"words": page.words_outside_content}} if page.words_outside_content else {}
    dropped.update({f"{kind} ({where})": {"elements": n, "words": words} for kind, (n, words) in page.outside.items()})
    dropped.update({kind: {"elements": n, "words": words} for kind, (n, words) in page.dropped.items()})
    return kept, dropped


def _pdf(data: bytes, text: str, starts: list[int]) -> tuple[dict[str, Any], dict[str, Any]]:
    ends = starts[1:] + [len(text)]
    near_empty = sum(1 for a, b in zip(starts, ends, strict=True) if len(text[a:b].strip()) < NEAR_EMPTY_PAGE)
    return ({"pages": len(starts), "pages mostly a table (read as loose text)": len(table_pages(data))},
            {"pages with almost no text (scanned? no OCR)": near_empty})


def _docx(data: bytes) -> tuple[dict[str, Any], dict[str, Any]]:
    import docx

    document = docx.Document(io.BytesIO(data))
    margins = [p.text for s in document.sections for part in (s.header, s.footer) for p in part.paragraphs]
    return ({"paragraphs": sum(1 for p in document.paragraphs if p.text.strip()), "tables": len(document.tables)},
            {"page headers and footers": {"words": len(" ".join(margins).split())}})


def _counted(part: dict[str, Any]) -> str:
    items = []
    for what, value in part.items():
        if isinstance(value, dict):
            items.append(f"{what}: " + ", ".join(f"{n:,} {unit[:-1] if n == 1 else unit}" for unit, n in value.items()))
        else:
            items.append(f"{what}: {value:,}" if isinstance(value, int) else f"{what}: {value}")
    return "; ".join(items) or "nothing"


def render(view: dict[str, Any]) -> str:
    """The view as a reader reads it: a head line, the text between rules, then what was kept and dropped."""
    rule = "-" * 72
    head = (f"{view['document']} ({view['kind']}): {view['characters']:,} characters, {view['words']:,} words"
            + (f", title {view['title']!r}" if view["title"] else "") + "; the text every arm reads:")
    lines = [head, rule, view["text"], rule, f"kept: {_counted(view['kept'])}",
             f"dropped: {_counted(view['dropped'])}"]
    lines += [f"warning: {w}" for w in view["warnings"]]
    return "\n".join(lines)


__all__ = ["document_view", "render"]
