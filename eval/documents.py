"""A team's own files as text: `.txt`, `.md`, `.html`/`.htm`, `.pdf`, `.docx`, and a BEIR `corpus.jsonl`.

`read_folder(root)` parses every file under `root` (recursively, hidden files and folders left out)
into `ParsedDocument`s named by their path relative to `root` (a `corpus.jsonl` gives one document
per line, named by its `_id`). Parsers are light, CPU-only and download nothing (the `docs` extra):
pypdf for PDFs (pypdfium2 where pypdf fails), python-docx, BeautifulSoup with lxml, and
charset-normalizer for text files that are not UTF-8 (UTF-16 with or without a byte order mark,
GB18030, ...).

A PDF keeps where each page starts (`page_starts`, char offsets), so evidence can be reported by
page (`page_of`). What may have lost text is said, not hidden: pages with almost no text (probably
scanned; there is no OCR) and words glued together (a PDF without spaces) are `warnings` of the
document. A file that cannot be parsed (encrypted or broken PDF, no text, unknown extension) is a
`BadFile` with its reason; the caller decides whether that stops the load.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from eval.registry import require

TEXT_SUFFIXES = (".txt", ".md", ".markdown")
HTML_SUFFIXES = (".html", ".htm")
SUFFIXES = (*TEXT_SUFFIXES, *HTML_SUFFIXES, ".pdf", ".docx")
BEIR_CORPUS = "corpus.jsonl"
NEAR_EMPTY_PAGE = 20  # characters: a PDF page with fewer is probably a scan
DOCS_HINT = "make install (or: pip install 'rag-or-longctx[docs]')"
_GLUED = re.compile(r"[A-Za-z]{30,}")  # a "word" of 30+ letters: spaces lost in extraction


@dataclass
class ParsedDocument:
    doc_id: str  # the path relative to the folder (posix), or a BEIR `_id`
    text: str
    title: str = ""
    page_starts: list[int] = field(default_factory=list)  # PDF: char offset where each page begins
    warnings: list[str] = field(default_factory=list)

    def page_of(self, offset: int) -> int | None:
        """The 1-based page holding char `offset` (None: not a paged document)."""
        if not self.page_starts:
            return None
        return bisect.bisect_right(self.page_starts, offset)


@dataclass
class BadFile:
    path: str  # relative to the folder
    reason: str


class Unparsable(ValueError):
    """A file that gives no usable text, with the reason."""


def decode_bytes(data: bytes) -> str:
    """Text of a file in an unknown encoding: a byte order mark first, then UTF-8, then the best guess of
    charset-normalizer (GB18030, Latin-1, ...)."""
    for bom, codec in ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16")):
        if data.startswith(bom):
            return data.decode(codec)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    charset_normalizer = require("charset_normalizer", "benchmark=corpus", DOCS_HINT)
    best = charset_normalizer.from_bytes(data).best()
    if best is None:
        raise Unparsable("not text in any encoding charset-normalizer knows")
    return str(best)


def _text_file(path: Path) -> ParsedDocument:
    return ParsedDocument("", decode_bytes(path.read_bytes()))


def _html_file(path: Path) -> ParsedDocument:
    bs4 = require("bs4", "benchmark=corpus (HTML)", DOCS_HINT)
    soup = bs4.BeautifulSoup(decode_bytes(path.read_bytes()), "lxml")
    for tag in soup(["script", "style", "noscript", "template"]):
        tag.decompose()
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    lines = [line.strip() for line in soup.get_text("\n").splitlines()]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    return ParsedDocument("", text, title=title)


def _pdf_pages_pypdf(path: Path) -> list[str]:
    pypdf = require("pypdf", "benchmark=corpus (PDF)", DOCS_HINT)
    reader = pypdf.PdfReader(str(path))
    if reader.is_encrypted and not reader.decrypt(""):
        raise Unparsable("encrypted PDF (needs a password)")
    return [page.extract_text() or "" for page in reader.pages]


def _pdf_pages_pdfium(path: Path) -> list[str]:
    pdfium = require("pypdfium2", "benchmark=corpus (PDF)", DOCS_HINT)
    pdf = pdfium.PdfDocument(str(path))
    try:
        return [pdf[i].get_textpage().get_text_range() for i in range(len(pdf))]
    finally:
        pdf.close()


def _pdf_file(path: Path) -> ParsedDocument:
    try:
        pages = _pdf_pages_pypdf(path)
    except Unparsable:
        raise
    except Exception as first:  # noqa: BLE001 - any pypdf failure: the second parser gets its chance
        try:
            pages = _pdf_pages_pdfium(path)
        except Exception as second:  # noqa: BLE001 - both failed: the file is named with both reasons
            raise Unparsable(f"unreadable PDF (pypdf: {first}; pypdfium2: {second})") from None
    starts, parts, at = [], [], 0
    for page in pages:
        page = page.replace("\r\n", "\n").strip("\n")
        starts.append(at)
        parts.append(page)
        at += len(page) + 2  # pages are joined by a blank line
    doc = ParsedDocument("", "\n\n".join(parts), page_starts=starts)
    near_empty = [i + 1 for i, p in enumerate(parts) if len(p.strip()) < NEAR_EMPTY_PAGE]
    if near_empty and len(near_empty) < len(parts):
        doc.warnings.append(f"{len(near_empty)} of {len(parts)} pages have almost no text (scanned? no OCR): "
                            f"pages {_ranges(near_empty)}")
    return doc


def _docx_file(path: Path) -> ParsedDocument:
    docx = require("docx", "benchmark=corpus (Word)", DOCS_HINT)
    try:
        document = docx.Document(str(path))
    except Exception as err:  # noqa: BLE001 - python-docx raises several kinds for a broken file
        raise Unparsable(f"unreadable Word file ({type(err).__name__}: {err})") from None
    parts = [p.text for p in document.paragraphs]
    for table in document.tables:
        for row in table.rows:
            parts.append("\t".join(cell.text for cell in row.cells))
    title = document.core_properties.title or ""
    return ParsedDocument("", "\n".join(parts).strip(), title=title)


PARSERS: dict[str, Callable[[Path], ParsedDocument]] = {
    **{s: _text_file for s in TEXT_SUFFIXES}, **{s: _html_file for s in HTML_SUFFIXES},
    ".pdf": _pdf_file, ".docx": _docx_file,
}


def parse_file(path: Path, name: str) -> ParsedDocument:
    """One file as a `ParsedDocument` named `name`; `Unparsable` says why it gives no text."""
    parser = PARSERS.get(path.suffix.lower())
    if parser is None:
        raise Unparsable(f"unknown extension {path.suffix or '(none)'!r}; read are: {', '.join(SUFFIXES)}, "
                         f"{BEIR_CORPUS}")
    doc = parser(path)
    doc.doc_id = name
    if not doc.text.strip():
        raise Unparsable("no text in it" + (" (a scanned PDF? there is no OCR)" if path.suffix.lower() == ".pdf"
                                            else ""))
    glued = _GLUED.findall(doc.text)
    if len(glued) >= 3:
        doc.warnings.append(f"{len(glued)} words of 30+ letters (spaces lost in extraction?), e.g. {glued[0][:40]!r}")
    return doc


def beir_corpus(path: Path, name: str) -> Iterator[ParsedDocument | BadFile]:
    """The documents of a BEIR `corpus.jsonl` (`{_id, title, text}` per line)."""
    from eval.benchmarks._files import DataError, read_records

    try:
        for row in read_records(path):
            try:
                doc_id, text = row.field("_id", (str, int)), row.field("text", str)
                title = row.field("title", str, "")
            except DataError as err:
                yield BadFile(f"{name}:{row.line}", err.detail)
                continue
            if not text.strip():
                yield BadFile(f"{name}:{row.line}", f"document {doc_id!r} has no text")
                continue
            yield ParsedDocument(str(doc_id), f"{title}\n{text}" if title else text, title=title)
    except DataError as err:
        yield BadFile(name if err.line is None else f"{name}:{err.line}", err.detail)


def files_under(root: Path) -> list[Path]:
    """Every file under `root`, hidden files and folders left out, in a stable order."""
    out = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_file() and not any(part.startswith(".") for part in rel.parts):
            out.append(path)
    return out


def read_folder(root: str | Path, leave_out: tuple[Path, ...] = ()) -> tuple[list[ParsedDocument], list[BadFile]]:
    """(documents, bad files) of every file under `root`; `leave_out`: files that are not documents
    (the questions file, when it lies in the folder)."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"benchmark.path={str(root)!r} is not a folder")
    skip = {p.resolve() for p in leave_out}
    docs: list[ParsedDocument] = []
    bad: list[BadFile] = []
    for path in files_under(root):
        if path.resolve() in skip:
            continue
        name = path.relative_to(root).as_posix()
        if path.name == BEIR_CORPUS:
            for item in beir_corpus(path, name):
                (bad if isinstance(item, BadFile) else docs).append(item)  # type: ignore[arg-type]
            continue
        try:
            docs.append(parse_file(path, name))
        except Unparsable as err:
            bad.append(BadFile(name, str(err)))
        except OSError as err:
            bad.append(BadFile(name, f"cannot be read: {err.strerror or err}"))
    return docs, bad


def _ranges(pages: list[int]) -> str:
    """1, 2, 3, 7 -> "1-3, 7"."""
    out, start, prev = [], pages[0], pages[0]
    for p in pages[1:] + [None]:  # type: ignore[list-item]
        if p is not None and p == prev + 1:
            prev = p
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if p is not None:
            start = prev = p
    return ", ".join(out)


__all__ = ["BEIR_CORPUS", "SUFFIXES", "BadFile", "ParsedDocument", "Unparsable", "decode_bytes", "parse_file",
           "read_folder"]
