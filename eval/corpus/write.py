"""Write a benchmark's samples out as a team's folder of files and a questions file (`benchmark=corpus`'s input).

    python -m eval.corpus.write --benchmark synthetic languages=[en] levels=[1k] --out corpus/ \
        --types md,html,pdf,docx,txt [--limit N]

Samples of any registered benchmark (options as `KEY=VALUE`, Hydra's syntax, on top of
`conf/benchmark/<name>.yaml`) are loaded with `eval.benchmarks.load_benchmark`. Each distinct document (a
sample's `documents` spans, or its whole context) becomes one file under `OUT/docs/`, its type rotating
through `--types`: `txt` (the text), `md` (a `# title` heading, then the text), `html` (escaped
paragraphs), `pdf` (fpdf2 with matplotlib's bundled DejaVu Sans, or `--pdf-font`; a document with a
character the font lacks, Japanese in an English article say, is written as the next other type instead,
named and counted, since the PDF would silently lose that text), `docx` (python-docx, one paragraph per
line). `OUT/questions.jsonl` gets one row per sample: `id`, `question`, `answers`, `documents` (the
sample's files, relative to `OUT/docs`), `evidence` (the text of each gold evidence span
as a verbatim quote) and `task`. So

    python -m experiments.run benchmark=corpus benchmark.path=OUT/docs benchmark.questions=OUT/questions.jsonl

runs the same questions through the files, the way a team's own folder runs. The files are the same
bytes on every run (PDF and Word creation dates are fixed, Word's zip entries carry a fixed time).
`--no-headings` (`write_samples(..., headings=False)`) leaves each title off the text (it stays in the file
name and the PDF and Word metadata): a heading moves every token window of the chunker, so BM25 recall@n
through the files differs from the benchmark's own on about a quarter of LooGLE's questions; without it
md, html and docx give every question the same figures (perf/corpus_parity.py). A PDF comes closest once
its reader rejoins the lines it wrapped (`eval.corpus.parsers.reflow`); a word split over two pages or lines
may still move a chunk boundary by a token.

After writing, every file is read back through `eval.corpus.folder` and the questions through
`benchmark=corpus`, and it prints how many documents came back unchanged up to whitespace (a PDF wraps
lines) and how many quotes aligned exactly, fuzzily or not at all. From Python: `write_samples(samples, out,
types)` writes loaded samples and returns what it wrote; `read_back(written)` measures what survived.
Samples without a question or a reference answer (LooGLE's summaries) cannot be a corpus question and
are counted as left out, as is document-level evidence (a question's `documents` name its whole
context). Scoring through `benchmark=corpus` is `contains_tokens` unless `benchmark.metric` says otherwise.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import html
import io
import json
import re
import shutil
import sys
import zipfile
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, cast

from eval.answers import answer_texts
from eval.registry import require
from eval.sample import Sample

TYPES = ("md", "html", "pdf", "docx", "txt")
DOCS_DIR = "docs"
QUESTIONS_FILE = "questions.jsonl"
FIXED_DATE = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)  # creation date of every PDF and Word file
FPDF_HINT = "pip install fpdf2 (in the [docs] extra: make install)"
_ZIP_TIME = (2025, 1, 1, 0, 0, 0)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # no place in XML or a PDF text run
_SLUG = re.compile(r"[^a-z0-9]+")
CONF = Path(__file__).resolve().parents[2] / "conf"


@dataclass
class WrittenDocument:
    path: str  # relative to the docs folder
    kind: str  # txt | md | html | pdf | docx
    title: str
    expected: str  # the text a reader should get back (heading and body)


@dataclass
class WrittenCorpus:
    out: Path
    documents: list[WrittenDocument]
    questions: list[dict]
    left_out: Counter = field(default_factory=Counter)  # reason -> samples (or evidence pieces)
    retyped: list[str] = field(default_factory=list)  # documents not written as PDF: the font lacks characters
    headings: bool = True  # each document's title on its first line (False: only in metadata and the file name)

    @property
    def docs_dir(self) -> Path:
        return self.out / DOCS_DIR

    @property
    def questions_path(self) -> Path:
        return self.out / QUESTIONS_FILE


# ---------------------------------------------------------------- one writer per file type
def _write_txt(path: Path, title: str, text: str, font: Path | None, heading: bool) -> str:
    path.write_text(text, encoding="utf-8")
    return text


def _write_md(path: Path, title: str, text: str, font: Path | None, heading: bool) -> str:
    content = f"# {title}\n\n{text}\n" if heading else f"{text}\n"
    path.write_text(content, encoding="utf-8")
    return content


def _write_html(path: Path, title: str, text: str, font: Path | None, heading: bool) -> str:
    """Paragraphs (split at blank lines) as `<p>`, their inner line breaks as `<br>`, everything escaped. Without
    a heading there is no `<title>` either: a reader takes its text as the document's first line."""
    paragraphs = [p for p in re.split(r"\n\s*\n", text) if p.strip()]
    body = "\n".join("<p>" + "<br>".join(html.escape(line) for line in p.split("\n")) + "</p>" for p in paragraphs)
    head = f"<title>{html.escape(title)}</title>\n" if heading else ""
    path.write_text(f'<!DOCTYPE html>\n<html>\n<head>\n<meta charset="utf-8">\n{head}'
                    f"</head>\n<body>\n{body}\n</body>\n</html>\n", encoding="utf-8")
    return (f"{title}\n\n" if heading else "") + "\n\n".join(paragraphs)


def default_pdf_font() -> Path:
    """DejaVu Sans, bundled with matplotlib: Latin, Greek, Cyrillic and more, no CJK."""
    import matplotlib

    return Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf"


class MissingGlyphs(ValueError):
    """The PDF font has no glyph for some characters of a document (fpdf2 would leave them out of the PDF)."""

    def __init__(self, message: str, shown: str):
        super().__init__(message)
        self.shown = shown  # the first missing characters


@lru_cache(maxsize=4)
def _glyphs(font: Path) -> frozenset[int]:
    from fontTools.ttLib import TTFont  # a dependency of fpdf2 (and of matplotlib)

    return frozenset(TTFont(str(font), lazy=True).getBestCmap())


def _write_pdf(path: Path, title: str, text: str, font: Path | None, heading: bool) -> str:
    """Left-aligned lines (justified ones come back with doubled spaces) in a font that has every glyph; the title
    is in the PDF's metadata, and on the page only with `heading`."""
    fpdf = require("fpdf", "eval.corpus.write (PDF files)", FPDF_HINT)
    font = font or default_pdf_font()
    text = re.sub(r"[^\S\n]", " ", text)  # tabs and other spaces: the font may lack their glyphs
    visible = title + text if heading else text
    missing = sorted({ch for ch in visible if not ch.isspace() and ord(ch) not in _glyphs(font)})
    if missing:
        shown = "".join(missing[:10]) + (f" (+{len(missing) - 10} more)" if len(missing) > 10 else "")
        raise MissingGlyphs(f"{path.name}: the PDF font {font.name} has no glyph for {len(missing)} character(s) of "
                            f"this document: {shown!r}; give --pdf-font a .ttf that has them (a Noto Sans CJK font "
                            "for Chinese), or add another type to --types", shown)
    pdf = fpdf.FPDF()
    pdf.set_creation_date(FIXED_DATE)
    pdf.set_title(title)
    pdf.add_font("body", fname=str(font))
    pdf.add_page()
    if heading:
        pdf.set_font("body", size=14)
        pdf.multi_cell(0, 8, title, align="L", new_x="LMARGIN", new_y="NEXT")
        pdf.ln(4)
    pdf.set_font("body", size=11)
    pdf.multi_cell(0, 6, text, align="L", new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(path))
    return f"{title}\n\n{text}" if heading else text


def _write_docx(path: Path, title: str, text: str, font: Path | None, heading: bool) -> str:
    """A heading (with `heading`; the title is in the core properties either way), then one paragraph per line
    (blank lines as empty paragraphs, so they come back)."""
    docx = require("docx", "eval.corpus.write (Word files)", "make install (or: pip install 'rag-or-longctx[docs]')")
    document = docx.Document()
    props = document.core_properties
    props.title, props.author, props.created, props.modified = title, "rag-or-longctx", FIXED_DATE, FIXED_DATE
    if heading:
        document.add_heading(title, level=1)
    for line in text.split("\n"):
        document.add_paragraph(line)
    buffer = io.BytesIO()
    document.save(buffer)
    path.write_bytes(_fixed_zip_times(buffer.getvalue()))
    return f"{title}\n{text}" if heading else text


def _fixed_zip_times(data: bytes) -> bytes:
    """The same zip with every entry dated `_ZIP_TIME` (python-docx stamps each entry with the time of writing)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(zipfile.ZipInfo(info.filename, _ZIP_TIME), src.read(info.filename),
                         compress_type=zipfile.ZIP_DEFLATED)
    return out.getvalue()


WRITERS: dict[str, Callable[[Path, str, str, Path | None, bool], str]] = {
    "txt": _write_txt, "md": _write_md, "html": _write_html, "pdf": _write_pdf, "docx": _write_docx,
}


# ---------------------------------------------------------------- samples -> files and questions
def document_texts(sample: Sample) -> list[tuple[str, str]]:
    """(name, text) of each document of the sample's context: its `documents` spans without their headers, or the
    whole context when it has none."""
    if not sample.documents:
        return [(sample.id, sample.context)]
    return [(d.title or d.doc_id, sample.context[d.start + len(d.header):d.end]) for d in sample.documents]


def evidence_quotes(sample: Sample) -> list[str]:
    """The text of each gold evidence char span, once each (copies of one piece, `Span.alt`, give one quote)."""
    quotes: list[str] = []
    for span in sample.evidence:
        if span.is_char_span:
            quote = _clean(sample.context[span.start:span.end]).strip()
            if quote and quote not in quotes:
                quotes.append(quote)
    return quotes


def _clean(text: str) -> str:
    return _CONTROL.sub(" ", text.replace("\r\n", "\n").replace("\r", "\n"))


def _slug(name: str) -> str:
    return _SLUG.sub("-", name.lower()).strip("-")[:40].strip("-") or "document"


def write_samples(samples: Sequence[Sample], out: str | Path, types: Sequence[str] = TYPES,
                  pdf_font: Path | None = None, overwrite: bool = False, headings: bool = True) -> WrittenCorpus:
    """Write the samples' distinct documents under `out/docs/` (types in rotation) and `out/questions.jsonl`.
    `headings=False` leaves each title off the text (the file name and PDF/Word metadata keep it), so a reader
    gets back the sample's own text: the same chunks, hence the same retrieval, as the benchmark's loader."""
    unknown = [t for t in types if t not in WRITERS]
    if unknown or not types:
        raise ValueError(f"--types {','.join(types)}: unknown {unknown}; allowed: {','.join(TYPES)}")
    out = Path(out)
    corpus = WrittenCorpus(out, [], [], headings=headings)
    _prepare(corpus, overwrite)
    names: dict[str, str] = {}  # hash of a document's text -> its file
    width = len(str(len(samples) * max(1, max((len(s.documents) for s in samples), default=1))))
    for sample in samples:
        if not sample.question.strip() or not answer_texts(sample.answers):
            corpus.left_out["samples without a question or a reference answer"] += 1
            continue
        files = []
        for title, text in document_texts(sample):
            text = _clean(text)
            key = hashlib.sha256(text.encode("utf-8")).hexdigest()
            if key not in names:
                names[key] = _write_document(corpus, title, text, types, pdf_font, width)
            files.append(names[key])
        level = sum(1 for s in sample.evidence if not s.is_char_span)
        if level:
            corpus.left_out["document-level evidence (a question's documents are its whole context)"] += level
        corpus.questions.append({"id": sample.id, "question": sample.question, "answers": list(sample.answers),
                                 "documents": files, "evidence": evidence_quotes(sample), "task": sample.task})
    corpus.questions_path.write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in corpus.questions),
                                     encoding="utf-8")
    return corpus


def _write_document(corpus: WrittenCorpus, title: str, text: str, types: Sequence[str], pdf_font: Path | None,
                    width: int) -> str:
    """Write one document as the next type in rotation (a PDF the font cannot show: the next other type)."""
    at = len(corpus.documents)
    kind = types[at % len(types)]
    name = f"{at + 1:0{width}d}-{_slug(title)}"
    try:
        expected = WRITERS[kind](corpus.docs_dir / f"{name}.{kind}", title, text, pdf_font, corpus.headings)
    except MissingGlyphs as err:
        others = [t for t in types if t != "pdf"]
        if not others:
            raise
        kind = others[at % len(others)]
        expected = WRITERS[kind](corpus.docs_dir / f"{name}.{kind}", title, text, pdf_font, corpus.headings)
        corpus.retyped.append(f"{name}.{kind} (no glyph for {err.shown!r})")
    corpus.documents.append(WrittenDocument(f"{name}.{kind}", kind, title, expected))
    return f"{name}.{kind}"


def _prepare(corpus: WrittenCorpus, overwrite: bool) -> None:
    """An empty `docs/` folder; an existing one with files is replaced only with `overwrite` (stale files of an
    earlier write would otherwise join the corpus)."""
    docs = corpus.docs_dir
    if docs.exists() and any(docs.iterdir()):
        if not overwrite:
            raise FileExistsError(f"{docs} is not empty: remove it, choose another --out, or pass --overwrite")
        shutil.rmtree(docs)
    docs.mkdir(parents=True, exist_ok=True)


# ---------------------------------------------------------------- reading back
@dataclass
class ReadBack:
    documents: int
    unchanged: int  # documents whose parsed text equals what was written, up to whitespace
    changed: list[str]  # the others, by file
    quotes: int
    exact: int  # aligned with quality 1.0 (verbatim, or the same words with other whitespace)
    fuzzy: int  # aligned below 1.0
    not_aligned: int
    by_type: dict[str, Counter]

    def lines(self) -> list[str]:
        out = [f"read back: {self.unchanged}/{self.documents} documents unchanged up to whitespace"
               + (f" (changed: {', '.join(self.changed[:5])})" if self.changed else ""),
               f"evidence quotes: {self.quotes}; aligned exactly {self.exact}, fuzzily {self.fuzzy}, "
               f"not at all {self.not_aligned}"]
        for kind, c in sorted(self.by_type.items()):
            out.append(f"  {kind:5} {c['documents']} documents ({c['unchanged']} unchanged), {c['quotes']} quotes "
                       f"({c['exact']} exact, {c['fuzzy']} fuzzy)")
        return out


def _words(text: str) -> str:
    return " ".join(text.split())


def read_back(corpus: WrittenCorpus) -> ReadBack:
    """Parse every written file (`eval.corpus.folder`) and load the questions (`benchmark=corpus`): what survived."""
    from eval.benchmarks import load_benchmark
    from eval.corpus.folder import read_folder

    parsed, bad = read_folder(corpus.docs_dir)
    if bad:
        raise ValueError(f"{corpus.docs_dir}: written files that do not read back: "
                         + "; ".join(f"{b.path}: {b.reason}" for b in bad))
    texts = {d.doc_id: d.text for d in parsed}
    kinds = {d.path: d.kind for d in corpus.documents}
    by_type: dict[str, Counter] = {}
    changed = []
    for d in corpus.documents:
        c = by_type.setdefault(d.kind, Counter())
        c["documents"] += 1
        if _words(texts.get(d.path, "")) == _words(d.expected):
            c["unchanged"] += 1
        else:
            changed.append(d.path)
    loaded = load_benchmark({"name": "corpus", "path": str(corpus.docs_dir), "questions": str(corpus.questions_path)})
    exact = fuzzy = 0
    for s in loaded.samples:
        kind = kinds[s.metadata["documents"][0]] if len(s.metadata["documents"]) == 1 else "mixed"
        c = by_type.setdefault(kind, Counter())
        for span in s.evidence:
            c["exact" if span.quality >= 1.0 else "fuzzy"] += 1
            exact, fuzzy = exact + (span.quality >= 1.0), fuzzy + (span.quality < 1.0)
    for q in corpus.questions:
        kind = kinds[q["documents"][0]] if len(q["documents"]) == 1 else "mixed"
        by_type.setdefault(kind, Counter())["quotes"] += len(q["evidence"])
    return ReadBack(len(corpus.documents), sum(c["unchanged"] for c in by_type.values()), changed,
                    sum(len(q["evidence"]) for q in corpus.questions), exact, fuzzy,
                    int(loaded.notes.get("evidence quotes not aligned", 0)), by_type)


# ---------------------------------------------------------------- command line
def load_samples(benchmark: str, options: Sequence[str], limit: int | None = None) -> list[Sample]:
    """The samples of `conf/benchmark/<benchmark>.yaml` with `KEY=VALUE` options, composed as the runner does."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    for option in options:
        if "=" not in option:
            raise ValueError(f"benchmark option {option!r}: expected KEY=VALUE (e.g. levels=[1k,2k])")
    overrides = [f"benchmark={benchmark}", *(f"benchmark.{o}" for o in options)]
    if limit is not None:
        overrides.append(f"benchmark.limit={int(limit)}")
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose(config_name="config", overrides=overrides)
    from eval.benchmarks import load_benchmark

    return load_benchmark(cast(dict[str, Any], OmegaConf.to_container(cfg.benchmark, resolve=True))).samples


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m eval.corpus.write", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--benchmark", required=True, help="a registered benchmark (conf/benchmark/<name>.yaml)")
    ap.add_argument("options", nargs="*", help="benchmark options, KEY=VALUE (Hydra syntax)")
    ap.add_argument("--out", type=Path, required=True, help="folder: docs/ and questions.jsonl go here")
    ap.add_argument("--types", default=",".join(TYPES), help=f"file types in rotation (default {','.join(TYPES)})")
    ap.add_argument("--limit", type=int, default=None, help="the first N samples")
    ap.add_argument("--pdf-font", type=Path, default=None, help="a .ttf for PDFs (default: matplotlib's DejaVu Sans)")
    ap.add_argument("--overwrite", action="store_true", help="replace an existing OUT/docs folder")
    ap.add_argument("--no-headings", action="store_true",
                    help="leave titles off the text (only in file names and PDF/Word metadata): md, html and docx "
                         "then read back as the benchmark's own text, so retrieval gives the same chunks and recall")
    args = ap.parse_intermixed_args(argv)
    types = [t.strip().lower().lstrip(".") for t in args.types.split(",") if t.strip()]
    try:
        samples = load_samples(args.benchmark, args.options, args.limit)
        corpus = write_samples(samples, args.out, types, args.pdf_font, args.overwrite, not args.no_headings)
        check = read_back(corpus)
    except (ValueError, FileNotFoundError, FileExistsError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    kinds = Counter(d.kind for d in corpus.documents)
    print(f"wrote {len(corpus.documents)} documents ({', '.join(f'{n} {k}' for k, n in kinds.items())}) to "
          f"{corpus.docs_dir} and {len(corpus.questions)} questions to {corpus.questions_path}")
    for reason, n in corpus.left_out.items():
        print(f"left out: {n} {reason}")
    if corpus.retyped:
        print(f"not PDF: {len(corpus.retyped)} documents written as another type, since the PDF font lacks some of "
              f"their characters: {'; '.join(corpus.retyped[:3])}" + (" ..." if len(corpus.retyped) > 3 else ""))
    print("\n".join(check.lines()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
