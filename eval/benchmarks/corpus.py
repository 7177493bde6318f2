"""`benchmark=corpus`: the decision on a team's own documents and questions.

    python -m experiments.run -m benchmark=corpus benchmark.path=docs/ benchmark.questions=questions.jsonl \
        arm=longctx,rag

`path`: a folder of `.txt`, `.md`, `.html`/`.htm`, `.pdf`, `.docx` files and BEIR `corpus.jsonl` files,
read recursively (`eval.documents`); a document is named by its path relative to the folder.
`questions`: a `.jsonl` (or `.json` array) or `.csv` file, one question per row:

- `question` (required); `id` (else a stable hash of the question);
- `answers`: reference answers (a list or one text); scored with `contains_all` by default (every
  answer appears in the prediction), or with any registered metric via `benchmark.metric`;
- `documents`: the paths (relative to the folder) the question is about;
- `evidence`: verbatim quotes from those documents that answer it; each is aligned to a char span of
  the context (exact, else fuzzy, `evidence_threshold`), so `evidence_recall@n` and
  `evidence_retained` work as on LooGLE, whatever the chunking; quotes that do not align are counted
  and named in one warning;
- `task`: a label for per-type scores (default `qa`).
In a CSV a list field holds a JSON list (`["a", "b"]`) or one value.

`context`: `documents` (a question's context is its `documents`: the default where questions name
them) or `corpus` (the whole folder: "the knowledge base in the prompt" against RAG over it; the
long-context arm truncates it by its policy and records what it kept; the RAG arm indexes it once).
In `corpus` mode a question's `documents` are its document-level gold evidence, and its bootstrap
group is the document its evidence lies in (else the question itself).

A file that cannot be parsed stops the load with its name and reason; `skip_bad: true` leaves such
files out, named and counted in one warning. Questions without reference answers need a judge that
grades against the evidence or compares the arms' answers: not built yet; give answers, or set
`benchmark.metric`.
"""

from __future__ import annotations

import csv
import hashlib
import json
import logging
import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Iterator

from eval.align import TokenIndex, align_all
from eval.benchmarks._files import Row, check_keys, read_records, record_guard
from eval.benchmarks.base import Benchmark, LoadResult
from eval.benchmarks.common import approx_tokens, consecutive_groups, length_level, level_names
from eval.documents import ParsedDocument, read_folder
from eval.sample import Document, PromptTemplate, Sample, Span

log = logging.getLogger(__name__)

CONTEXTS = ("documents", "corpus")
DEFAULT_EDGES = (8000, 32000, 128000)
DEFAULT_TASK = "qa"
_CJK = re.compile(r"[\u3400-\u9fff]")
_LETTER = re.compile(r"[A-Za-z\u3400-\u9fff]")

# The project's own prompts (no benchmark defines one for a team's files).
TEMPLATES = {
    "en": PromptTemplate(
        "Answer the question using the documents below. Answer briefly, with the exact words of the documents "
        "where you can.\n\n{context}\n\nQuestion: {question}\nAnswer:", max_new_tokens=128, truncation="middle",
        source="rag-or-longctx (eval/benchmarks/corpus.py)"),
    "zh": PromptTemplate(
        "请根据下面的文档回答问题。回答要简短，尽量使用文档中的原话。\n\n{context}\n\n问题：{question}\n回答：",
        max_new_tokens=128, truncation="middle", source="rag-or-longctx (eval/benchmarks/corpus.py)"),
}


@dataclass(frozen=True)
class CorpusConfig:
    path: str | None = None
    questions: str | None = None
    context: str | None = None  # documents | corpus; None: documents where a question names them
    evidence_threshold: float = 0.8
    level_edges: tuple[int, ...] = DEFAULT_EDGES
    max_new_tokens: int = 128


@dataclass
class Question:
    id: str
    question: str
    answers: list[str]
    documents: list[str]
    evidence: list[str]
    task: str
    row: Row


def language_of(text: str) -> str:
    """`zh` when most letters are CJK characters, else `en`."""
    letters = _LETTER.findall(text)
    return "zh" if letters and len(_CJK.findall(text)) / len(letters) > 0.3 else "en"


def _text_list(row: Row, name: str) -> list[str]:
    """A field that may be a list of text, one text, a JSON list in a CSV cell, or absent."""
    value = row.data.get(name)
    if value is None or value == "":
        return []
    if isinstance(value, str) and row.source.endswith(".csv") and value.lstrip().startswith("["):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as err:
            raise row.error(f"not a JSON list ({err.msg})", name) from None
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return [str(value)]
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value):
        return [str(v) for v in value if str(v).strip()]
    raise row.error(f"must be text or a list of text, got {type(value).__name__}", name)


def _csv_rows(path: Path) -> Iterator[Row]:
    from eval.documents import decode_bytes

    text = decode_bytes(path.read_bytes())
    reader = csv.DictReader(text.splitlines())
    for i, data in enumerate(reader, 2):  # line 1 is the header
        yield Row({k.strip(): (v.strip() if isinstance(v, str) else v) for k, v in data.items() if k}, str(path), i)


def question_rows(path: Path) -> Iterator[Row]:
    """The rows of a `.jsonl`/`.json` or `.csv` questions file."""
    if not path.is_file():
        raise FileNotFoundError(f"benchmark.questions={str(path)!r}: no such file")
    return _csv_rows(path) if path.suffix.lower() == ".csv" else read_records(path)


def question_of(row: Row) -> Question:
    """One question; a bad row raises `DataError` naming file, line and field."""
    question = row.field("question", str).strip()
    if not question:
        raise row.error("is empty", "question")
    qid = row.data.get("id")
    qid = str(qid) if qid not in (None, "") else "q" + hashlib.sha256(question.encode()).hexdigest()[:12]
    task = str(row.data.get("task") or DEFAULT_TASK)
    return Question(qid, question, _text_list(row, "answers"), _text_list(row, "documents"),
                    _text_list(row, "evidence"), task, row)


def _joined(docs: list[ParsedDocument]) -> tuple[str, list[Document]]:
    """One context of several documents, each headed by its name; a single document is its own text."""
    if len(docs) == 1:
        return docs[0].text, [Document(docs[0].doc_id, 0, len(docs[0].text), title=docs[0].doc_id)]
    parts, spans, at = [], [], 0
    for d in docs:
        header = f"[{d.doc_id}]\n"
        body = header + d.text
        spans.append(Document(d.doc_id, at, at + len(body), title=d.doc_id, header=header))
        parts.append(body)
        at += len(body) + 2
    return "\n\n".join(parts), spans


class _Contexts:
    """Joined contexts and their token indexes, built once per set of documents."""

    def __init__(self, docs: dict[str, ParsedDocument]):
        self.docs = docs
        self._made: dict[tuple[str, ...], tuple[str, list[Document]]] = {}
        self._index: dict[tuple[str, ...], TokenIndex] = {}

    def get(self, ids: tuple[str, ...]) -> tuple[str, list[Document]]:
        if ids not in self._made:
            self._made[ids] = _joined([self.docs[i] for i in ids])
        return self._made[ids]

    def index(self, ids: tuple[str, ...]) -> TokenIndex:
        if ids not in self._index:
            self._index[ids] = TokenIndex(self.get(ids)[0])
        return self._index[ids]


def _doc_at(documents: list[Document], offset: int) -> Document | None:
    return next((d for d in documents if d.start <= offset < d.end), None)


class CorpusBenchmark(Benchmark):
    """corpus: see the module docstring."""

    name = "corpus"
    tasks = ()  # the question file's own `task` labels
    levels = tuple(level_names(DEFAULT_EDGES))
    evidence = "spans"
    multi_document = True  # a context may join several documents, each under its name
    truncation = "middle"
    templates = TEMPLATES

    def load(self, cfg: dict) -> LoadResult:
        known = [f.name for f in fields(CorpusConfig)]
        check_keys("corpus", cfg, known)
        config = CorpusConfig(**{k: (tuple(v) if k == "level_edges" else v) for k, v in cfg.items() if k in known})
        if not config.path:
            raise ValueError("benchmark=corpus needs benchmark.path=DIR (a folder of your documents)")
        if not config.questions:
            raise ValueError("benchmark=corpus needs benchmark.questions=FILE (.jsonl or .csv, one question per row)")
        if config.context not in (None, *CONTEXTS):
            raise ValueError(f"benchmark.context={config.context!r}; allowed: null, {', '.join(CONTEXTS)}")
        root, qpath = Path(config.path), Path(config.questions)
        parsed, bad = read_folder(root, leave_out=(qpath,))
        result = LoadResult([])
        if bad:
            listed = "; ".join(f"{b.path}: {b.reason}" for b in bad[:5]) + (f" (+{len(bad) - 5} more)"
                                                                           if len(bad) > 5 else "")
            if not cfg.get("skip_bad"):
                raise ValueError(f"{root}: {len(bad)} file(s) could not be read: {listed}. "
                                 "benchmark.skip_bad=true leaves them out (named and counted)")
            log.warning("%s: left out %d file(s) that could not be read (benchmark.skip_bad=true): %s", root,
                        len(bad), listed)
            result.skip("unreadable files", len(bad))
        for d in parsed:
            for w in d.warnings:
                log.warning("%s: %s", d.doc_id, w)
        if not parsed:
            raise ValueError(f"benchmark.path={str(root)!r}: no document in it could be read")
        docs = {d.doc_id: d for d in parsed}
        result.samples, unaligned = self._samples(config, docs, qpath)
        if unaligned:
            shown = "; ".join(f"{qid}: {quote[:50]!r} ({q:.2f})" for qid, quote, q in unaligned[:3])
            log.warning("%d evidence quote(s) did not align to their documents (quality < %.2f), left out: %s%s",
                        len(unaligned), config.evidence_threshold, shown,
                        f" (+{len(unaligned) - 3} more)" if len(unaligned) > 3 else "")
        result.notes.update({"documents": len(docs), "unreadable files": [b.path for b in bad],
                             "evidence quotes not aligned": len(unaligned),
                             "documents with warnings": sum(1 for d in parsed if d.warnings)})
        return result

    def _samples(self, config: CorpusConfig, docs: dict[str, ParsedDocument],
                 qpath: Path) -> tuple[list[Sample], list[tuple[str, str, float]]]:
        contexts = _Contexts(docs)
        everything = tuple(sorted(docs))
        samples: list[Sample] = []
        unaligned: list[tuple[str, str, float]] = []
        seen: set[str] = set()
        for row in question_rows(qpath):
            with record_guard():
                q = question_of(row)
                if q.id in seen:
                    raise q.row.error(f"duplicate id {q.id!r}", "id")
                seen.add(q.id)
                missing = [d for d in q.documents if d not in docs]
                if missing:
                    raise q.row.error(f"{missing[:3]} not among the {len(docs)} documents read from "
                                      f"{config.path}", "documents")
                mode = config.context or ("documents" if q.documents else "corpus")
                if mode == "documents" and not q.documents:
                    raise q.row.error("empty: name the question's documents, or set benchmark.context=corpus",
                                      "documents")
                if not q.answers:  # scoring without references needs a judge (see the docstring)
                    raise q.row.error("empty: scoring without reference answers is not built yet; give answers",
                                      "answers")
                ids = tuple(q.documents) if mode == "documents" else everything
                sample, dropped = self._sample(q, ids, mode, contexts, config)
                unaligned += [(q.id, quote, quality) for quote, quality in dropped]
                samples.append(sample)
        return consecutive_groups(samples), unaligned

    def _sample(self, q: Question, ids: tuple[str, ...], mode: str, contexts: _Contexts,
                config: CorpusConfig) -> tuple[Sample, list[tuple[str, float]]]:
        context, documents = contexts.get(ids)
        kept, dropped = align_all(q.evidence, contexts.index(ids), config.evidence_threshold) if q.evidence \
            else ([], [])
        evidence, pages = [], []
        for a in kept:
            doc = _doc_at(documents, a.start)
            evidence.append(Span(a.start, a.end, doc.doc_id if doc else None, a.quality))
            page = contexts.docs[doc.doc_id].page_of(a.start - doc.start - len(doc.header)) if doc else None
            if page is not None:
                pages.append(f"{doc.doc_id} p{page}")
        if mode == "corpus" and not q.evidence:
            evidence = [Span(doc_id=d) for d in q.documents]  # document-level gold evidence
        if mode == "documents":
            group = "docs:" + hashlib.sha256("\n".join(ids).encode()).hexdigest()[:12]
        else:  # the bootstrap resamples documents: the one the evidence lies in, else the question
            group = next((s.doc_id for s in evidence if s.doc_id), None) or f"question:{q.id}"
        language = language_of(q.question)
        template = TEMPLATES[language]
        if template.max_new_tokens != config.max_new_tokens:
            template = PromptTemplate(template.text, max_new_tokens=int(config.max_new_tokens),
                                      truncation=template.truncation, source=template.source)
        tokens = approx_tokens(context)
        return Sample(
            id=q.id, benchmark=self.name, task=q.task, language=language,
            length_level=length_level(tokens, config.level_edges), context=context, question=q.question,
            answers=q.answers, template=template, metric="contains_all", evidence=evidence, documents=documents,
            group=group, metadata={"documents": list(ids) if mode == "documents" else q.documents,
                                   "context_mode": mode, "approx_tokens": tokens, "evidence_pages": pages,
                                   "source": f"{q.row.source}:{q.row.line}"},
        ), dropped


__all__ = ["CONTEXTS", "CorpusBenchmark", "CorpusConfig", "TEMPLATES", "language_of", "question_of", "question_rows"]
