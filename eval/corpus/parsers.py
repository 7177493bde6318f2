"""One file's bytes -> text: `.txt`/`.md` (any encoding charset-normalizer detects), `.html`, `.pdf` (pages kept),
`.docx`; what may have lost text said as the document's warnings, and the key a parse is cached by.

A PDF keeps where each page starts (`page_starts`, char offsets), so evidence can be reported by
page (`page_of`); its words hyphenated at line ends are made whole (eval/corpus/pdf_text.py). An HTML
page gives its main content, inline elements run on with their neighbours (eval/corpus/html_text.py).
What may have lost text is said, not hidden: pages with almost no text (probably scanned; there is no
OCR), pages that are mostly a table (read as loose text, or giving almost no text) and words glued
together (a PDF without spaces) are `warnings` of the document. A file that cannot be parsed
(encrypted or broken PDF, no text) is `Unparsable`.

Parsing is keyed by `document_key` (SHA-256 of the file's bytes, its suffix, `PARSER_VERSION` and the
versions of the parsing libraries), so a cache (`eval.corpus.cache`) hands back the same text, and so
the same char offsets, for the same file on every run."""

from __future__ import annotations

import bisect
import hashlib
import io
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from importlib import metadata
from pathlib import Path

from eval.corpus.html_text import html_page
from eval.corpus.pdf_text import dehyphenate, table_pages, table_warning
from eval.registry import MissingExtra, require

log = logging.getLogger(__name__)


PARSER_VERSION = 5  # bump when a parser's output changes: cached parses of older versions are not used


TEXT_SUFFIXES = (".txt", ".md", ".markdown")


HTML_SUFFIXES = (".html", ".htm")


SUFFIXES = (*TEXT_SUFFIXES, *HTML_SUFFIXES, ".pdf", ".docx")
BEIR_CORPUS = "corpus.jsonl"  # not parsed here: a folder's BEIR corpus is read by eval.corpus.beir


NEAR_EMPTY_PAGE = 20  # characters: a PDF page with fewer is probably a scan


DOCS_HINT = "make install (or: pip install 'rag-or-longctx[docs]')"


_GLUED = re.compile(r"[A-Za-z]{30,}")  # a "word" of 30+ letters: spaces lost in extraction


_CJK_CHAR = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]")


_LIBRARIES = {  # the distributions whose versions are part of a parse's cache key
    **{s: ("charset-normalizer",) for s in TEXT_SUFFIXES},
    **{s: ("beautifulsoup4", "lxml", "charset-normalizer") for s in HTML_SUFFIXES},
    ".pdf": ("pypdf", "pypdfium2"), ".docx": ("python-docx",),
}


@dataclass
class ParsedDocument:
    doc_id: str  # the path relative to the folder (posix), or a BEIR `_id`
    text: str
    title: str = ""
    page_starts: list[int] = field(default_factory=list)  # PDF: char offset where each page begins
    warnings: list[str] = field(default_factory=list)
    footnotes: int = 0  # HTML: footnotes kept in the text (eval/corpus/html_text.py)

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


def decoded(data: bytes) -> tuple[str, str]:
    """(text, encoding) of a file in an unknown encoding: a byte order mark first, then UTF-16 where every
    other byte is NUL, then UTF-8, then GB18030 where it decodes to Chinese text, then the best guess of
    charset-normalizer (Latin-1, ...; the encoding it names ends in "(guessed)", as a short text may be
    guessed wrong). GB18030 is tried before the guesser because the guesser takes short Chinese text for
    Korean: the project reads English and Chinese (Korean or Japanese files in legacy encodings: save them
    as UTF-8)."""
    for bom, codec in ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16")):
        if data.startswith(bom):
            return _decode(data, codec), codec
    utf16 = _utf16_without_bom(data)
    if utf16:
        return _decode(data, utf16), utf16
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    chinese = _gb18030(data)
    if chinese is not None:
        return chinese, "gb18030"
    charset_normalizer = require("charset_normalizer", "benchmark=corpus", DOCS_HINT)
    best = charset_normalizer.from_bytes(data).best()
    if best is None:
        raise Unparsable("not text in any encoding charset-normalizer knows")
    return str(best), f"{best.encoding} (guessed)"


def decode_bytes(data: bytes) -> str:
    """The text of `decoded`."""
    return decoded(data)[0]


def _gb18030(data: bytes) -> str | None:
    """`data` as GB18030 when it decodes strictly and nine in ten of its non-ASCII characters are Chinese
    characters or CJK punctuation (Latin-1 text almost never decodes; when it does, it is not Chinese)."""
    try:
        text = data.decode("gb18030")
    except UnicodeDecodeError:
        return None
    wide = [c for c in text if not c.isascii()]
    cjk = sum(1 for c in wide if _CJK_CHAR.match(c))
    return text if wide and cjk >= 0.9 * len(wide) else None


def _decode(data: bytes, codec: str) -> str:
    try:
        return data.decode(codec)
    except UnicodeDecodeError as err:
        raise Unparsable(f"not {codec} text although it starts like it (byte {err.start + 1})") from None


def _utf16_without_bom(data: bytes) -> str | None:
    """`utf-16-le`/`utf-16-be` for text where most even (odd) bytes are NUL, as ASCII in UTF-16 is."""
    sample = data[:4096]
    if len(sample) < 4 or len(sample) % 2 or sample.count(0) < len(sample) // 4:
        return None
    odd, even = sample[1::2].count(0), sample[0::2].count(0)
    if odd > 0.4 * len(sample) / 2 and even == 0:
        return "utf-16-le"
    if even > 0.4 * len(sample) / 2 and odd == 0:
        return "utf-16-be"
    return None


def _guess_warnings(encoding: str) -> list[str]:
    if not encoding.endswith("(guessed)"):
        return []
    return [f"not UTF-8, UTF-16 or GB18030; read as {encoding}: check its accents, or save it as UTF-8"]


def _text_file(data: bytes) -> ParsedDocument:
    text, encoding = decoded(data)
    return ParsedDocument("", text, warnings=_guess_warnings(encoding))


def _html_file(data: bytes) -> ParsedDocument:
    """The page's main content (navigation, header, footer, search and scripts left out), inline elements run on
    with their neighbours: eval/corpus/html_text.py."""
    require("bs4", "benchmark=corpus (HTML)", DOCS_HINT)
    markup, encoding = decoded(data)
    text, title, footnotes = html_page(markup)
    return ParsedDocument("", text, title=title, warnings=_guess_warnings(encoding), footnotes=footnotes)


def _pdf_pages_pypdf(data: bytes) -> list[str]:
    pypdf = require("pypdf", "benchmark=corpus (PDF)", DOCS_HINT)
    reader = pypdf.PdfReader(io.BytesIO(data))
    if reader.is_encrypted and not reader.decrypt(""):
        raise Unparsable("encrypted PDF (needs a password)")
    return [page.extract_text() or "" for page in reader.pages]


def _pdf_pages_pdfium(data: bytes) -> list[str]:
    pdfium = require("pypdfium2", "benchmark=corpus (PDF)", DOCS_HINT)
    pdf = pdfium.PdfDocument(data)
    try:
        return [pdf[i].get_textpage().get_text_range() for i in range(len(pdf))]
    finally:
        pdf.close()


def reflow(page: str) -> str:
    """A PDF page's text as written, not as laid out: a line break inside a paragraph (the PDF wrapped the line)
    becomes a space, a blank line stays a paragraph break. Text extracted line by line has a break at every
    wrapped line; left in, it changes how a tokenizer counts and so where chunks fall: LooGLE documents written
    as PDFs gave recall@1 0.06 off their plain text with the breaks, 0.00 to 0.01 without (perf/corpus_parity.py).
    Headings and list items without a blank line after them join the next line, which retrieval barely notices."""
    page = page.replace("\r\n", "\n").strip()
    paragraphs = re.split(r"\n[ \t]*\n+", page)
    return "\n\n".join(re.sub(r"[ \t]*\n[ \t]*", " ", p).strip() for p in paragraphs if p.strip())


def _pdf_file(data: bytes) -> ParsedDocument:
    try:
        pages = _pdf_pages_pypdf(data)
    except (Unparsable, MissingExtra):
        raise
    except Exception as first:  # noqa: BLE001 - any pypdf failure: the second parser gets its chance
        try:
            pages = _pdf_pages_pdfium(data)
        except MissingExtra:
            raise
        except Exception as second:  # noqa: BLE001 - both failed: the file is named with both reasons
            raise Unparsable(f"unreadable PDF (pypdf: {first}; pypdfium2: {second})") from None
    pages, joined = dehyphenate(pages)
    if joined:
        log.debug("joined %d words hyphenated at line ends", joined)
    starts, parts, at = [], [], 0
    for page in pages:
        page = reflow(page)
        starts.append(at)
        parts.append(page)
        at += len(page) + 1  # pages are joined by a space: a page break is layout, like a wrapped line
    doc = ParsedDocument("", " ".join(parts), page_starts=starts)
    near_empty = [i + 1 for i, p in enumerate(parts) if len(p.strip()) < NEAR_EMPTY_PAGE]
    if near_empty and len(near_empty) < len(parts):
        doc.warnings.append(f"{len(near_empty)} of {len(parts)} pages have almost no text (scanned? no OCR): "
                            f"pages {_ranges(near_empty)}")
    tables = table_warning([t for t in table_pages(data) if t.page not in near_empty], _ranges)
    if tables:
        doc.warnings.append(tables)
    return doc


def _docx_file(data: bytes) -> ParsedDocument:
    docx = require("docx", "benchmark=corpus (Word)", DOCS_HINT)
    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as err:  # noqa: BLE001 - python-docx raises several kinds for a broken file
        raise Unparsable(f"unreadable Word file ({type(err).__name__}: {err})") from None
    parts = [p.text for p in document.paragraphs]
    for table in document.tables:
        for row in table.rows:
            parts.append("\t".join(cell.text for cell in row.cells))
    title = document.core_properties.title or ""
    return ParsedDocument("", "\n".join(parts).strip(), title=title)


PARSERS: dict[str, Callable[[bytes], ParsedDocument]] = {
    **{s: _text_file for s in TEXT_SUFFIXES}, **{s: _html_file for s in HTML_SUFFIXES},
    ".pdf": _pdf_file, ".docx": _docx_file,
}


@cache
def _library_versions(suffix: str) -> str:
    def version(dist: str) -> str:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return "absent"

    return ",".join(f"{dist}={version(dist)}" for dist in _LIBRARIES.get(suffix, ()))


def document_key(data: bytes, suffix: str) -> str:
    """The cache key of a parse: the file's bytes, its suffix, `PARSER_VERSION` and the parsing libraries'
    versions (a new parser or library parses again)."""
    suffix = suffix.lower()
    head = f"{PARSER_VERSION}\n{suffix}\n{_library_versions(suffix)}\n".encode()
    return hashlib.sha256(head + hashlib.sha256(data).digest()).hexdigest()


def unknown_extension(suffix: str) -> str:
    return f"unknown extension {suffix or '(none)'!r}; read are: {', '.join(SUFFIXES)}, {BEIR_CORPUS}"


def parse_bytes(data: bytes, suffix: str) -> ParsedDocument:
    """A file's bytes as a `ParsedDocument` (`doc_id` empty); `Unparsable` says why they give no text.
    A parser failing in a way it does not foresee is `Unparsable` too, with the error (the file is named,
    the load goes on); a missing parsing library (`MissingExtra`) and running out of memory are not."""
    suffix = suffix.lower()
    parser = PARSERS.get(suffix)
    if parser is None:
        raise Unparsable(unknown_extension(suffix))
    try:
        doc = parser(data)
    except (Unparsable, MissingExtra, MemoryError):
        raise
    except Exception as err:  # noqa: BLE001 - e.g. RecursionError on absurdly nested HTML: named, not fatal
        raise Unparsable(f"the {suffix} parser failed ({type(err).__name__}: {str(err)[:200]})") from None
    if not doc.text.strip():
        raise Unparsable("no text in it" + (" (a scanned PDF? there is no OCR)" if suffix == ".pdf" else ""))
    glued = _GLUED.findall(doc.text)
    if len(glued) >= 3:
        doc.warnings.append(f"{len(glued)} words of 30+ letters (spaces lost in extraction?), e.g. {glued[0][:40]!r}")
    return doc


def parse_file(path: Path, name: str) -> ParsedDocument:
    """One file as a `ParsedDocument` named `name`; `Unparsable` says why it gives no text."""
    if path.suffix.lower() not in PARSERS:
        raise Unparsable(unknown_extension(path.suffix))
    doc = parse_bytes(path.read_bytes(), path.suffix)
    doc.doc_id = name
    return doc


def _ranges(pages: list[int]) -> str:
    """1, 2, 3, 7 -> "1-3, 7"."""
    out, start, prev = [], pages[0], pages[0]
    for p in [*pages[1:], None]:
        if p is not None and p == prev + 1:
            prev = p
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if p is not None:
            start = prev = p
    return ", ".join(out)


