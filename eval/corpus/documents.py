"""A team's own files as text: `.txt`, `.md`, `.html`/`.htm`, `.pdf`, `.docx`, and a BEIR `corpus.jsonl`.

`read_folder(root)` parses every file under `root` (recursively, hidden files and folders left out)
into `ParsedDocument`s named by their path relative to `root` (a `corpus.jsonl` gives one document
per line, named by its `_id`; its BEIR companions, `queries.jsonl` and the `qrels/` folder beside it,
are not documents and are left out). Parsers are light, CPU-only and download nothing (the `docs`
extra): pypdf for PDFs (pypdfium2 where pypdf fails), python-docx, BeautifulSoup with lxml, and
charset-normalizer for text files that are not UTF-8 (UTF-16 with or without a byte order mark,
GB18030, ...).

A PDF keeps where each page starts (`page_starts`, char offsets), so evidence can be reported by
page (`page_of`). What may have lost text is said, not hidden: pages with almost no text (probably
scanned; there is no OCR) and words glued together (a PDF without spaces) are `warnings` of the
document. A file that cannot be parsed (encrypted or broken PDF, no text, unknown extension) is a
`BadFile` with its reason; the caller decides whether that stops the load.

Parsing is keyed by `document_key` (SHA-256 of the file's bytes, its suffix, `PARSER_VERSION` and the
versions of the parsing libraries), so a cache (`eval.corpus.cache`) can hand back the same text, and
so the same char offsets, for the same file on every run. Files not in the cache are parsed in a pool
of processes when there are many (`workers`); the result keeps the files' order either way.
"""

from __future__ import annotations

import bisect
import hashlib
import io
import logging
import os
import re
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import metadata
from multiprocessing import get_context
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Iterator

from eval.registry import MissingExtra, require

if TYPE_CHECKING:
    from eval.corpus.cache import ParsedDocumentCache

log = logging.getLogger(__name__)
PARSER_VERSION = 3  # bump when a parser's output changes: cached parses of older versions are not used
TEXT_SUFFIXES = (".txt", ".md", ".markdown")
HTML_SUFFIXES = (".html", ".htm")
SUFFIXES = (*TEXT_SUFFIXES, *HTML_SUFFIXES, ".pdf", ".docx")
BEIR_CORPUS = "corpus.jsonl"
BEIR_COMPANIONS = ("queries.jsonl", "qrels")  # beside a corpus.jsonl: BEIR's questions and judgments
NEAR_EMPTY_PAGE = 20  # characters: a PDF page with fewer is probably a scan
POOL_MIN_FILES = 16  # fewer files to parse than this: parsed in this process (starting a pool costs ~1 s)
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


KeyedParse = tuple[str | None, ParsedDocument | Unparsable]  # (cache key, or None: unreadable; the parse)


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
    bs4 = require("bs4", "benchmark=corpus (HTML)", DOCS_HINT)
    text, encoding = decoded(data)
    soup = bs4.BeautifulSoup(text, "lxml")
    for tag in soup(["script", "style", "noscript", "template"]):
        tag.decompose()
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    lines = [line.strip() for line in soup.get_text("\n").splitlines()]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    return ParsedDocument("", text, title=title, warnings=_guess_warnings(encoding))


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


@lru_cache(maxsize=None)
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


def _unknown_extension(suffix: str) -> str:
    return f"unknown extension {suffix or '(none)'!r}; read are: {', '.join(SUFFIXES)}, {BEIR_CORPUS}"


def parse_bytes(data: bytes, suffix: str) -> ParsedDocument:
    """A file's bytes as a `ParsedDocument` (`doc_id` empty); `Unparsable` says why they give no text.
    A parser failing in a way it does not foresee is `Unparsable` too, with the error (the file is named,
    the load goes on); a missing parsing library (`MissingExtra`) and running out of memory are not."""
    suffix = suffix.lower()
    parser = PARSERS.get(suffix)
    if parser is None:
        raise Unparsable(_unknown_extension(suffix))
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
        raise Unparsable(_unknown_extension(path.suffix))
    doc = parse_bytes(path.read_bytes(), path.suffix)
    doc.doc_id = name
    return doc


def beir_corpus(path: Path, name: str) -> Iterator[ParsedDocument | BadFile]:
    """The documents of a BEIR `corpus.jsonl` (`{_id, title, text}` per line)."""
    from eval.benchmarks.files import DataError, read_records

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


def _beir_companion(path: Path, root: Path) -> bool:
    """`queries.jsonl` or a file under `qrels/` in a folder that holds a BEIR `corpus.jsonl`."""
    for folder in path.parents:
        if (folder / BEIR_CORPUS).is_file():
            rel = path.relative_to(folder).parts
            return rel[0] == BEIR_COMPANIONS[1] or rel == (BEIR_COMPANIONS[0],)
        if folder == root:
            return False
    return False


def document_files(root: Path, leave_out: Iterable[Path] = ()) -> list[Path]:
    """The files under `root` that are read as documents: all but `leave_out` and BEIR companions."""
    skip = {p.resolve() for p in leave_out}
    return [p for p in files_under(root) if p.resolve() not in skip and not _beir_companion(p, root)]


def _parse_path(path: Path) -> KeyedParse:
    """(cache key, parse) of one file; runs in a worker process. An unreadable file has no key."""
    try:
        data = path.read_bytes()
    except OSError as err:
        return None, Unparsable(f"cannot be read: {err.strerror or err}")
    try:
        return document_key(data, path.suffix), parse_bytes(data, path.suffix)
    except Unparsable as err:
        return document_key(data, path.suffix), err


def default_workers() -> int:
    """The CPUs this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def parse_paths(paths: list[Path], workers: int | None = None) -> Iterator[KeyedParse]:
    """`_parse_path` of every path, yielded in order as they are parsed (the caller caches each meanwhile).
    `workers=None`: a pool of a process per CPU this process may use when there are at least
    `POOL_MIN_FILES` paths, else here; `workers=1`: here; `workers=N`: a pool of N processes."""
    fewest = POOL_MIN_FILES if workers is None else 2  # asked for: a pool from two files on (tests use it)
    workers = default_workers() if workers is None else max(1, int(workers))
    if workers == 1 or len(paths) < fewest:
        yield from (_parse_path(p) for p in paths)
        return
    done = 0
    # spawn: a fork of a process holding threads (torch, tokenizers) may hang
    pool = ProcessPoolExecutor(min(workers, len(paths)), mp_context=get_context("spawn"))
    try:
        for item in pool.map(_parse_path, paths, chunksize=max(1, min(16, len(paths) // (4 * workers)))):
            done += 1
            yield item
    except BrokenProcessPool as err:  # a worker died (out of memory, or could not start): the rest are parsed here
        log.warning("the parsing processes failed after %d of %d files (%s); parsing the rest in this process",
                    done, len(paths), err)
        yield from (_parse_path(p) for p in paths[done:])
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # stopped early (an error here): no parsing left running


def _cached(path: Path, cache: ParsedDocumentCache | None) -> ParsedDocument | Unparsable | None:
    """The cached parse of `path`'s bytes, or None (no cache, not cached, or unreadable: parsed later)."""
    if cache is None:
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return cache.get(document_key(data, path.suffix))


def _named(name: str, parsed: ParsedDocument | Unparsable) -> ParsedDocument | BadFile:
    if isinstance(parsed, Unparsable):
        return BadFile(name, str(parsed))
    return ParsedDocument(name, parsed.text, parsed.title, list(parsed.page_starts), list(parsed.warnings))


def read_folder(root: str | Path, leave_out: Iterable[Path] = (), cache: ParsedDocumentCache | None = None,
                workers: int | None = None) -> tuple[list[ParsedDocument], list[BadFile]]:
    """(documents, bad files) of every file under `root`, in the files' order; `leave_out`: files that are
    not documents (the questions file, when it lies in the folder); `cache`: parses by `document_key`, read
    and written; `workers`: processes for the files not cached (`parse_paths`)."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"benchmark.path={str(root)!r} is not a folder")
    slots: list[list[ParsedDocument | BadFile]] = []
    todo: list[tuple[int, Path, str]] = []
    for path in document_files(root, leave_out):
        name = path.relative_to(root).as_posix()
        if path.name == BEIR_CORPUS:
            slots.append(list(beir_corpus(path, name)))
        elif path.suffix.lower() not in PARSERS:
            slots.append([BadFile(name, _unknown_extension(path.suffix))])
        else:
            hit = _cached(path, cache)
            slots.append([] if hit is None else [_named(name, hit)])
            if hit is None:
                todo.append((len(slots) - 1, path, name))
    for (slot, _, name), (key, parsed) in zip(todo, parse_paths([p for _, p, _ in todo], workers)):
        if cache is not None and key is not None:
            cache.put(key, parsed)
        slots[slot] = [_named(name, parsed)]
    items = [item for slot in slots for item in slot]
    return [d for d in items if isinstance(d, ParsedDocument)], [b for b in items if isinstance(b, BadFile)]


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


__all__ = ["BEIR_CORPUS", "PARSER_VERSION", "SUFFIXES", "BadFile", "ParsedDocument", "Unparsable", "decode_bytes",
           "decoded", "document_files", "document_key", "parse_bytes", "parse_file", "parse_paths", "read_folder"]
