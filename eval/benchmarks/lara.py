"""LaRA (Alibaba-NLP/LaRA, MIT; Li et al., 2025, "LaRA: Benchmarking Retrieval-Augmented Generation
and Long-Context LLMs"): a benchmark built to decide between RAG and long context. 2,326 English
questions over novels, financial statements and papers at 32k and 128k tokens.

Data layout (a clone of the repository, read in its own layout; `path` is the clone or its
`datasets/` folder):

    <clone>/datasets/query/{length}_{domain}_{type}.jsonl   length 32k | 128k; domain book | financial |
                                                            paper; type location | reasoning | comp | hallu
    <clone>/datasets/{length}/{domain}/{file}               the document a query line names in `file`

A query line holds `type` (novel, novelette, book, financial, paper; `_fake` where character names
were replaced), `level` (the task type, as in the file name), `length`, `file`, `question`,
`answer`, and `context_order` (location, reasoning, hallu: the part of the document the question
was written from: a paper's number, a segment's number, or "full") or `comp_parts` (comp: the two
parts compared). The 32k book-location lines also carry `context`: the segment of the document the
question was written from (one fifth of it), so that file is large. The released
evaluation ignores that field and reads the document file (`eval_full.py`, `eval_rag.py`:
`eg['context'] = open(f"../datasets/{length}/{domain}/{file}").read()`); so does this loader, and
records where the segment sits in the document as `metadata['segment_span']` (when found).

Samples
- task: `location`, `reasoning`, `comparison`, `hallucination` (files `location`, `reasoning`,
  `comp`, `hallu`: `TASK_OF_TYPE`); length level: `32k`, `128k`; language `en`; `domains` selects
  book / financial / paper (`metadata['domain']`).
- id: `lara/{length}_{domain}_{type}/{i}`, `i` the 0-based line number in the query file (the
  position of the question; the released files have no blank lines), so ids never depend on the
  selection and a bad line skipped does not shift the others (`sample_id`).
- group: the document (`lara/{length}/{domain}/{file}`): the questions of one document share one
  context string and come one after another, across tasks.
- answers: `[answer]`; the judge also sees the question (`reference_extra`).

Matching released predictions: `lara_index(path)` reads only the query files and maps
(length, domain, task, file, question) to the ids of the samples asking that question about that
document, in file order (`file` as in the query line; the released prediction lines carry
`file` and `question` too). Every key holds one id but one: a question asked twice about one
document (128k financial hallu, two parts of one statement) holds two, and the released prediction
files keep the query files' order, so the n-th prediction with that key is the n-th id. (Without
`file` a few more questions repeat: 32k financial location asks the same question of several
statements.) `parse_query_file_name` reads (length, domain, task) from a query file's name;
prediction files end in the same `{length}_{domain}_{type}.jsonl`.

Prompt (evaluation/prompt.py, eval_utils.py `create_msgs`, eval_full_open.py): `full_templates`
per domain (`prompt: full`, the default, for every arm: the project's one scaffold per sample), or
`rag_templates`, the wording the released RAG runs used ("Here are some chunks retrieved from ...",
`prompt: rag`; conf/experiment/lara_rag_baseline.yaml sets it); system message "You are a helpful
assistant"; 1,024 new tokens (the open-model scripts; the API scripts set no limit). The released
long-context prompt is cut in the middle, whole (gpt-4 tiktoken tokens, to 128,000 - 1,000, first
and last half kept): `prompt_middle` truncation, to the generator's window less
`longctx.reserve_tokens` (`+longctx.reserve_tokens=1000` for the released reserve).

Gold evidence: LaRA releases none at span level. Where a document level is defined it is used:
a paper file holds several papers, each between `<paper N>` and `</end of paper N>` lines, and a
paper question names the paper it was written from (`context_order` N; `comp_parts`, the two
compared), so paper samples get `documents` (one per paper; each paper's chunks stay in it) and a
`Span(doc_id="paper N")` per named paper: doc recall@n (`doc_recall`) says whether a top-n chunk came from that paper.
Book and financial parts (`context_order`) are equal-sized slices of one document, cut
differently per task and not in the release: no evidence, the part number kept in metadata.
Hallucination questions have no evidence (the document does not answer them).

Metric: `lara_judge` (the released True/False judge, its own prompt for hallucination: it credits
an answer that says the document does not contain the information), the official one; `lara_auto`
is a judge-free fallback (eval/metrics/lara.py), not comparable with the paper.

Missing files are skipped and counted, never silently: a query file absent from the clone (the
count is the release's, `RELEASED_COUNTS`; one warning), and questions whose document file is
absent. When every selected query file is missing the load fails.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from eval.benchmarks.base import Benchmark, LoadResult
from eval.benchmarks.common import as_list, check_keys, consecutive_groups, selection
from eval.data_files import DataError, Row, decode_text, inside, read_records, record_guard
from eval.metrics.lara import lara_reference
from eval.sample import Document, PromptTemplate, Sample, Span

log = logging.getLogger(__name__)

SOURCE = ("Alibaba-NLP/LaRA evaluation/prompt.py (full_templates, rag_templates), evaluation/eval_utils.py "
          "(create_msgs: system message, middle truncation), evaluation/eval_full_open.py (max_new_tokens=1024)")
LEVELS = ("32k", "128k")
DOMAINS = ("book", "financial", "paper")
TASK_OF_TYPE = {"location": "location", "reasoning": "reasoning", "comp": "comparison", "hallu": "hallucination"}
TYPE_OF_TASK = {task: kind for kind, task in TASK_OF_TYPE.items()}
TASKS = tuple(TASK_OF_TYPE.values())
SYSTEM = "You are a helpful assistant"

# evaluation/prompt.py, verbatim (spaces and all)
FULL_TEMPLATES = {
    "paper": "Read the papers below and answer a question \n\n{context}\n\nQuestion: {question}\n\n Be concise.",
    "financial": "Read the financial statement below and answer a question \n\n{context}\n\nQuestion: {question}\n\n"
                 " Be concise.",
    "book": "Read the book below and answer a question.\n\n{context}\n\nQuestion: {question}\n\nBe concise.",
}
RAG_TEMPLATES = {
    "paper": "Here are some chunks retrieved from some papers. Read these chunks to answer a question.\n\n{context}\n\n"
             "Question: {question}\n\n Be concise.",
    "financial": "Here are some chunks retrieved from a financial statement. Read these chunks to answer a question. "
                 "\n\n{context}\n\nQuestion: {question}\n\n Be concise.",
    "book": "Here are some chunks retrieved from a book. Read these chunks to answer a question.\n\n{context}\n\n"
            "Question: {question}\n\nBe concise.",
}
PROMPTS = {"full": FULL_TEMPLATES, "rag": RAG_TEMPLATES}

# Questions per query file in the release (commit c171553); 2,326 in all, as the paper says. The
# 128k book-location count is that of the released prediction files (every model has 250 lines).
RELEASED_COUNTS = {
    ("32k", "book"): {"location": 75, "reasoning": 59, "comparison": 45, "hallucination": 59},
    ("32k", "financial"): {"location": 148, "reasoning": 118, "comparison": 87, "hallucination": 118},
    ("32k", "paper"): {"location": 53, "reasoning": 53, "comparison": 19, "hallucination": 53},
    ("128k", "book"): {"location": 250, "reasoning": 168, "comparison": 73, "hallucination": 167},
    ("128k", "financial"): {"location": 108, "reasoning": 77, "comparison": 33, "hallucination": 77},
    ("128k", "paper"): {"location": 129, "reasoning": 131, "comparison": 92, "hallucination": 134},
}
RELEASED_TOTAL = 2326

EVIDENCE_NOTE = (
    "LaRA releases no span-level evidence. Document level where defined: paper files hold several papers "
    "(<paper N> ... </end of paper N>) and a paper question names the paper(s) it was written from, so paper "
    "location/reasoning/comparison samples have document-level evidence (doc_recall@n: a top-n chunk from that paper). "
    "Book and financial parts are slices of one document, not released: no evidence (the part number is in "
    "metadata). Hallucination questions have none (the document does not answer them).")
METRIC_NOTE = (
    "Official: lara_judge, the released True/False LLM judge (hallucination has its own prompt, crediting an answer "
    "that says the document does not contain the information). lara_auto is a judge-free fallback (refusal "
    "detection for hallucination, token F1 otherwise), not comparable with the paper.")

_FILE_NAME = re.compile(r"(?:.*_)?(32k|128k)_(book|financial|paper)_(location|reasoning|comp|hallu)\.jsonl")
_PAPER_OPEN = re.compile(r"^<paper (\d+)>[ \t]*\r?$", re.M)
_HEADING = re.compile(r"^#+\s*(.+?)\s*$", re.M)


@dataclass
class LaraConfig:
    path: str = "../shared/data/LaRA"
    domains: list[str] | None = None
    prompt: str = "full"  # full: the released long-context prompt for every arm | rag: the released RAG wording
    max_new_tokens: int = 1024
    truncation: str = "prompt_middle"


def lara_template(text: str, cfg: LaraConfig) -> PromptTemplate:
    return PromptTemplate(text, max_new_tokens=int(cfg.max_new_tokens), truncation=cfg.truncation, system=SYSTEM,
                          source=SOURCE)


def sample_id(length: str, domain: str, task: str, position: int) -> str:
    """`lara/{length}_{domain}_{type}/{position}`: `task` as a task name or the file's type."""
    kind = TYPE_OF_TASK.get(task, task)
    if kind not in TASK_OF_TYPE:
        raise ValueError(f"unknown LaRA task {task!r}; tasks: {', '.join(TASKS)} (files: {', '.join(TASK_OF_TYPE)})")
    return f"lara/{length}_{domain}_{kind}/{position}"


def parse_query_file_name(name: str) -> tuple[str, str, str] | None:
    """(length, domain, task) of `32k_paper_comp.jsonl` (or any name ending so, e.g. a released
    prediction file `full_preds_gpt-4o_32k_paper_comp.jsonl`); None for other names."""
    m = _FILE_NAME.fullmatch(Path(name).name)
    return (m.group(1), m.group(2), TASK_OF_TYPE[m.group(3)]) if m else None


def _dataset_root(path: Path) -> Path:
    """The `datasets/` folder of a clone (or `path` itself when it is that folder)."""
    for root in (path / "datasets", path):
        if (root / "query").is_dir():
            return root
    if not path.exists():
        raise DataError(str(path), None, "no such folder. LaRA is read from a clone of the repository "
                        "(git clone https://github.com/Alibaba-NLP/LaRA): set benchmark.path or LARA_PATH")
    raise DataError(str(path), None, "no datasets/query folder here: expected a clone of Alibaba-NLP/LaRA "
                    "(or its datasets/ folder)")


def _paper_documents(text: str, file: str) -> list[Document]:
    """One Document per `<paper N>` section, tiling the file (each from its marker to the next one)."""
    marks = list(_PAPER_OPEN.finditer(text))
    if not marks:
        return [Document(doc_id=file, start=0, end=len(text), title=file)]
    docs = []
    for k, m in enumerate(marks):
        start = 0 if k == 0 else m.start()
        end = marks[k + 1].start() if k + 1 < len(marks) else len(text)
        heading = _HEADING.search(text, m.end(), end)
        docs.append(Document(doc_id=f"paper {m.group(1)}", start=start, end=end,
                             title=heading.group(1) if heading else f"paper {m.group(1)}"))
    return docs


@dataclass
class _Doc:
    text: str
    documents: list[Document]


class _Docs:
    """Document files, read once each (questions of one document share its text)."""

    def __init__(self, root: Path):
        self.root = root
        self.cache: dict[Path, _Doc | None] = {}

    def get(self, length: str, domain: str, row: Row) -> tuple[Path, _Doc | None]:
        folder = self.root / length / domain
        path = inside(folder, row.field("file", str), row, "file")
        if path not in self.cache:
            if not path.is_file():
                self.cache[path] = None
            else:
                text = decode_text(path.read_bytes(), str(path))
                documents = (_paper_documents(text, path.name) if domain == "paper"
                             else [Document(doc_id=path.name, start=0, end=len(text), title=path.stem)])
                self.cache[path] = _Doc(text, documents)
        return path, self.cache[path]


def _part(row: Row, task: str) -> Any:
    """`context_order` (an integer or "full") or, for comparison, `comp_parts` (integers)."""
    if task == "comparison":
        parts = row.field("comp_parts", list)
        if not parts or not all(isinstance(p, int) and not isinstance(p, bool) for p in parts):
            raise row.error(f"must be a list of part numbers, got {parts!r}", "comp_parts")
        return parts
    order = row.field("context_order", (int, str))
    if isinstance(order, str) and order != "full":
        raise row.error(f"must be a part number or \"full\", got {order!r}", "context_order")
    return order


def _evidence(task: str, domain: str, part: Any, doc: _Doc) -> tuple[list[Span], str]:
    if task == "hallucination":
        return [], "none: a hallucination question is not answered by the document"
    if domain != "paper":
        return [], f"none: {domain} parts are unreleased slices of one document"
    ids = {d.doc_id for d in doc.documents}
    named = part if isinstance(part, list) else [part] if isinstance(part, int) else []
    if not named:
        return [], "none: the question was written from the whole file"
    wanted = [f"paper {n}" for n in named]
    missing = [w for w in wanted if w not in ids]
    if missing:
        return [], f"none: {', '.join(missing)} not marked in the file"
    return [Span(doc_id=w) for w in wanted], "document: the paper(s) the question was written from"


def _file_samples(root: Path, docs: _Docs, length: str, domain: str, task: str, cfg: LaraConfig,
                  missing_docs: dict[str, int]) -> Iterator[Sample]:
    kind = TYPE_OF_TASK[task]
    path = root / "query" / f"{length}_{domain}_{kind}.jsonl"
    template = lara_template(PROMPTS[cfg.prompt][domain], cfg)
    for row in read_records(path):
        sample = None
        with record_guard():
            sample = _sample(row, root, docs, length, domain, task, template, missing_docs)
        if sample is not None:
            yield sample


def _sample(row: Row, root: Path, docs: _Docs, length: str, domain: str, task: str, template: PromptTemplate,
            missing_docs: dict[str, int]) -> Sample | None:
    kind = TYPE_OF_TASK[task]
    for name, expected in (("level", kind), ("length", length)):
        value = row.field(name, str, None)
        if value is not None and value != expected:
            raise row.error(f"is {value!r} in the file of {length}_{domain}_{kind}", name)
    question = row.field("question", str)
    if not question.strip():
        raise row.error("is empty", "question")
    answer = row.field("answer", str)
    part = _part(row, task)
    embedded = row.field("context", str, None)
    path, doc = docs.get(length, domain, row)
    if doc is None:
        missing_docs[str(path)] = missing_docs.get(str(path), 0) + 1
        return None
    evidence, source = _evidence(task, domain, part, doc)
    meta: dict[str, Any] = {"domain": domain, "file": path.name, "type": row.field("type", str, None), "part": part,
                            "evidence_source": source, "source": f"{row.source}:{row.line}"}
    if embedded:
        at = doc.text.find(embedded)
        meta["segment_span"] = [at, at + len(embedded)] if at >= 0 else None
    ref = lara_reference(task, {"question": question, "answer": answer})
    return Sample(
        id=sample_id(length, domain, task, row.line - 1), benchmark="lara", task=task, language="en",
        length_level=length, context=doc.text, question=question, answers=ref.answers, template=template,
        metric="lara_judge", evidence=evidence, documents=list(doc.documents),
        group=f"lara/{length}/{domain}/{path.name}", metadata=meta, reference_extra=ref.extra,
    )


def _config(cfg: dict[str, Any]) -> LaraConfig:
    names = {f.name for f in fields(LaraConfig)}
    check_keys("lara", cfg, names)
    if "path" in cfg and not cfg["path"]:
        raise ValueError("benchmark.path: LaRA is read from a local clone only (git clone "
                         "https://github.com/Alibaba-NLP/LaRA); got none")
    opts = {k: v for k, v in cfg.items() if k in names and v is not None}
    out = LaraConfig(**opts)
    if out.prompt not in PROMPTS:
        raise ValueError(f"benchmark.prompt={out.prompt!r}; allowed: {', '.join(PROMPTS)}")
    if int(out.max_new_tokens) <= 0:
        raise ValueError(f"benchmark.max_new_tokens must be positive, got {out.max_new_tokens}")
    return out


class LaRABenchmark(Benchmark):
    """lara: see the module docstring."""

    name = "lara"
    tasks = TASKS
    levels = LEVELS
    evidence = "documents"
    multi_document = True  # a paper file joins several papers (one Document each)
    truncation = "prompt_middle"
    # by domain, with the defaults of LaraConfig; `benchmark.prompt=rag` uses RAG_TEMPLATES' wording
    templates = {domain: lara_template(text, LaraConfig()) for domain, text in FULL_TEMPLATES.items()}

    def load(self, cfg: dict[str, Any]) -> LoadResult:
        """The `benchmark=lara` config group -> samples (see the module docstring)."""
        conf = _config(cfg)
        tasks, _ = selection(cfg.get("tasks"), TASKS, "tasks", "lara")
        levels, _ = selection(cfg.get("levels"), LEVELS, "levels", "lara")
        domains, _ = selection(as_list(conf.domains), DOMAINS, "domains", "lara")
        root = _dataset_root(Path(conf.path).expanduser())
        docs = _Docs(root)
        samples: list[Sample] = []
        missing_files: dict[str, int] = {}
        missing_docs: dict[str, int] = {}
        selected = 0
        for length in levels:
            for domain in domains:
                for task in tasks:
                    selected += 1
                    name = f"{length}_{domain}_{TYPE_OF_TASK[task]}.jsonl"
                    if not (root / "query" / name).is_file():
                        missing_files[name] = RELEASED_COUNTS[(length, domain)][task]
                        continue
                    samples.extend(_file_samples(root, docs, length, domain, task, conf, missing_docs))
        if missing_files and len(missing_files) == selected:
            raise DataError(str(root / "query"), None, f"none of the selected query files is here "
                            f"({', '.join(sorted(missing_files))})")
        result = LoadResult(consecutive_groups(samples))
        notes: dict[str, Any] = {"evidence": EVIDENCE_NOTE, "metric": METRIC_NOTE, "released_questions": RELEASED_TOTAL}
        if missing_files:
            result.skip("query file missing (questions in the release)", sum(missing_files.values()))
            notes["missing_query_files"] = dict(sorted(missing_files.items()))
            log.warning("LaRA: %d query files missing from %s (%s: %d questions in the release); loaded the rest",
                        len(missing_files), root / "query", ", ".join(sorted(missing_files)),
                        sum(missing_files.values()))
        if missing_docs:
            result.skip("document file missing", sum(missing_docs.values()))
            notes["missing_documents"] = dict(sorted(missing_docs.items()))
            more = f" (+{len(missing_docs) - 3} more)" if len(missing_docs) > 3 else ""
            log.warning("LaRA: skipped %d questions whose document is missing (%s%s)", sum(missing_docs.values()),
                        "; ".join(sorted(missing_docs)[:3]), more)
        result.notes = notes
        return result


def lara_index(path: str | Path) -> dict[tuple[str, str, str, str, str], list[str]]:
    """(length, domain, task, file, question) -> the ids of the samples asking it, in file order, for
    every query file of a clone (documents are not read; a malformed line raises `DataError` naming
    it). See the module docstring."""
    root = _dataset_root(Path(path).expanduser())
    index: dict[tuple[str, str, str, str, str], list[str]] = {}
    for query_file in sorted((root / "query").glob("*.jsonl")):
        parsed = parse_query_file_name(query_file.name)
        if parsed is None:
            continue
        length, domain, task = parsed
        for row in read_records(query_file):
            key = (length, domain, task, row.field("file", str), row.field("question", str))
            index.setdefault(key, []).append(sample_id(length, domain, task, row.line - 1))
    return index
