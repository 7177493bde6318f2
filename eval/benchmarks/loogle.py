"""LooGLE (bigai-nlco/LooGLE, MIT): long English documents with many questions each.

Tasks: `shortdep_qa`, `longdep_qa`, `shortdep_cloze`, `longdep_summarization`.

Two schemas are read, from a local file or folder (`path`) or from the Hugging Face Hub
(`path: null`, `hub_id`):

- original, one row per document: `input` (the document), `title`, `qa_pairs` (a Python-literal
  string, parsed with `ast.literal_eval`, never `eval`; `"none"` for summarization) holding
  `{"Q", "A", "S"[, "type"]}` items, and `output` (the gold summary for summarization);
- newer, one row per question: `context`, `question`, `answer`, optional `evidence` (text or list),
  `title`, `doc_id`, `id`, `type`.

A folder holds one file per task, named by the task (`shortdep_qa.jsonl`; `.json` also read;
`summarization.jsonl` for `longdep_summarization`), directly or under `data/`, or in a `data.zip`
beside them (read without unpacking). A single file is one task, named the same way; a single
`.zip` holds such files. So a snapshot of the Hub repository (`huggingface-cli download
--repo-type dataset bigai-nlco/LooGLE --local-dir DIR`: `data.zip` holding `{task}.json`, plus
`LooGLE.py`, `README.md`, parquet conversions and `.cache/huggingface/`) loads as `path: DIR`; the
repository's loading script and everything else in it is never read, let alone run.

Prompts are the released `config/task2prompt.json` after `str.format` (so the cloze example's
`{{...}}` is single-braced), `{input}` -> `{context}`, `{Q}` -> `{question}`; max new tokens from
`config/task2maxlen.json`. Generation as the released prediction scripts: open models
(`Prediction/pred_opensource_models.py`) get the raw prompt with no chat template, greedy, with
`repetition_penalty=2`; GPT models (`pred_gpt_models.py`) get the prompt as the one `system`
message, temperature 0. The templates say so (`chat=False`, `repetition_penalty=2.0`): the
transformers and vLLM backends tokenize the raw text and the transformers backend applies the
penalty; a chat API gets the prompt as the system message, and the penalty is sent to
OpenAI-compatible servers other than OpenAI's (whose API has none). Both scripts cut an
over-long prompt to its first and last max_length/2 tokens: `middle` truncation here (applied to
the context, so the question at the end always survives).

Gold evidence (`S`, QA tasks only; a cloze item's `S` is the unmasked question, not evidence):
each string is split at the annotators' joins (runs of 4+ dots), and each piece aligned to a
char span of the document (`eval.align`): verbatim, token-exact, or fuzzy with quality = share of
its tokens matched; a piece below `evidence_threshold` is retried sentence by sentence; what is
still below is dropped. A piece found verbatim more than once is one any-of group (`Span.alt`):
present when any copy is. Counts per sample are in `metadata['evidence_alignment']`
({exact, tokens, fuzzy, dropped}); `evidence_stats(samples)` sums them.

Length levels: LooGLE has none. Contexts are bucketed by approximate tokens (1 per English
word or punctuation mark, `eval.benchmarks.synthetic.approx_tokens`) at `level_edges`:
`0-16k`, `16k-32k`, `32k-64k`, `64k-128k`, `128k+` by default.

Samples of one document share a group (and are consecutive), across tasks too: the same
document can appear in several task files.

Longer than most modules on purpose: everything about one benchmark (the released prompts and
generation settings, the file, zip and hub-snapshot layouts, the evidence alignment), in one place.
"""

from __future__ import annotations

import ast
import hashlib
import json
import logging
import re
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from eval.align import Alignment, TokenIndex, align
from eval.benchmarks.base import Benchmark, LoadResult, Rescoring
from eval.benchmarks.common import approx_tokens, as_list, check_keys, consecutive_groups, length_level, level_names
from eval.data_files import (
    DataError,
    Row,
    decode_text,
    first_existing,
    hub_records,
    parse_jsonl,
    read_records,
    record_guard,
)
from eval.metrics.loogle import (
    bertscore_model,
    bertscore_values,
    cloze_as_text,
    loogle_metric,
    loogle_reference,
    rescoring_summary,
)
from eval.metrics.official import loogle_official
from eval.sample import Document, PromptTemplate, Sample, Span

log = logging.getLogger(__name__)

TASKS = ("shortdep_qa", "longdep_qa", "shortdep_cloze", "longdep_summarization")
# file / Hub config names a task is found under (the current Hub repo calls one `summarization`)
TASK_FILES = {
    "shortdep_qa": ("shortdep_qa",),
    "longdep_qa": ("longdep_qa",),
    "shortdep_cloze": ("shortdep_cloze",),
    "longdep_summarization": ("longdep_summarization", "summarization"),
}
HUB_ID = "bigai-nlco/LooGLE"
SOURCE = "bigai-nlco/LooGLE config/task2prompt.json, config/task2maxlen.json, Prediction/pred_*.py"

# Prediction/pred_opensource_models.py: the raw prompt (no chat template), greedy, repetition_penalty=2
_GENERATION: dict[str, Any] = {"chat": False, "repetition_penalty": 2.0}
_QA = "Please answer the question based on the long texts below. \n{context}\nQuestion: {question}\nAnswer: "
TEMPLATES = {
    "shortdep_qa": PromptTemplate(_QA, max_new_tokens=300, truncation="middle", source=SOURCE, **_GENERATION),
    "longdep_qa": PromptTemplate(_QA, max_new_tokens=500, truncation="middle", source=SOURCE, **_GENERATION),
    "longdep_summarization": PromptTemplate(
        "Please generate a summary of the below paper. \n{context}\n Summarization: ",
        max_new_tokens=500, truncation="middle", source=SOURCE, **_GENERATION),
    "shortdep_cloze": PromptTemplate(
        "Please fill in the clozes based on the given long texts below. Each of the placeholder '<mask-n>' in the "
        "question could be an entity of Person, Location or Organiocation. The same masks represent the same entity. "
        "Output a json format answer, for example: {'<mask-0>': 'Bob', '<mask-1>': 'Gorrosion Magazine',"
        "'<mask-2>': 'Bethel Horizon'}\n{context}\n Question: {question} What are the masked entities? \nAnswer:",
        max_new_tokens=50, truncation="middle", source=SOURCE, **_GENERATION),
}

_JOINS = re.compile(r"\s*(?:\.{4,}|…{2,})\s*")  # annotators join non-adjacent extracts with dots
_SENTENCE = re.compile(r"(?<=[.!?])(?:\[\d+\])*\s+(?=[A-Z0-9\"'(\[])")
DEFAULT_EDGES = (16_000, 32_000, 64_000, 128_000)


@dataclass
class LoogleConfig:
    path: str | None = "../shared/data/loogle"
    hub_id: str = HUB_ID
    hub_revision: str | None = None
    split: str = "test"
    evidence_threshold: float = 0.8
    level_edges: tuple[int, ...] = DEFAULT_EDGES


# ---------------------------------------------------------------- evidence
def evidence_pieces(s: Any) -> list[str]:
    """LooGLE's `S` (text or list of text) as pieces to align: split at runs of dots, stripped."""
    items = s if isinstance(s, list) else [s]
    out = []
    for item in items:
        for piece in _JOINS.split(str(item)):
            if piece.strip():
                out.append(piece.strip())
    return out


def align_evidence(pieces: list[str], index: TokenIndex, threshold: float) -> tuple[list[Alignment], dict[str, int]]:
    """Spans for the pieces and counts {exact, tokens, fuzzy, dropped} (a sentence retried counts alone)."""
    counts = {"exact": 0, "tokens": 0, "fuzzy": 0, "dropped": 0}
    kept: list[Alignment] = []
    for piece in pieces:
        a = align(piece, index)
        if a is not None and a.quality >= threshold:
            kept.append(a)
            counts[a.method] += 1
            continue
        sentences = [x.strip() for x in _SENTENCE.split(piece) if x.strip()]
        if len(sentences) < 2:
            counts["dropped"] += 1
            continue
        for sentence in sentences:
            b = align(sentence, index)
            if b is not None and b.quality >= threshold:
                kept.append(b)
                counts[b.method] += 1
            else:
                counts["dropped"] += 1
    # one span per place: the same text cited twice is one piece of evidence
    unique = {(a.start, a.end): a for a in sorted(kept, key=lambda a: (a.start, a.end))}
    return list(unique.values()), counts


def evidence_stats(samples: Iterable[Sample]) -> dict[str, int]:
    """Alignment counts summed over samples: exact, tokens, fuzzy, dropped."""
    total = {"exact": 0, "tokens": 0, "fuzzy": 0, "dropped": 0}
    for s in samples:
        for k, v in (s.metadata.get("evidence_alignment") or {}).items():
            total[k] = total.get(k, 0) + v
    return total


# ---------------------------------------------------------------- reading
@dataclass
class _Item:
    """One question (or one summary) over one document, schema-independent."""

    task: str
    row: Row
    context: str
    title: str
    question: str
    answer: Any
    evidence: Any  # S: text, list of text, or None
    qa_type: str | None
    local_id: str
    doc_key: str


def _literal_pairs(row: Row) -> list[dict] | None:
    raw = row.field("qa_pairs", (str, list))
    if isinstance(raw, str):
        if raw.strip().lower() == "none":
            return None
        try:
            raw = ast.literal_eval(raw)
        except (ValueError, SyntaxError, MemoryError, RecursionError) as exc:
            raise row.error(f"is not a Python literal list of question dicts ({type(exc).__name__}: {exc})",
                            "qa_pairs") from exc
    if not isinstance(raw, list):
        raise row.error(f"must hold a list of question dicts, got {type(raw).__name__}", "qa_pairs")
    for j, qa in enumerate(raw):
        if not isinstance(qa, dict):
            raise row.error(f"item {j} must be a dict with Q, A, S, got {type(qa).__name__}", "qa_pairs")
    return raw


def _pair_field(row: Row, j: int, qa: dict, key: str, types: tuple[type, ...], required: bool = True) -> Any:
    if key not in qa:
        if required:
            raise row.error(f"item {j} has no {key!r} (keys: {', '.join(map(str, qa))})", "qa_pairs")
        return None
    value = qa[key]
    if not isinstance(value, types) or (isinstance(value, list) and not all(isinstance(v, str) for v in value)):
        raise row.error(f"item {j}: {key!r} must be {' or '.join(t.__name__ for t in types)}"
                        f"{' of text' if list in types else ''}, got {type(value).__name__}", "qa_pairs")
    return value


def _items_of_row(task: str, row: Row, index: int) -> Iterator[_Item]:
    if row.has("input") or row.has("qa_pairs"):  # original: one row per document
        context = row.field("input", str)
        title = row.field("title", str, "")
        doc_key = f"{index:04d}"
        if task == "longdep_summarization":
            summary = row.field("output", str)
            if summary.strip().lower() in ("", "none"):
                raise row.error("holds no gold summary", "output")
            yield _Item(task, row, context, title, "", summary, None, None, doc_key, doc_key)
            return
        pairs = _literal_pairs(row)
        if not pairs:
            raise row.error(f"a {task} row needs questions, got none", "qa_pairs")
        answer_types = (str, dict) if task == "shortdep_cloze" else (str,)
        for j, qa in enumerate(pairs):
            q = _pair_field(row, j, qa, "Q", (str,))
            a = _pair_field(row, j, qa, "A", answer_types)
            s = _pair_field(row, j, qa, "S", (str, list), required=False)
            t = _pair_field(row, j, qa, "type", (str,), required=False)
            yield _Item(task, row, context, title, q, a, s, t, f"{doc_key}-{j:02d}", doc_key)
        return
    if row.has("context"):  # newer: one row per question
        context = row.field("context", str)
        question = row.field("question", str, "")
        if task != "longdep_summarization" and not question.strip():
            raise row.error(f"a {task} row needs a question", "question")
        answer = row.field("answer", (str, dict) if task == "shortdep_cloze" else (str,))
        evidence = row.field("evidence", (str, list, type(None)), None)
        if isinstance(evidence, list):
            evidence = row.str_list("evidence")
        title = row.field("title", str, "")
        qa_type = row.field("type", (str, type(None)), None)
        rid = row.data.get("id")
        local_id = str(rid) if rid not in (None, "") else f"{index:05d}"
        doc_key = str(row.data.get("doc_id") or title or hashlib.sha1(context.encode("utf-8")).hexdigest()[:12])
        yield _Item(task, row, context, title, question, answer, evidence, qa_type, local_id, doc_key)
        return
    raise row.error("has neither 'input' (one row per document) nor 'context' (one row per question); "
                    f"fields present: {', '.join(sorted(row.data))}")


def _task_of_file(path: Path) -> str | None:
    stem = path.name.split(".")[0]
    for task, names in TASK_FILES.items():
        if stem in names:
            return task
    return None


def _zip_members(archive: Path) -> dict[str, str]:
    """{file name: member} of the data files in a zip (the shallowest member of each name; no folders,
    no macOS resource forks)."""
    try:
        with zipfile.ZipFile(archive) as zf:
            names = [n for n in zf.namelist() if not n.endswith("/") and "__MACOSX" not in n]
    except (zipfile.BadZipFile, OSError) as exc:
        raise DataError(str(archive), None, f"not a readable zip archive ({exc})") from None
    members: dict[str, str] = {}
    for name in sorted(names, key=lambda n: (n.count("/"), n)):
        members.setdefault(name.rsplit("/", 1)[-1], name)
    return members


def _zip_rows(archive: Path, member: str) -> Iterator[Row]:
    """Rows of one member of a zip, JSON Lines or a JSON array (as `read_records`), streamed from the archive."""
    source = f"{archive}!{member}"
    with zipfile.ZipFile(archive) as zf, zf.open(member) as raw:
        assert isinstance(raw, zipfile.ZipExtFile)  # what ZipFile.open reads with (typeshed says IO[bytes])
        if raw.peek(64).lstrip(b"\xef\xbb\xbf \t\r\n")[:1] != b"[":
            yield from parse_jsonl(raw, source)
            return
        try:
            items = json.loads(decode_text(raw.read(), source))
        except (ValueError, RecursionError) as exc:
            raise DataError(source, getattr(exc, "lineno", None), f"malformed JSON: {exc}") from None
    for i, item in enumerate(items):
        with record_guard():
            if not isinstance(item, dict):
                raise DataError(source, i + 1,
                                f"item {i + 1} of the JSON array is {type(item).__name__}, not an object")
            yield Row(item, source, i + 1)


def _task_files(task: str) -> list[str]:
    return [f"{n}{ext}" for n in TASK_FILES[task] for ext in (".jsonl", ".json")]


def _zip_task_rows(archive: Path, tasks: list[str]) -> Iterator[tuple[str, Iterator[Row]]]:
    members = _zip_members(archive)
    for task in tasks:
        member = next((members[n] for n in _task_files(task) if n in members), None)
        if member is not None:
            yield task, _zip_rows(archive, member)


def _local_rows(path: Path, tasks: list[str]) -> Iterator[tuple[str, Iterator[Row]]]:
    if path.is_file() and path.suffix == ".zip":
        found = list(_zip_task_rows(path, tasks))
        if not found:
            raise DataError(str(path), None, "holds none of the task files " + ", ".join(f"{t}.json(l)" for t in tasks))
        yield from found
        return
    if path.is_file():
        task = _task_of_file(path)
        if task is None:
            raise DataError(str(path), None, "cannot tell the LooGLE task from the file name: name it "
                            + ", ".join(f"{t}.jsonl" for t in TASKS))
        if task in tasks:
            yield task, read_records(path)
        return
    if not path.is_dir():
        raise DataError(str(path), None, "no such file or folder (set benchmark.path to a local copy of LooGLE, "
                        "or benchmark.path=null to read the Hugging Face Hub)")
    # plain files first (an unpacked copy), then the Hub repository's data.zip; a snapshot's LooGLE.py,
    # README.md, parquet conversions and .cache/huggingface/ are never looked at
    archive = path / "data.zip"
    zipped = dict(_zip_task_rows(archive, tasks)) if archive.is_file() else {}
    found_any = False
    for task in tasks:
        names = _task_files(task)
        f = first_existing(path, names) or first_existing(path / "data", names)
        if f is not None:
            rows: Iterator[Row] = read_records(f)
        elif task in zipped:
            rows = zipped[task]
        else:
            continue
        found_any = True
        yield task, rows
    if not found_any:
        raise DataError(str(path), None, "holds none of the task files " + ", ".join(f"{t}.jsonl" for t in tasks)
                        + " (directly, under data/, or in data.zip)")


def _hub_rows(cfg: LoogleConfig, tasks: list[str]) -> Iterator[tuple[str, Iterator[Row]]]:
    for task in tasks:
        error: DataError | None = None
        for name in TASK_FILES[task]:
            try:
                rows = list(hub_records(cfg.hub_id, name, cfg.split, cfg.hub_revision))
            except DataError as exc:
                error = exc
                continue
            yield task, iter(rows)
            break
        else:
            assert error is not None
            raise error


# ---------------------------------------------------------------- samples
def build(cfg: LoogleConfig, tasks: list[str] | None = None) -> list[Sample]:
    if tasks:
        unknown = sorted(set(tasks) - set(TASKS))
        if unknown:
            raise ValueError(f"benchmark.tasks: unknown {unknown} for loogle; available: {list(TASKS)}")
    wanted = [t for t in TASKS if not tasks or t in tasks]
    if not 0.0 <= float(cfg.evidence_threshold) <= 1.0:
        raise ValueError(f"benchmark.evidence_threshold must be within [0, 1], got {cfg.evidence_threshold}")
    edges = [int(e) for e in cfg.level_edges]
    if edges != sorted(set(edges)) or not edges or edges[0] <= 0:
        raise ValueError(f"benchmark.level_edges must be increasing positive numbers, got {cfg.level_edges}")
    source = _local_rows(Path(cfg.path), wanted) if cfg.path else _hub_rows(cfg, wanted)
    indexes: dict[str, TokenIndex] = {}
    lengths: dict[str, int] = {}
    samples: list[Sample] = []
    seen: set[str] = set()
    for task, rows in source:
        for i, row in enumerate(rows):
            with record_guard():  # a bad row is skipped whole (all its questions) under skip_bad
                built = [_sample(item, cfg, edges, indexes, lengths, seen) for item in _items_of_row(task, row, i)]
                samples.extend(built)
    return consecutive_groups(samples)


def _with_repeats(context: str, spans: list[Alignment]) -> list[Span]:
    """Evidence spans; a piece found verbatim more than once becomes one any-of group (`Span.alt`):
    the evidence is present when any of its copies is."""
    out: list[Span] = []
    for k, a in enumerate(spans):
        copies = []
        if a.method == "exact":
            text, at = context[a.start:a.end], context.find(context[a.start:a.end])
            while at != -1:
                copies.append((at, at + len(text)))
                at = context.find(text, at + len(text))
        if len(copies) > 1:
            out += [Span(x, y, None, a.quality, alt=f"S{k}") for x, y in copies]
        else:
            out.append(Span(a.start, a.end, None, a.quality))
    return out


def _sample(item: _Item, cfg: LoogleConfig, edges: list[int], indexes: dict[str, TokenIndex],
            lengths: dict[str, int], seen: set[str]) -> Sample:
    task, row = item.task, item.row
    digest = hashlib.sha1(item.context.encode("utf-8")).hexdigest()[:16]
    if digest not in lengths:
        lengths[digest] = approx_tokens(item.context)
    try:
        ref = loogle_reference(task, {"answer": item.answer, "question": item.question})
    except ValueError as exc:
        raise row.error(str(exc), "A" if row.has("qa_pairs") else "answer") from exc
    evidence: list[Span] = []
    meta: dict[str, Any] = {"title": item.title, "doc": item.doc_key, "approx_tokens": lengths[digest],
                            "source": f"{row.source}:{row.line}"}
    if item.qa_type:
        meta["qa_type"] = item.qa_type
    if task in ("shortdep_qa", "longdep_qa") and item.evidence:
        if digest not in indexes:
            indexes.clear()  # questions of one document come together: keep one index
            indexes[digest] = TokenIndex(item.context)
        spans, counts = align_evidence(evidence_pieces(item.evidence), indexes[digest], cfg.evidence_threshold)
        evidence = _with_repeats(item.context, spans)
        meta["evidence_alignment"] = counts
    sid = f"loogle-{task}-{item.local_id}"
    if sid in seen:
        raise row.error(f"duplicate sample id {sid!r}", "id")
    seen.add(sid)
    doc_id = item.title or item.doc_key
    return Sample(
        id=sid, benchmark="loogle", task=task, language="en",
        length_level=length_level(lengths[digest], edges), context=item.context, question=item.question,
        answers=ref.answers, template=TEMPLATES[task], metric=loogle_metric(task), evidence=evidence,
        documents=[Document(doc_id=doc_id, start=0, end=len(item.context), title=item.title)],
        group="loogle/" + digest, metadata=meta, reference_extra=ref.extra,
    )


class LooGLEBenchmark(Benchmark):
    """loogle: see the module docstring."""

    name = "loogle"
    official_aggregate = staticmethod(loogle_official)  # cloze: micro average over masks

    @classmethod
    def rescoring(cls, task: str, options: Any) -> Rescoring:
        """The automatic metric of the task, or the LLM judge with `--judge`; cloze answers may be given as a
        mapping; BERTScore beside the automatic metrics where a model is configured (`--bertscore-model`)."""
        variant, metric = options.variant, loogle_metric(task, judge=options.judge)
        model = bertscore_model(getattr(options, "bertscore_model", None))
        return Rescoring(metric, lambda rec: loogle_reference(task, rec, variant), as_text=cloze_as_text,
                         extra=bertscore_values(model) if model and metric == "loogle_auto" else None,
                         summary=partial(rescoring_summary, metric, model is not None))
    tasks = TASKS
    levels = tuple(level_names(DEFAULT_EDGES))  # the default buckets; `benchmark.level_edges` may set others
    evidence = "spans"
    truncation = "middle"
    templates = TEMPLATES

    def load(self, cfg: dict) -> LoadResult:
        """The `benchmark=loogle` config group -> samples."""
        fields = LoogleConfig.__dataclass_fields__
        check_keys("loogle", cfg, fields)
        opts = {k: v for k, v in cfg.items() if k in fields}
        if opts.get("level_edges") is not None:
            opts["level_edges"] = tuple(opts["level_edges"])
        elif "level_edges" in opts:
            del opts["level_edges"]
        config = LoogleConfig(**opts)
        levels = as_list(cfg.get("levels"))
        known = level_names(config.level_edges)
        if levels and set(levels) - set(known):
            raise ValueError(f"benchmark.levels: unknown {sorted(set(levels) - set(known))} for loogle; "
                             f"available: {known}")
        samples = build(config, as_list(cfg.get("tasks")))
        stats = evidence_stats(samples)
        if any(stats.values()):
            log.info("LooGLE evidence: %d exact, %d token-exact, %d fuzzy (>= %.2f), %d dropped below",
                     stats["exact"], stats["tokens"], stats["fuzzy"], float(opts.get("evidence_threshold", 0.8)),
                     stats["dropped"])
        return LoadResult(samples)
