"""Loong (MozerWang/Loong, Apache-2.0): extended multi-document QA over financial reports, legal
cases and papers, English and Chinese, 10K to 250K+ tokens.

Data layout (the official one: `data/loong.jsonl` plus `doc.zip` unpacked into `data/doc/`):

    <path>/loong.jsonl
    <path>/doc/financial/*.txt   <path>/doc/paper/*.md   <path>/doc/legal/legal.json

`path` may also be the JSONL file itself, with `doc_path` naming the document folder. Loong is
distributed through GitHub and a download link (ModelScope `iic/Loong`), not the Hugging Face Hub,
so only local copies are read.

Each item's context is built as the released `src/utils/prompt.py` (`get_content`,
`get_doc_str`) builds it:

- financial: the file matching `*2024-{name}*.txt` (level 1-3) or `*{name}*.txt` (level 4, any
  year), headed `《{last '-' part of the file stem}》`; the released code takes `glob(...)[0]`,
  which is file-system order when several files match; here matches are sorted and a file whose
  name part equals the document name exactly is preferred (the few ambiguous names are counted in
  `metadata['ambiguous_files']`);
- paper: `doc/paper/{name}`, headed by its first line without `#`;
- legal: `legal.json[name]['content']` (+ `['result']` except for level-4 items whose instruction
  asks for the judgments), headed `《判决文书{i}》`;
- each document followed by a blank line; the context is the documents joined.

Document order (`shuffle: official`): the released step 1 seeds Python's global RNG with
1000000007 and walks the file in order: for a `shuffle_doc` item it shuffles a financial item's
documents once, drops those that overflow `--max_length`, then shuffles the kept ones (every
type). Here the same RNG walk runs over every item of the file (filtered or skipped ones
included, so a selection never changes an item's order) assuming every document fits. That
reproduces the released order exactly when `--max_length` holds every item (with
`--max_length 128000` the released code also drops documents of long items, which changes the
RNG stream from then on). `shuffle: none` keeps the documents in the item's listed order.

Truncation is left to the long-context arm (`drop_documents`, longctx/truncation.py) and follows
the released order of steps (shuffle, drop, shuffle): it walks the documents in the order of the
first shuffle (`metadata['drop_order']`), skips every one that would overflow and keeps later ones
that fit, then shuffles the kept ones with the RNG in the state the released second shuffle
starts from (`metadata['second_shuffle']`: seed and 32-bit words drawn before it). When nothing
is dropped this is the load-time order.

Samples: task from `level` (1 spotlight_locating, 2 comparison, 3 clustering, 4
chain_of_reasoning), length level from `set` (`10k-50k`, `50k-100k`, `100k-200k`, `200k+`), the
item's own `prompt_template` with `{instruction}` filled, `{docs}` -> `{context}` and `{question}`
kept (other braces literal, as the released `str.replace` leaves them). Evidence is document
level: one `Span(doc_id=...)` per document of the item; a spotlight-locating item whose question
(or else answer) names exactly one of its documents gets that document alone. Items whose
documents are missing are skipped and counted (one warning line for all of them).

Metric: `loong_judge` (GPT-4 judge, 1-100) with the question the released judge sees.

Longer than most modules on purpose: everything about one benchmark, including the released
step-1 document assembly (shuffle, drop, shuffle) that must be reproduced step for step.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval.benchmarks.base import Benchmark, LoadResult, Rescoring
from eval.benchmarks.common import as_list, check_keys, consecutive_groups
from eval.data_files import DataError, Row, decode_text, inside, read_records, record_guard
from eval.metrics.judge import loong_reference
from eval.replay import CountingRandom
from eval.sample import Document, PromptTemplate, Sample, Span

log = logging.getLogger(__name__)

TASK_OF_LEVEL = {1: "spotlight_locating", 2: "comparison", 3: "clustering", 4: "chain_of_reasoning"}  # released `level`
LEVEL_OF_SET = {1: "10k-50k", 2: "50k-100k", 3: "100k-200k", 4: "200k+"}  # the paper's Set1..Set4
TASKS = tuple(TASK_OF_LEVEL.values())
LEVELS = tuple(LEVEL_OF_SET.values())
DOMAINS = ("financial", "paper", "legal")
OFFICIAL_SEED = 1000000007  # src/utils/args.py --seed
SOURCE = "MozerWang/Loong src/utils/prompt.py (get_generate_prompt) and data/loong.jsonl prompt_template"
# The instruction of level-4 legal items that ask for the judgments: their documents omit the result.
_LEGAL_RESULT_HIDDEN = "阅读以上判决文书，我将给你若干份判决结果："
_PLACEHOLDERS = ("{docs}", "{question}", "{instruction}", "{context}")


@dataclass
class LoongConfig:
    path: str = "../shared/data/loong"
    doc_path: str | None = None
    domains: list[str] | None = None
    languages: list[str] | None = None
    shuffle: str = "official"
    seed: int = OFFICIAL_SEED
    max_new_tokens: int = 1024
    truncation: str = "drop_documents"


class _MissingDocument(Exception):
    pass


@dataclass
class _Docs:
    """Reads document files once; caches contents and file matches."""

    root: Path
    files: dict[str, list[str]] = field(default_factory=dict)  # type -> sorted file names
    text: dict[Path, str] = field(default_factory=dict)
    matches: dict[tuple[str, bool], tuple[str, int]] = field(default_factory=dict)
    legal: dict[str, Any] | None = None
    legal_error: str | None = None

    def listing(self, doc_type: str) -> list[str]:
        if doc_type not in self.files:
            folder = self.root / doc_type
            try:
                self.files[doc_type] = sorted(n for n in os.listdir(folder) if not n.startswith("."))
            except OSError:
                self.files[doc_type] = []
        return self.files[doc_type]

    def read(self, path: Path) -> str:
        if path not in self.text:
            try:
                self.text[path] = decode_text(path.read_bytes(), str(path))
            except FileNotFoundError as exc:
                raise _MissingDocument(str(path)) from exc
        return self.text[path]

    def financial_file(self, name: str, level: int, row: Row) -> tuple[Path, int]:
        """The file of company `name` as the released glob finds it, and how many files matched."""
        if "/" in name or (os.altsep and os.altsep in name) or name in ("", ".", ".."):
            raise row.error(f"document name {name!r} cannot be a file name pattern inside the document folder", "doc")
        any_year = level == 4
        key = (name, any_year)
        if key not in self.matches:
            pattern = f"*{name}*.txt" if any_year else f"*2024-{name}*.txt"
            found = [n for n in self.listing("financial") if fnmatch.fnmatchcase(n, pattern)]
            if not found:
                raise _MissingDocument(f"{self.root / 'financial' / pattern}")
            exact = [n for n in found if _company_part(n) == name]
            self.matches[key] = ((exact or found)[0], len(found))
        fname, n = self.matches[key]
        return inside(self.root / "financial", fname, row, "doc"), n

    def legal_docs(self) -> dict[str, Any]:
        if self.legal is None:
            path = self.root / "legal" / "legal.json"
            try:
                data = json.loads(decode_text(path.read_bytes(), str(path)))
            except FileNotFoundError as exc:
                raise _MissingDocument(str(path)) from exc
            except json.JSONDecodeError as exc:
                raise DataError(str(path), exc.lineno, f"malformed JSON: {exc.msg}") from exc
            if not isinstance(data, dict):
                raise DataError(str(path), None, f"must map document names to documents, got {type(data).__name__}")
            self.legal = data
        return self.legal


def _company_part(file_name: str) -> str:
    """'2024-ACME, Inc.-j.txt' -> 'ACME, Inc.' (year prefix and source suffix removed)."""
    stem = Path(file_name).stem
    stem = re.sub(r"^(?:report_\d+-)?\d{4}-", "", stem)
    return stem.rsplit("-", 1)[0] if re.search(r"-[a-z]$", stem) else stem


def _document(docs: _Docs, row: Row, doc_type: str, level: int, instruction: str, name: str,
              idx: int) -> tuple[str, str, dict]:
    """(text as the released get_content builds it, its header title, extra metadata)."""
    if doc_type == "financial":
        path, n = docs.financial_file(name, level, row)
        title = path.stem.split("-")[-1]
        return f"《{title}》\n" + docs.read(path) + "\n\n", title, {"file": path.name, "matches": n}
    if doc_type == "paper":
        path = inside(docs.root / "paper", name, row, "doc")
        content = docs.read(path)
        title = content.split("\n", 1)[0].strip("#").strip()
        return f"{title}\n" + content + "\n\n", title, {"file": path.name}
    legal = docs.legal_docs()
    entry = legal.get(name)
    if entry is None:
        raise _MissingDocument(f"{docs.root / 'legal' / 'legal.json'}[{name!r}]")
    if not isinstance(entry, dict) or not isinstance(entry.get("content"), str):
        raise DataError(str(docs.root / "legal" / "legal.json"), None, f"document {name!r} needs text 'content'")
    content = entry["content"]
    if not (level == 4 and _LEGAL_RESULT_HIDDEN in instruction):
        content = content + str(entry.get("result", ""))
    title = f"判决文书{idx + 1}"
    return f"《{title}》\n" + content + "\n\n", title, {}


def _template(row: Row, prompt_template: str, instruction: str, max_new_tokens: int, truncation: str) -> PromptTemplate:
    for ph in _PLACEHOLDERS:
        if ph in instruction:
            raise row.error(f"contains the placeholder {ph}, which the prompt template would expand", "instruction")
    if prompt_template.count("{docs}") != 1:
        raise row.error("must contain {docs} exactly once", "prompt_template")
    if "{context}" in prompt_template or prompt_template.count("{question}") > 1:
        raise row.error("may contain {question} at most once and no {context}", "prompt_template")
    text = prompt_template.replace("{instruction}", instruction).replace("{docs}", "{context}")
    return PromptTemplate(text=text, max_new_tokens=max_new_tokens, truncation=truncation, system=None, source=SOURCE)


def _mentions(text: str, name: str) -> bool:
    """`name` occurs in `text`, not inside a longer run of ASCII letters/digits."""
    start = 0
    while (i := text.find(name, start)) >= 0:
        before = text[i - 1] if i else ""
        after = text[i + len(name)] if i + len(name) < len(text) else ""
        if not (name[0].isascii() and name[0].isalnum() and before.isascii() and before.isalnum()) and \
           not (name[-1].isascii() and name[-1].isalnum() and after.isascii() and after.isalnum()):
            return True
        start = i + 1
    return False


def spotlight_document(names: list[str], question: str, answer: Any) -> str | None:
    """The one document a spotlight-locating item is about: named by the question, else the answer."""
    for text in (question, answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)):
        named = [n for n in dict.fromkeys(names) if n and _mentions(text, n)]
        named = [n for n in named if not any(n != o and n in o for o in named)]  # 'C' inside 'CLEARONE INC'
        if len(named) == 1:
            return named[0]
        if named:
            return None
    return None


def _order(rng: CountingRandom | None, n: int, doc_type: str, shuffle: bool) -> tuple[list[int], list[int], int | None]:
    """(the order truncation walks: after the first shuffle, the final order when everything fits,
    the RNG's words drawn before the second shuffle; None without one)."""
    order = list(range(n))
    if rng is None or not shuffle:
        return order, order, None
    if doc_type == "financial":
        rng.shuffle(order)  # get_doc_str shuffles the contents of a financial item first
    first, words = list(order), rng.words
    rng.shuffle(order)  # then the kept documents of every item
    return first, order, words


def _locate(path: Path, doc_path: str | None) -> tuple[Path, Path]:
    if path.is_dir():
        jsonl = path / "loong.jsonl"
        if not jsonl.is_file():
            raise DataError(str(path), None, "no loong.jsonl in this folder (expected the official data/ layout: "
                            "loong.jsonl and doc/ unpacked from doc.zip)")
        docs = Path(doc_path) if doc_path else path / "doc"
    elif path.is_file():
        jsonl = path
        docs = Path(doc_path) if doc_path else path.parent / "doc"
    else:
        raise DataError(str(path), None, "no such file or folder. Loong is read from a local copy of the official "
                        "data (git clone MozerWang/Loong; unzip doc.zip into data/): set benchmark.path or LOONG_PATH")
    if not docs.is_dir():
        raise DataError(str(docs), None, "document folder not found (set benchmark.doc_path)")
    return jsonl, docs


def _check_names(key: str, values: list[str] | None, known: list[str]) -> None:
    if values:
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise ValueError(f"benchmark.{key}: unknown {unknown} for loong; available: {known}")


def build(cfg: LoongConfig, tasks: list[str] | None = None,
          levels: list[str] | None = None) -> tuple[list[Sample], dict[str, int]]:
    """Samples of the selected items, and {skip reason: count}."""
    if cfg.shuffle not in ("official", "none"):
        raise ValueError(f"benchmark.shuffle={cfg.shuffle!r}; allowed: official, none")
    _check_names("tasks", tasks, list(TASKS))
    _check_names("levels", levels, list(LEVELS))
    _check_names("domains", cfg.domains, list(DOMAINS))
    jsonl, doc_root = _locate(Path(cfg.path), cfg.doc_path)
    docs = _Docs(doc_root)
    rng = CountingRandom(cfg.seed) if cfg.shuffle == "official" else None
    samples: list[Sample] = []
    missing: dict[str, int] = {}
    missing_examples: list[str] = []
    seen_ids: set[str] = set()
    for row in read_records(jsonl):
        with record_guard():
            item = _item(row, rng)  # the RNG walks every item, selected or not
            if not _selected(item, cfg, tasks, levels):
                continue
            try:
                samples.append(_sample(row, item, docs, cfg, seen_ids))
            except _MissingDocument as exc:
                missing[item.doc_type] = missing.get(item.doc_type, 0) + 1
                if str(exc) not in missing_examples:
                    missing_examples.append(str(exc))
    return consecutive_groups(samples), _skipped(missing, missing_examples, len(samples))


@dataclass
class _Item:
    """What an item's line says before it is selected: where it sits, and its documents' order."""

    level: int
    set_: int
    doc_type: str
    names: list[str]
    shuffle: bool
    first_order: list[int]
    order: list[int]
    words: Any
    language: str


def _item(row, rng) -> _Item:
    level = row.field("level", int)
    if level not in TASK_OF_LEVEL:
        raise row.error(f"must be one of {sorted(TASK_OF_LEVEL)}, got {level}", "level")
    set_ = row.field("set", int)
    if set_ not in LEVEL_OF_SET:
        raise row.error(f"must be one of {sorted(LEVEL_OF_SET)}, got {set_}", "set")
    doc_type = row.field("type", str)
    if doc_type not in DOMAINS:
        raise row.error(f"must be one of {list(DOMAINS)}, got {doc_type!r}", "type")
    names = row.str_list("doc")
    shuffle = row.field("shuffle_doc", bool, True)
    first_order, order, words = _order(rng, len(names), doc_type, shuffle)
    return _Item(level, set_, doc_type, names, shuffle, first_order, order, words, row.field("language", str))


def _selected(item: _Item, cfg: LoongConfig, tasks: list[str] | None, levels: list[str] | None) -> bool:
    return not ((tasks and TASK_OF_LEVEL[item.level] not in tasks) or
                (levels and LEVEL_OF_SET[item.set_] not in levels) or
                (cfg.domains and item.doc_type not in cfg.domains) or
                (cfg.languages and item.language not in cfg.languages))


def _sample(row, item: _Item, docs: _Docs, cfg: LoongConfig, seen_ids: set[str]) -> Sample:
    """The sample of a selected item (`_MissingDocument` when one of its documents is not there)."""
    item_id = row.field("id", str)
    if item_id in seen_ids:
        raise row.error(f"duplicate id {item_id!r}", "id")
    seen_ids.add(item_id)
    question = row.field("question", str)
    instruction = row.field("instruction", str)
    prompt_template = row.field("prompt_template", str)
    answer = row.field("answer", (str, list, dict))
    if not item.names:
        raise row.error("lists no documents", "doc")
    template = _template(row, prompt_template, instruction, cfg.max_new_tokens, cfg.truncation)
    built = [_document(docs, row, item.doc_type, item.level, instruction, n, i) for i, n in enumerate(item.names)]
    ids = _unique_ids(item.names)
    context, documents = _joined(built, item.order, ids)
    gold = spotlight_document(item.names, question, answer) if item.level == 1 else None
    evidence_names = [ids[item.names.index(gold)]] if gold is not None else list(ids)
    ref = loong_reference(row.data)
    meta = _metadata(row, item, item_id, ids, built, cfg.seed, gold is not None)
    if not question.strip():
        meta["retrieval_query"] = instruction  # the question is empty: the instruction asks it
    return Sample(
        id=f"loong-{item_id}", benchmark="loong", task=TASK_OF_LEVEL[item.level], language=item.language,
        length_level=LEVEL_OF_SET[item.set_], context=context, question=question, answers=ref.answers,
        template=template, metric="loong_judge",
        evidence=[Span(doc_id=d) for d in evidence_names],
        documents=documents, group="loong/" + hashlib.sha1(context.encode("utf-8")).hexdigest()[:16],
        metadata=meta, reference_extra=ref.extra,
    )


def _joined(built: list, order: list[int], ids: list[str]) -> tuple[str, list[Document]]:
    """The context (the documents in `order`) and where each document sits in it."""
    pieces, documents, offset = [], [], 0
    for i in order:
        text, title, _ = built[i]
        header = text[: text.index("\n") + 1]  # 《title》 (or the paper's title line), as the context shows it
        documents.append(Document(doc_id=ids[i], start=offset, end=offset + len(text) - 2, title=title,
                                  header=header))
        pieces.append(text)
        offset += len(text)
    return "".join(pieces), documents


def _metadata(row, item: _Item, item_id: str, ids: list[str], built: list, seed: int, named_gold: bool
              ) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "id": item_id, "type": item.doc_type, "level": item.level, "set": item.set_,
        "length": row.field("length", int, None), "docs": item.names, "doc_order": [ids[i] for i in item.order],
        "shuffle_doc": item.shuffle,
        # for `drop_documents`: drop in this order, then re-run the second shuffle on what is kept
        "drop_order": [ids[i] for i in item.first_order],
        "second_shuffle": None if item.words is None else {"seed": seed, "words": item.words},
        "evidence_kind": "named_document" if named_gold else "all_documents",
        "source": f"{row.source}:{row.line}",
    }
    if item.doc_type == "financial":
        ambiguous = {item.names[i]: b[2]["matches"] for i, b in enumerate(built) if b[2]["matches"] > 1}
        if ambiguous:
            meta["ambiguous_files"] = ambiguous
        meta["files"] = [b[2]["file"] for b in built]
    return meta


def _skipped(missing: dict[str, int], missing_examples: list[str], n_loaded: int) -> dict[str, int]:
    """{skip reason: count}, with one warning naming what was missing."""
    skipped = {}
    n_missing = sum(missing.values())
    if n_missing:
        skipped["missing documents"] = n_missing
        by_type = ", ".join(f"{t}: {n}" for t, n in sorted(missing.items()))
        more = f" (+{len(missing_examples) - 3} more)" if len(missing_examples) > 3 else ""
        log.warning("Loong: skipped %d items whose documents are missing (%s), e.g. %s%s; loaded the other %d",
                    n_missing, by_type, "; ".join(missing_examples[:3]), more, n_loaded)
    return skipped


def _unique_ids(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for n in names:
        seen[n] = seen.get(n, 0) + 1
        out.append(n if seen[n] == 1 else f"{n}#{seen[n]}")
    return out


class LoongBenchmark(Benchmark):
    """loong: see the module docstring."""

    name = "loong"
    tasks = TASKS

    @classmethod
    def rescoring(cls, task: str, options: Any) -> Rescoring:
        """Loong is scored by its LLM judge (the command builds it)."""
        return Rescoring("loong_judge", loong_reference)
    levels = LEVELS
    evidence = "documents"
    multi_document = True  # each context joins several documents (RAG chunks carry their titles: rag.doc_titles)
    truncation = "drop_documents"
    templates = {}  # built per item from its released `prompt_template` and `instruction`

    def load(self, cfg: dict) -> LoadResult:
        """The `benchmark=loong` config group -> samples (missing documents are skipped and counted)."""
        fields = LoongConfig.__dataclass_fields__
        check_keys("loong", cfg, fields)
        if "path" in cfg and not cfg["path"]:
            raise ValueError("benchmark.path: Loong is read from a local copy only (loong.jsonl and doc/); got none")
        opts = {k: v for k, v in cfg.items() if k in fields and v is not None}
        for key in ("domains", "languages"):
            if key in opts:
                opts[key] = as_list(opts[key])
        samples, skipped = build(LoongConfig(**opts), as_list(cfg.get("tasks")), as_list(cfg.get("levels")))
        return LoadResult(samples, skipped)
