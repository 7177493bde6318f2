"""`benchmark=corpus`: the decision on a team's own documents and questions.

    python -m experiments.run -m benchmark=corpus benchmark.path=docs/ benchmark.questions=questions.jsonl \
        arm=longctx,rag

`path`: a folder of `.txt`, `.md`, `.html`/`.htm`, `.pdf`, `.docx` files and BEIR `corpus.jsonl` files,
read recursively (`eval.corpus.folder`); a document is named by its path relative to the folder. Parses
are cached by file content in `<cache_dir>/parsed_documents.sqlite` (`eval.corpus.cache`; `cache_dir:
null` caches nothing), so a rerun reads the same text, with the same char offsets, without parsing.
`questions`: a `.jsonl` (or `.json` array) or `.csv` file, one question per row, in UTF-8 (with or
without a byte order mark), UTF-16 or GB18030; a file mixing encodings is refused, naming the line:

- `question` (required); `id` (else a stable hash of the question);
- `answers`: reference answers (a list or one text), ALL of which a right reply holds; an entry of the list
  may itself be a list of alternatives, ANY of which counts: `"answers": [["twice", "2"]]` is right for "The
  answer is: 2" and for "It runs twice", `[["twice", "2"], "loop"]` needs "loop" as well (eval/answers.py).
  Scored with `contains_tokens` by default (every answer appears in the prediction as whole tokens,
  punctuation kept as tokens, code and option names such as `-X` exact: eval/metrics/contains_tokens.py), or
  with any registered metric via `benchmark.metric`; alternatives are refused, naming file, line and field,
  under a metric that reads plain texts only (`eval.metrics.reads_alternatives`: contains_tokens, contains_all);
- `documents`: the paths (relative to the folder) the question is about;
- `evidence`: verbatim quotes from those documents that answer it; each is aligned to a char span of
  the context (exact, else fuzzy, `evidence_threshold`), so `evidence_recall@n` and
  `evidence_retained` work as on LooGLE, whatever the chunking; quotes that do not align are counted
  and named in one warning;
- `task`: a label for per-type scores (default `qa`).
In a CSV a list field holds a JSON list (`["a", "b"]`) or one value: an `answers` cell such as
`pointer; length; capacity` is one answer (a prediction must hold all of it, in that order), so such
cells are counted and named in a warning and in the report's notes.

BEIR's format is read too: a `queries.jsonl` row `{_id, text}` is a question (told by its keys), and
`qrels`: a BEIR qrels TSV (header `query-id<TAB>corpus-id<TAB>score`) gives each query its documents,
those with score > 0 (document-level evidence). With `qrels`, questions it gives no relevant document
and that name none themselves are left out, counted and named in a warning (BEIR's `queries.jsonl`
holds every split's queries, a qrels file one split's); a qrels line naming a query or document that
was not loaded is an error naming file and line (`skip_bad: true`: skipped and counted).

Scoring: a question labelled `task: unanswerable` (the document names what it asks about but does not
state the answer; `python -m testset` writes such questions) is scored by `refusal`: 1 when the answer
declines, 0 for a made-up answer. Else a question with `answers` is scored by `contains_tokens` (or
`benchmark.metric`); one without
answers but with aligned evidence quotes by `evidence_judge` (a judge grades the answer against the
quotes); one with neither by `pairwise_judge` (long context's answer against RAG's). Every sample
carries `reference_extra = {"question", "evidence": the source text of each aligned quote}`.

Length levels (`level_edges`, default 0-8k, 8k-32k, 32k-128k, 128k+): the context's tokens counted by the
run's generator (`Benchmark.level_by_tokens`; the runner passes its tokenizer), so a level says whether a
document fits the model's window; loaded without a generator (`python -m eval.describe`), approximate
tokens.

`context`: `documents` (a question's context is its `documents`: the default where questions name
them) or `corpus` (the whole folder: "the knowledge base in the prompt" against RAG over it; the
long-context arm truncates it by its policy and records what it kept; the RAG arm indexes it once).
A question that names no `documents` is asked in `corpus` mode (`context: documents` refuses it); the load logs
how many there are and the group each is counted under. In `corpus` mode a question's `documents` are its
document-level gold evidence, and its bootstrap group is the document its evidence lies in (else the question
itself).

Bad input is named, never dropped silently: an empty folder, or one with no file of a kind read
here, is an error; a file that cannot be parsed (broken or encrypted PDF, no text, unknown kind)
stops the load with its name and reason, and `skip_bad: true` leaves such files out, named and counted
in one warning; a bad question row (a missing field, a duplicate id, a document not in the folder)
stops the load naming file, line and field, or with `skip_bad: true` is skipped and counted.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from eval.align import TokenIndex, align_all
from eval.answers import Answer, has_alternatives
from eval.benchmarks.base import Benchmark, LoadResult
from eval.benchmarks.common import approx_tokens, check_keys, consecutive_groups, length_level, level_names
from eval.corpus.answer_checks import AnswerProblem, answer_problems
from eval.corpus.cache import ParsedDocumentCache
from eval.corpus.fingerprint import data_fingerprint
from eval.corpus.folder import read_folder
from eval.corpus.parsers import BadFile, ParsedDocument
from eval.corpus.qrels import Qrels
from eval.corpus.questions import Question, approved, is_beir_query, language_of, question_of, question_rows
from eval.data_files import DataError, Row, record_guard
from eval.lexical_overlap import lexical_overlap
from eval.metrics.base import READS_ALTERNATIVES, reads_alternatives
from eval.sample import Document, PromptTemplate, Sample, Span

log = logging.getLogger(__name__)


CONTEXTS = ("documents", "corpus")


DEFAULT_EDGES = (8000, 32000, 128000)


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
    qrels: str | None = None  # a BEIR qrels TSV: the questions' documents
    context: str | None = None  # documents | corpus; None: documents where a question names them
    evidence_threshold: float = 0.8
    level_edges: tuple[int, ...] = DEFAULT_EDGES
    max_new_tokens: int = 128
    cache_dir: str | None = None  # parsed documents cached here; None: not cached


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
    """Joined contexts, their token indexes and approximate token counts, built once per set of documents (every
    question over the whole folder shares one)."""

    def __init__(self, docs: dict[str, ParsedDocument]):
        self.docs = docs
        self._made: dict[tuple[str, ...], tuple[str, list[Document]]] = {}
        self._index: dict[tuple[str, ...], TokenIndex] = {}
        self._tokens: dict[tuple[str, ...], int] = {}

    def get(self, ids: tuple[str, ...]) -> tuple[str, list[Document]]:
        if ids not in self._made:
            self._made[ids] = _joined([self.docs[i] for i in ids])
        return self._made[ids]

    def index(self, ids: tuple[str, ...]) -> TokenIndex:
        if ids not in self._index:
            self._index[ids] = TokenIndex(self.get(ids)[0])
        return self._index[ids]

    def approx_tokens(self, ids: tuple[str, ...]) -> int:
        if ids not in self._tokens:
            self._tokens[ids] = approx_tokens(self.get(ids)[0])
        return self._tokens[ids]


def _doc_at(documents: list[Document], offset: int) -> Document | None:
    return next((d for d in documents if d.start <= offset < d.end), None)


def _listed(bad: list[BadFile], n: int = 5) -> str:
    return "; ".join(f"{b.path}: {b.reason}" for b in bad[:n]) + (f" (+{len(bad) - n} more)" if len(bad) > n else "")


def _check_documents(root: Path, parsed: list[ParsedDocument], bad: list[BadFile], skip_bad: bool,
                     result: LoadResult) -> None:
    """An empty folder, one with no file of a kind read here, or (without `skip_bad`) any unreadable file
    stops the load; with `skip_bad` unreadable files are named and counted in one warning."""
    if not parsed and not bad:
        raise ValueError(f"benchmark.path={str(root)!r} holds no files (hidden files and folders are not read)")
    if not parsed and all(b.reason.startswith("unknown extension") for b in bad):
        raise ValueError(f"benchmark.path={str(root)!r}: none of its {len(bad)} file(s) is of a kind read here: "
                         f"{_listed(bad, 3)}")
    if bad and not skip_bad:
        raise ValueError(f"{root}: {len(bad)} file(s) could not be read: {_listed(bad)}. "
                         "benchmark.skip_bad=true leaves them out (named and counted)")
    if bad:
        log.warning("%s: left out %d file(s) that could not be read (benchmark.skip_bad=true): %s", root, len(bad),
                    _listed(bad))
        result.skip("unreadable files", len(bad))
        result.lose("unreadable file(s) left out (benchmark.skip_bad=true)", [f"{b.path}: {b.reason}" for b in bad])
    if not parsed:
        raise ValueError(f"benchmark.path={str(root)!r}: no document in it could be read")
    for d in parsed:
        for w in d.warnings:
            log.warning("%s: %s", d.doc_id, w)
    result.lose("document(s) read with a warning", [f"{d.doc_id}: {w}" for d in parsed for w in d.warnings])


def _read_documents(config: CorpusConfig, skip_bad: bool, leave_out: tuple[Path, ...],
                    result: LoadResult) -> tuple[list[ParsedDocument], list[BadFile]]:
    root = Path(str(config.path))
    cache = ParsedDocumentCache.in_folder(config.cache_dir)
    try:
        parsed, bad = read_folder(root, leave_out=leave_out, cache=cache)
    finally:
        if cache is not None:
            cache.close()
    if cache is not None:
        result.notes["parsed-document cache"] = {"path": str(cache.path), "hits": cache.hits,
                                                 "misses": cache.misses, "corrupted": cache.corrupted}
    _check_documents(root, parsed, bad, skip_bad, result)
    return parsed, bad


def _warn_unaligned(unaligned: list[tuple[str, str, float]], threshold: float, result: LoadResult) -> None:
    if unaligned:
        shown = "; ".join(f"{qid}: {quote[:50]!r} ({q:.2f})" for qid, quote, q in unaligned[:3])
        log.warning("%d evidence quote(s) did not align to their documents (quality < %.2f), left out: %s%s",
                    len(unaligned), threshold, shown, f" (+{len(unaligned) - 3} more)" if len(unaligned) > 3 else "")
        result.lose("evidence quote(s) that did not align, left out", [
            f"{qid}: {quote[:60]!r} (aligned {q:.2f} < {threshold:.2f})" for qid, quote, q in unaligned],
            hint="copy the quote verbatim from the document as the parser reads it; such a question has no evidence "
                 "recall, or less")


def _say_evidence_documents(unnamed: list[Sample], qpath: Path, result: LoadResult) -> None:
    """Questions that name no documents are asked over the whole folder; the verdict counts each under the document
    its evidence lies in (else as a document of its own): said once, in the log and in the load's notes."""
    if not unnamed:
        return
    by_evidence = [s for s in unnamed if not s.group.startswith("question:")]
    log.info("%s: %d question(s) name no documents: each is asked over the whole folder, and the verdict counts it "
             "under the document its evidence lies in (%d of them; the others each as a document of its own): %s%s",
             qpath, len(unnamed), len(by_evidence), ", ".join(f"{s.id} -> {s.group}" for s in unnamed[:5]),
             f" (+{len(unnamed) - 5} more)" if len(unnamed) > 5 else "")
    result.notes["questions without documents"] = {"count": len(unnamed), "grouped by their evidence's document":
                                                   len(by_evidence)}


STRICT_ANSWERS_HINT = ("fix or drop these answers; benchmark.strict_answers=true refuses a questions file that has "
                       "any")


def _evidence_texts(sample: Sample, docs: dict[str, ParsedDocument]) -> list[str]:
    """The texts of the documents a sample's evidence lies in (else of all its documents)."""
    named = [s.doc_id for s in sample.evidence if s.doc_id] or [d.doc_id for d in sample.documents or []]
    return [docs[d].text for d in dict.fromkeys(named) if d in docs]


def _check_alternatives(samples: list[Sample], cfg: dict) -> None:
    """An answer that lists alternatives under a metric that reads plain texts only is refused, naming file, line
    and field (the metric would read the list as one text)."""
    override = cfg.get("metric")
    for s in samples:
        metric = override if override and s.answers and s.metric != "refusal" else s.metric
        if has_alternatives(s.answers) and not reads_alternatives(metric):
            source, _, line = str(s.metadata["source"]).rpartition(":")
            raise DataError(source, int(line), f"lists alternatives ({[a for a in s.answers if isinstance(a, list)][0]}"
                            f"), which metric {metric!r} does not read; the metrics that do: "
                            f"{', '.join(sorted(READS_ALTERNATIVES))}", "answers")


def _check_answers(samples: list[Sample], docs: dict[str, ParsedDocument], cfg: dict, qpath: Path,
                   result: LoadResult) -> None:
    """Answers the metric may score wrongly whatever the reply (eval/corpus/answer_checks.py): named in one warning
    and on the report's first screen; `benchmark.strict_answers=true` refuses them."""
    override = cfg.get("metric")
    problems: list[AnswerProblem] = []
    for s in samples:
        metric = override if override and s.answers and s.metric != "refusal" else s.metric
        problems += answer_problems(s.id, s.question, s.answers, metric, s.language, _evidence_texts(s, docs))
    if not problems:
        return
    named = [p.describe() for p in problems]
    if cfg.get("strict_answers"):
        raise ValueError(f"{qpath}: {len(problems)} answer(s) that the metric may score wrongly "
                         f"(benchmark.strict_answers=true): {'; '.join(named[:5])}"
                         + (f" (+{len(named) - 5} more)" if len(named) > 5 else ""))
    log.warning("%s: %d answer(s) that the metric may score wrongly: %s%s", qpath, len(problems), "; ".join(named[:5]),
                f" (+{len(named) - 5} more)" if len(named) > 5 else "")
    result.lose("answer(s) that the metric may score wrongly", named, hint=STRICT_ANSWERS_HINT)
    result.notes["answers checked at load"] = {"problems": len(problems)}


# An answers cell of a CSV that looks like several answers written as one: "pointer; length; capacity"
_SEVERAL = re.compile(r";|\s\|\s|\n")
CSV_ANSWERS_HINT = 'several answers in a CSV cell are a JSON list: ["pointer", "length", "capacity"]'


def _one_cell_several_answers(q: Question) -> str | None:
    """The `answers` cell of a CSV row that holds one text looking like several answers (None: not such a row)."""
    cell = q.row.data.get("answers")
    if not q.row.source.lower().endswith(".csv") or not isinstance(cell, str) or cell.lstrip().startswith("["):
        return None
    return cell if _SEVERAL.search(cell.strip()) else None


def _report_left_out(qpath: Path, result: LoadResult, orphaned: list[str], several: list[str],
                     rejected: list[str]) -> None:
    """Warn about, count and name the questions left out (about unreadable files, not approved) and the CSV answers
    cells read as one answer."""
    if orphaned:
        log.warning("%s: left out %d question(s) about files that could not be read: %s%s", qpath, len(orphaned),
                    "; ".join(orphaned[:5]), f" (+{len(orphaned) - 5} more)" if len(orphaned) > 5 else "")
        result.skip("questions about unreadable files", len(orphaned))
        result.lose("question(s) about unreadable files, left out", orphaned)
    if several:
        log.warning("%s: %d CSV answers cell(s) read as ONE answer although they look like several (%s): %s%s",
                    qpath, len(several), CSV_ANSWERS_HINT, "; ".join(several[:3]),
                    f" (+{len(several) - 3} more)" if len(several) > 3 else "")
        result.lose("CSV answers cell(s) read as one answer", several, hint=CSV_ANSWERS_HINT)
    if rejected:
        log.warning("%s: left out %d question(s) a reviewer did not approve (approve column): %s%s", qpath,
                    len(rejected), ", ".join(rejected[:5]), f" (+{len(rejected) - 5} more)" if len(rejected) > 5
                    else "")
        result.skip("questions not approved in review", len(rejected))
        result.lose("question(s) not approved in review, left out", rejected)


def _report_unjudged(qpath: Path, result: LoadResult, qrels: Qrels, unjudged: list[str]) -> None:
    """Warn about, count and name the questions the qrels give no relevant document (another split's)."""
    if unjudged:
        log.warning("%s: left out %d question(s) that %s gives no relevant document: %s%s", qpath,
                    len(unjudged), qrels.path, ", ".join(unjudged[:5]),
                    f" (+{len(unjudged) - 5} more)" if len(unjudged) > 5 else "")
        result.skip("questions without relevant documents in qrels", len(unjudged))
        result.lose("question(s) without relevant documents in qrels, left out", unjudged)


def _unreadable_documents(row: Row, unreadable: set[str]) -> list[str]:
    """The files a question row names that were left out as unreadable (skip_bad)."""
    if not unreadable:
        return []
    named = row.data.get("documents")
    names = [named] if isinstance(named, str) else named if isinstance(named, list) else []
    if isinstance(named, str) and named.lstrip().startswith("["):
        try:
            names = json.loads(named)
        except json.JSONDecodeError:
            names = [named]
    return [str(n) for n in names if str(n) in unreadable]


UNANSWERABLE_TASK = "unanswerable"  # testset's label of questions the document cannot answer
DEFAULT_METRIC = "contains_tokens"  # questions with reference answers (benchmark.metric overrides it)
# The metrics this project offers for a corpus question with reference answers: each passes the case table of
# tests/test_scoring_cases.py (`contains_all`, SQuAD's rule, does not: a user may still name it).
ANSWER_METRICS = (DEFAULT_METRIC,)


def metric_for(answers: list[Answer], evidence_texts: list[str], task: str = "") -> str:
    """`refusal` for a question labelled `task: unanswerable`; else `contains_tokens` with reference answers; else
    `evidence_judge` with aligned evidence; else `pairwise_judge`."""
    if task == UNANSWERABLE_TASK:
        return "refusal"
    return DEFAULT_METRIC if answers else ("evidence_judge" if evidence_texts else "pairwise_judge")


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
        config = self._config(cfg)
        qpath = Path(str(config.questions))
        qrels_path = Path(config.qrels) if config.qrels else None
        result = LoadResult([])
        parsed, bad = _read_documents(config, bool(cfg.get("skip_bad")),
                                      (qpath, *([qrels_path] if qrels_path else [])), result)
        docs = {d.doc_id: d for d in parsed}
        qrels = Qrels(qrels_path, docs) if qrels_path else None
        result.samples, unaligned = self._samples(config, docs, qpath, qrels, result, {b.path for b in bad})
        _warn_unaligned(unaligned, config.evidence_threshold, result)
        _check_alternatives(result.samples, cfg)
        _check_answers(result.samples, docs, cfg, qpath, result)
        result.notes.update({"documents": len(docs), "unreadable files": [b.path for b in bad],
                             "evidence quotes not aligned": len(unaligned),
                             "documents with warnings": sum(1 for d in parsed if d.warnings),
                             "footnotes kept": sum(d.footnotes for d in parsed),
                             "questions by metric": dict(Counter(s.metric for s in result.samples)),
                             "data fingerprint": data_fingerprint(str(config.path), qpath, qrels_path)})
        return result

    def level_by_tokens(self, result: LoadResult, cfg: dict, count_tokens: Callable[[str], int]) -> bool:
        """Length levels by the generator's own tokens (a document's level says whether it fits the generator's
        window; approximate tokens put an 8.7k-token PDF in `0-8k`): each distinct context counted once."""
        edges = self._config(cfg).level_edges
        counted: dict[str, int] = {}
        for s in result.samples:
            if s.context not in counted:
                counted[s.context] = int(count_tokens(s.context))
            s.metadata["tokens"] = counted[s.context]
            s.length_level = length_level(counted[s.context], edges)
        result.notes["length levels"] = "by the generator's tokens"
        return True

    @staticmethod
    def _config(cfg: dict) -> CorpusConfig:
        known = [f.name for f in fields(CorpusConfig)]
        check_keys("corpus", cfg, known)
        opts: dict[str, Any] = {k: (tuple(v) if k == "level_edges" else v) for k, v in cfg.items() if k in known}
        config = CorpusConfig(**opts)
        if not config.path:
            raise ValueError("benchmark=corpus needs benchmark.path=DIR (a folder of your documents)")
        if not config.questions:
            raise ValueError("benchmark=corpus needs benchmark.questions=FILE (.jsonl or .csv, one question per row)")
        if config.context not in (None, *CONTEXTS):
            raise ValueError(f"benchmark.context={config.context!r}; allowed: null, {', '.join(CONTEXTS)}")
        return config

    @staticmethod
    def _checked(row: Row, seen: set[str], docs: dict[str, ParsedDocument], qrels: Qrels | None,
                 config: CorpusConfig) -> Question:
        """The question of `row` with its qrels documents; a duplicate id or a document not read raises."""
        q = question_of(row)
        if q.id in seen:
            raise row.error(f"duplicate id {q.id!r}", "_id" if is_beir_query(row) else "id")
        seen.add(q.id)
        if qrels is not None:
            q.documents += [d for d in qrels.relevant.get(q.id, []) if d not in q.documents]
        missing = [d for d in q.documents if d not in docs]
        if missing:
            raise row.error(f"{missing[:3]} not among the {len(docs)} documents read from {config.path}",
                            "documents")
        return q

    def _questions(self, config: CorpusConfig, docs: dict[str, ParsedDocument], qpath: Path,
                   qrels: Qrels | None, result: LoadResult, unreadable: set[str]) -> Iterator[Question]:
        """The checked questions of the file; those without answers, evidence or documents after qrels
        (BEIR queries of another split), and those about a file left out as unreadable (`unreadable`, with
        skip_bad), are left out, counted and named."""
        seen: set[str] = set()
        unjudged: list[str] = []
        rejected: list[str] = []
        orphaned: list[str] = []
        several: list[str] = []
        for row in question_rows(qpath):
            q = None
            with record_guard():  # a bad row raises, or is skipped and counted (skip_bad)
                gone = _unreadable_documents(row, unreadable)
                if gone:
                    orphaned.append(f"{row.data.get('id') or row.data.get('_id') or f'line {row.line}'} "
                                    f"({', '.join(gone)})")
                    continue
                q = self._checked(row, seen, docs, qrels, config)
                if not approved(row):
                    rejected.append(q.id)
                    q = None
            if q is None:
                continue
            if qrels is not None and not (q.documents or q.answers or q.evidence):
                unjudged.append(q.id)
                continue
            cell = _one_cell_several_answers(q)
            if cell is not None:
                several.append(f"{q.id}: {cell[:60]!r}")
            yield q
        _report_left_out(qpath, result, orphaned, several, rejected)
        if qrels is not None:
            qrels.check_queries(seen)
            _report_unjudged(qpath, result, qrels, unjudged)

    def _samples(self, config: CorpusConfig, docs: dict[str, ParsedDocument], qpath: Path, qrels: Qrels | None,
                 result: LoadResult, unreadable: set[str]) -> tuple[list[Sample], list[tuple[str, str, float]]]:
        contexts = _Contexts(docs)
        everything = tuple(sorted(docs))
        samples: list[Sample] = []
        unaligned: list[tuple[str, str, float]] = []
        for q in self._questions(config, docs, qpath, qrels, result, unreadable):
            with record_guard():
                mode = config.context or ("documents" if q.documents else "corpus")
                if mode == "documents" and not q.documents:
                    raise q.row.error("empty: name the question's documents, or set benchmark.context=corpus",
                                      "documents")
                ids = tuple(q.documents) if mode == "documents" else everything
                sample, dropped = self._sample(q, ids, mode, contexts, config)
                unaligned += [(q.id, quote, quality) for quote, quality in dropped]
                samples.append(sample)
        _say_evidence_documents([s for s in samples if s.metadata["context_mode"] == "corpus"
                                 and not s.metadata["documents"]], qpath, result)
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
            if doc is not None and page is not None:
                pages.append(f"{doc.doc_id} p{page}")
        quotes = [context[a.start:a.end] for a in kept]
        if mode == "corpus" and not q.evidence:
            evidence = [Span(doc_id=d) for d in q.documents]  # document-level gold evidence
        if mode == "documents":
            group = "docs:" + hashlib.sha256("\n".join(ids).encode()).hexdigest()[:12]
        else:  # the bootstrap resamples documents: the one the evidence lies in, else the question
            group = next((s.doc_id for s in evidence if s.doc_id), None) or f"question:{q.id}"
        tokens = contexts.approx_tokens(ids)
        language = language_of(q.question)
        overlap = lexical_overlap(q.question, quotes, language) if quotes else None
        return Sample(
            id=q.id, benchmark=self.name, task=q.task, language=language,
            length_level=length_level(tokens, config.level_edges), context=context, question=q.question,
            answers=q.answers, template=self._template(language, config), metric=metric_for(q.answers, quotes, q.task),
            evidence=evidence, documents=documents, group=group,
            metadata={"documents": list(ids) if mode == "documents" else q.documents, "context_mode": mode,
                      "approx_tokens": tokens, "evidence_pages": pages, "source": f"{q.row.source}:{q.row.line}",
                      "lexical_overlap": overlap},
            reference_extra={"question": q.question, "evidence": quotes},
        ), dropped

    @staticmethod
    def _template(language: str, config: CorpusConfig) -> PromptTemplate:
        template = TEMPLATES[language]
        if template.max_new_tokens == config.max_new_tokens:
            return template
        return PromptTemplate(template.text, max_new_tokens=int(config.max_new_tokens), truncation=template.truncation,
                              source=template.source)


__all__ = ["ANSWER_METRICS", "CONTEXTS", "CorpusBenchmark", "CorpusConfig", "TEMPLATES", "metric_for"]
