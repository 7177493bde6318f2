"""Questions generated from a team's own documents, where it has none: a questions file for `benchmark=corpus`.

    python -m testset.generate --docs DIR --out questions.jsonl [--generator smollm2|openai|vllm|FILE.yaml]
        [--set base_url=http://host:8000/v1 --set model=NAME] [--n 100] [--seed 0]
        [--types locate,compare,reason,unanswerable] [--drop-closed-book] [--yes]

The generator is its own setting (`--generator`: a `conf/generator/` name or a YAML file of the same keys,
`--set KEY=VALUE` to change one), apart from the model that answers and the judge: use a strong model here
and, where you can, one of another family than the answerer.

**What is asked.** Passages are sampled, seeded, across the documents (round robin over a shuffled order) and
across depths (the start, middle and end third of each document, in turn), and snapped to sentence
boundaries. Question types are mixed in equal shares, as LaRA does, so the set does not favour one arm by
construction (a question written from one chunk favours RAG):

- `locate`: a fact stated in one passage;
- `compare`: a question that needs two passages of one document (from different depths);
- `reason`: why / how / what follows, an inference over one passage;
- `unanswerable`: a natural question about an entity named in the document, asking for something the
  document does not state (reference answer `unanswerable`, 无法回答 in Chinese; no evidence).

The generator is asked for one JSON object only (`{"question", "answer", "quote"}`; for `compare` a list of
two quotes; for `unanswerable` `{"question", "entity", "guess"}`), shown a worked example first. A reply is
read with `json`: the first `{...}` object in it, whatever precedes it; free text is never read as a question
(a preamble such as "Sure, here are some questions:" gives no item, only a `not_json` drop).

**What is kept.** An item is kept only when, checked in this order (the first failure is its drop reason):
the reply holds a JSON object (`not_json`) with a question (`bad_fields`) that is not the prompt's worked
example (`copied_example`); the question is in the document's language
(`wrong_language`, `eval.benchmarks.corpus.language_of`); it has 3 words or more and the other fields are
text (`bad_fields`); every quote aligns to the document within `NEAR_CHARS` of its passage with quality
>= 0.8 (`quote_not_found`, `eval.align`), and a compare item's quotes cover both passages
(`compare_one_passage`); the answer is in the aligned quote (`answer_not_in_quote`, the SQuAD / Chinese
normalisation of `eval.metrics.text`) and, but for compare items ("which is older, A or B?"), not in the
question (`answer_in_question`); an unanswerable item's entity is in the question and the document
(`unanswerable_off_document`) and no content word of its guessed answer is in the document
(`unanswerable_answer_in_document`); it is not a near-duplicate of a kept question (`duplicate`: token
Jaccard >= 0.7; an item still waiting for its closed-book check counts as kept here); with
`--drop-closed-book`, the generator asked the question without any document does not give the reference
answer (`answerable_closed_book`; unanswerable items are not asked). The evidence written is the document's
own text at the aligned span, so `benchmark=corpus` aligns it exactly.

**What is written.** `OUT` (JSONL, the corpus questions format: `id`, `question`, `answers`, `documents`,
`evidence`, `task` (= `type`), plus `type`, `language`, `lexical_overlap` and its `overlap_bucket`
(`eval.lexical_overlap`: against the evidence, or the passage for unanswerable items) and `provenance`
(`generator`, `backend`, `prompt_hash`, `seed`, `source` {document, start, end, depth}, `passages`, the
generator's own `quote`)); `OUT` with `.csv`: the same items for a person to review, with an empty `approve`
column (the corpus benchmark reads this CSV too); `OUT` with `.summary.json`: kept / dropped by reason, by
type, overlap buckets, calls and time. The counts are printed as well.

**Resuming.** Replies are kept in the response cache (`<cache-dir>/responses.sqlite`, as the runner's), and
kept items are appended to `OUT` one by one. An interrupted run keeps what it wrote (it loses at most the
replies of the batch in flight, `--batch`); the same command again replays the cached replies (no call is asked
twice) and asks only for the rest. The number of calls is
estimated and printed first, with how many are cached; on a terminal it asks to go on unless `--yes`.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import importlib
import json
import logging
import math
import os
import random
import re
import sys
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

from eval.align import TokenIndex, align
from eval.benchmarks.corpus import language_of
from eval.corpus.documents import ParsedDocument, read_folder
from eval.lexical_overlap import BUCKETS, lexical_overlap, overlap_bucket
from eval.metrics.text import normalize_en, normalize_zh, tokens

log = logging.getLogger(__name__)

TYPES = ("locate", "compare", "reason", "unanswerable")
DEPTHS = ("start", "middle", "end")
REASONS = {
    "not_json": "no JSON object in the reply",
    "copied_example": "the question is the prompt's worked example",
    "bad_fields": "the JSON lacks a question, answer or quote, or they are not text",
    "wrong_language": "the question is not in the document's language",
    "quote_not_found": "a quote does not align (quality < 0.8) near its passage",
    "compare_one_passage": "the quotes of a compare question do not cover both passages",
    "answer_not_in_quote": "the answer is not in the quote",
    "answer_in_question": "the question gives its answer away",
    "unanswerable_off_document": "the entity of an unanswerable question is not in the question and the document",
    "unanswerable_answer_in_document": "words of an unanswerable question's guessed answer are in the document",
    "duplicate": "a near-duplicate of a kept question",
    "answerable_closed_book": "the generator answers it without the document",
}
UNANSWERABLE = {"en": "unanswerable", "zh": "无法回答"}
QUALITY = 0.8  # the corpus benchmark's evidence_threshold
NEAR_CHARS = 200  # a quote may align this far outside its passage
DUPLICATE_JACCARD = 0.7
MIN_QUESTION_TOKENS = 3
PASSAGE_CHARS = 1000
MAX_NEW_TOKENS = 160
CLOSED_BOOK_TOKENS = 32
LOCAL_BATCH = 16  # requests per batch for a backend without max_concurrency (local: one prefill, batched decoding)
CONF = Path(__file__).resolve().parents[1] / "conf" / "generator"
# eval/ imports nothing above it: the generator is built by llm/, named here and resolved at run time
GENERATOR_FACTORY = "llm.factory:build_generator"
PROMPT_CLASS = "llm.prompt:Prompt"
RESPONSE_KEY = "llm.cache:response_key"


__all__ = ["Checker", "GeneratorFailed", "REASONS", "TYPES", "Task", "first_json_object", "generator_config",
           "main", "plan", "run", "task_prompt"]


class GeneratorFailed(RuntimeError):
    """A generator call failed; what was kept so far stays written."""


# -- planning ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Passage:
    document: str
    start: int
    end: int
    depth: str

    def span(self) -> dict[str, Any]:
        return {"document": self.document, "start": self.start, "end": self.end, "depth": self.depth}


@dataclass(frozen=True)
class Task:
    index: int
    type: str
    passages: tuple[Passage, ...]

    @property
    def document(self) -> str:
        return self.passages[0].document


# a paragraph break, a sentence end followed by space, a sentence end glued to the next capital
# ("unbuilt.Picardo", as extracted text often is), or a Chinese sentence end
_BOUNDARY = re.compile(r"\n\s*|(?<=[.!?])[\"'”’)]*\s+|(?<=[a-z][.!?])(?=[A-Z])|(?<=[。！？；])")
SNAP_CHARS = 400  # how far a passage's start moves to reach a sentence start
RETRIES = 10  # draws of a passage not planned before


def _snap(text: str, at: int, limit: int) -> int:
    """The first sentence or paragraph boundary at or after `at` (before `limit`), else `at`: passages start
    where a sentence does."""
    if at <= 0:
        return 0
    m = _BOUNDARY.search(text, at, min(len(text), limit))
    return m.end() if m else at


def _snap_back(text: str, end: int, floor: int) -> int:
    """The last sentence or paragraph end in [floor, end), else `end`: passages end where a sentence does."""
    if end >= len(text):
        return len(text)
    best = None
    for m in _BOUNDARY.finditer(text, floor, end):
        best = m.start() + len(m.group().rstrip())
    return best if best is not None and best > floor else end


def _window(doc: ParsedDocument, lo: int, hi: int, size: int, rng: random.Random, depth: str) -> Passage:
    """A passage of about `size` chars beginning at a random sentence start in [lo, hi)."""
    text = doc.text
    at = rng.randint(lo, hi - size) if hi - size > lo else lo
    start = min(_snap(text, at, at + SNAP_CHARS), len(text) - 1)
    end = _snap_back(text, min(len(text), start + size), start + size // 2)
    return Passage(doc.doc_id, start, max(end, start + 1), depth)


def _band(doc: ParsedDocument, depth: str, size: int) -> tuple[int, int]:
    n = len(doc.text)
    b = DEPTHS.index(depth)
    return (n * b) // 3, max((n * (b + 1)) // 3, min(n, (n * b) // 3 + size))


def _passage(doc: ParsedDocument, depth: str, size: int, rng: random.Random) -> Passage:
    if len(doc.text) <= size:
        return Passage(doc.doc_id, 0, len(doc.text), depth)
    lo, hi = _band(doc, depth, size)
    return _window(doc, lo, hi, size, rng, depth)


def _two_passages(doc: ParsedDocument, depth: str, size: int, rng: random.Random) -> tuple[Passage, Passage]:
    """Two passages of one document from different depths (its two halves when it is short)."""
    n = len(doc.text)
    if n < 2 * size:
        mid = _snap(doc.text, n // 2, n)
        mid = mid if 0 < mid < n else n // 2
        if mid == 0:  # a one-character document: no two passages to show
            whole = Passage(doc.doc_id, 0, n, "start")
            return whole, whole
        return Passage(doc.doc_id, 0, mid, "start"), Passage(doc.doc_id, mid, n, "end")
    other = rng.choice([d for d in DEPTHS if d != depth])
    first, second = sorted((depth, other), key=DEPTHS.index)
    a = _passage(doc, first, size, rng)
    b = _passage(doc, second, size, rng)
    if b.start < a.end:  # bands of a short document may touch: the second starts after the first
        b = Passage(doc.doc_id, a.end, max(a.end + 1, min(n, a.end + size)), second)
    return a, b


def plan(docs: list[ParsedDocument], n: int, types: Iterable[str], seed: int,
         passage_chars: int = PASSAGE_CHARS) -> list[Task]:
    """`n` tasks, seeded: documents in turn (a shuffled order), depths in turn within each document (from a
    random first depth per document), types mixed in equal shares in a shuffled order; a passage is not planned
    twice unless its document has no other left."""
    rng = random.Random(f"generate_questions/{seed}")
    types = list(types)
    order = sorted(docs, key=lambda d: d.doc_id)
    rng.shuffle(order)
    mix = (types * math.ceil(n / len(types)))[:n]
    rng.shuffle(mix)
    first_depth = {d.doc_id: rng.randrange(len(DEPTHS)) for d in order}
    seen: dict[str, int] = {}
    used: set[Passage] = set()
    tasks = []
    for i in range(n):
        doc = order[i % len(order)]
        k = seen.get(doc.doc_id, 0)
        seen[doc.doc_id] = k + 1
        depth = DEPTHS[(first_depth[doc.doc_id] + k) % len(DEPTHS)]
        kind = mix[i]
        for _ in range(RETRIES):  # a passage already planned is drawn again (a short document may run out)
            passages = _two_passages(doc, depth, passage_chars * 7 // 10, rng) if kind == "compare" \
                else (_passage(doc, depth, passage_chars, rng),)
            if not used.intersection(passages):
                break
        used.update(passages)
        tasks.append(Task(i, kind, passages))
    return tasks


# -- prompts -------------------------------------------------------------------------------------------
REPLY_ONLY = {"en": "You reply with one JSON object and nothing else: no preamble, no explanation.",
              "zh": "你只回复一个 JSON 对象，不要任何开场白或解释。"}
ASK = {
    "en": {
        "locate": "Write one question that the text answers, its short answer (a few words copied from the text), "
                  "and the sentence of the text that contains the answer, copied word for word.",
        "reason": "Write one question that asks why or how something in the text happens, or what follows from it, "
                  "so that answering takes a step of reasoning. Give its short answer (a few words copied from the "
                  "text) and the sentence of the text that contains the answer, copied word for word.",
        "compare": "Write one question that needs both texts to answer: it compares or combines a fact of text 1 "
                   "with a fact of text 2. Give its short answer (a few words copied from the texts) and, copied "
                   "word for word, one sentence of each text that supports it.",
        "unanswerable": "Write one natural question about a person, place, organisation or thing named in the text "
                        "that asks for a detail the text does not give (a date, number, place or name that is not "
                        "stated). Give the name it asks about (`entity`) and a plausible answer that is NOT in the "
                        "text (`guess`).",
    },
    "zh": {
        "locate": "写一个这段文字能回答的问题、它的简短答案（从文中照抄几个词），"
                  "以及文中包含答案的那句话（逐字照抄）。",
        "reason": "写一个问题，问文中某件事为什么或如何发生、或由此可推出什么，回答需要一步推理。"
                  "给出简短答案（从文中照抄几个词）和文中包含答案的那句话（逐字照抄）。",
        "compare": "写一个必须同时用到两段文字才能回答的问题：把文字 1 的一个事实与文字 2 的一个事实比较或结合。"
                   "给出简短答案（从文中照抄几个词），并从每段各逐字照抄一句支持它的话。",
        "unanswerable": "针对文中提到的某个人、地点、机构或事物，写一个自然的问题，询问文中没有给出的细节"
                        "（未提及的日期、数字、地点或名字）。给出问题所问的名称（entity）和一个看似合理但文中没有的答案（guess）。",
    },
}
# One worked example per type and language: small models copy the form of an example far more reliably than they
# follow a description of it, and the reply then opens with the JSON the prompt ends on.
EXAMPLES = {
    "en": {
        "text": "The bridge over the Elbe was finished in 1892 after a flood had destroyed the old ferry. It was "
                "designed by Karl Weber.",
        "text2": "The new ferry across the Elbe, built in 1950, carries forty cars.",
        "locate": {"question": "Who designed the bridge over the Elbe?", "answer": "Karl Weber",
                   "quote": "It was designed by Karl Weber."},
        "reason": {"question": "Why was the bridge over the Elbe built?", "answer": "a flood had destroyed the old "
                   "ferry", "quote": "The bridge over the Elbe was finished in 1892 after a flood had destroyed the "
                   "old ferry."},
        "compare": {"question": "Which is older, the bridge over the Elbe or the new ferry?", "answer": "the bridge",
                    "quote": ["The bridge over the Elbe was finished in 1892 after a flood had destroyed the old "
                              "ferry.", "The new ferry across the Elbe, built in 1950, carries forty cars."]},
        "unanswerable": {"question": "How long is the bridge over the Elbe?", "entity": "bridge over the Elbe",
                         "guess": "310 metres"},
    },
    "zh": {
        "text": "易北河大桥在一场洪水冲毁旧渡口之后于1892年建成。它由卡尔·韦伯设计。",
        "text2": "1950年建造的易北河新渡轮可载四十辆汽车。",
        "locate": {"question": "易北河大桥是谁设计的？", "answer": "卡尔·韦伯", "quote": "它由卡尔·韦伯设计。"},
        "reason": {"question": "为什么要建易北河大桥？", "answer": "洪水冲毁旧渡口",
                   "quote": "易北河大桥在一场洪水冲毁旧渡口之后于1892年建成。"},
        "compare": {"question": "易北河大桥和新渡轮哪个更早？", "answer": "易北河大桥",
                    "quote": ["易北河大桥在一场洪水冲毁旧渡口之后于1892年建成。",
                              "1950年建造的易北河新渡轮可载四十辆汽车。"]},
        "unanswerable": {"question": "易北河大桥有多长？", "entity": "易北河大桥", "guess": "310米"},
    },
}
TEXT = {"en": "Text", "zh": "文字"}
CLOSED_BOOK = {"en": "Answer the question in a few words.\n\nQuestion: {question}\nAnswer:",
               "zh": "请用几个词回答问题。\n\n问题：{question}\n回答："}


def _texts(passages: list[str], language: str) -> str:
    """Passages as the prompt shows them: one `Text:` block, or `Text 1:` and `Text 2:`."""
    if len(passages) == 1:
        return f'{TEXT[language]}: """{passages[0]}"""'
    return "\n".join(f'{TEXT[language]} {i + 1}: """{p}"""' for i, p in enumerate(passages))


def example_block(kind: str, language: str) -> str:
    """The worked example every prompt of this type and language opens with (their shared prefix)."""
    example = EXAMPLES[language]
    shown = [example["text"], example["text2"]] if kind == "compare" else [example["text"]]
    return f"{_texts(shown, language)}\nJSON: {json.dumps(example[kind], ensure_ascii=False)}\n\n"


def task_prompt(task: Task, docs: dict[str, ParsedDocument], language: str) -> tuple[str, str]:
    """(system, user) of the generation request for `task`. The system message says what to write; the user
    message is a worked example (text, then `JSON:` and its reply), then the passage(s) and `JSON:` for the reply
    to continue: the embedded 135M model writes JSON in this form and rambles in others."""
    text = docs[task.document].text
    passages = [text[p.start:p.end].strip() for p in task.passages]
    user = f"{example_block(task.type, language)}{_texts(passages, language)}\nJSON:"
    return f"{ASK[language][task.type]} {REPLY_ONLY[language]}", user


@lru_cache(maxsize=2)
def _example_questions(language: str) -> frozenset[str]:
    return frozenset(_normalize(v["question"], language) for v in EXAMPLES[language].values() if isinstance(v, dict))


def prompt_hash(system: str | None, user: str) -> str:
    return hashlib.sha256(json.dumps([system, user], ensure_ascii=False).encode()).hexdigest()[:16]


# -- reading replies -----------------------------------------------------------------------------------
def first_json_object(text: str) -> dict | None:
    """The first `{...}` of `text` that parses as a JSON object (json.JSONDecoder.raw_decode at each `{`)."""
    decoder = json.JSONDecoder()
    for m in re.finditer(r"\{", text):
        try:
            value, _ = decoder.raw_decode(text, m.start())
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    return None


def _text(value: Any) -> str | None:
    """A field as text: a string or a number; None for anything else or blank."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        value = str(value)
    return value.strip() if isinstance(value, str) and value.strip() else None


def _quotes(value: Any) -> list[str] | None:
    if isinstance(value, list):
        quotes = [_text(v) for v in value]
        return quotes if quotes and all(quotes) else None  # type: ignore[return-value]
    one = _text(value)
    return [one] if one else None


def _normalize(text: str, language: str) -> str:
    return normalize_zh(text) if language == "zh" else normalize_en(text)


def _contains(haystack: str, needle: str, language: str) -> bool:
    n = _normalize(needle, language)
    return bool(n) and n in _normalize(haystack, language)


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


# -- checking ------------------------------------------------------------------------------------------
@dataclass
class Candidate:
    """An item that passed the checks up to the duplicate test."""

    task: Task
    question: str
    answer: str
    evidence: list[str]
    quotes: list[str]
    language: str
    prompt_hash: str
    closed_book: str | None = None


@dataclass
class Checker:
    """The keep rules of one run, over its documents; `kept` holds the kept questions' token sets."""

    docs: dict[str, ParsedDocument]
    languages: dict[str, str] = field(default_factory=dict)
    kept: list[set[str]] = field(default_factory=list)

    def language(self, doc_id: str) -> str:
        if doc_id not in self.languages:
            self.languages[doc_id] = language_of(self.docs[doc_id].text)
        return self.languages[doc_id]

    def check(self, task: Task, reply: str, phash: str) -> tuple[Candidate | None, str | None]:
        """(candidate, None) or (None, drop reason), the first failing rule in the module docstring's order."""
        data = first_json_object(reply)
        if data is None:
            return None, "not_json"
        lang = self.language(task.document)
        question = _text(data.get("question"))
        if question is None:
            return None, "bad_fields"
        if _normalize(question, lang) in _example_questions(lang):
            return None, "copied_example"
        if language_of(question) != lang:
            return None, "wrong_language"
        if len(tokens(question, lang)) < MIN_QUESTION_TOKENS:
            return None, "bad_fields"
        if task.type == "unanswerable":
            return self._unanswerable(task, data, question, lang, phash)
        answer, quotes = _text(data.get("answer")), _quotes(data.get("quote"))
        if answer is None or quotes is None or not _normalize(answer, lang):
            return None, "bad_fields"
        spans = self._aligned(task, quotes)
        if spans is None:
            return None, "quote_not_found"
        if task.type == "compare" and len({p for p, _, _ in spans}) < len(task.passages):
            return None, "compare_one_passage"
        text = self.docs[task.document].text
        evidence = [text[s:e] for _, s, e in spans]
        if not _contains(" ".join(evidence), answer, lang):
            return None, "answer_not_in_quote"
        if task.type != "compare" and _contains(question, answer, lang):  # "which is older, A or B?" may name it
            return None, "answer_in_question"
        return Candidate(task, question, answer, evidence, quotes, lang, phash), None

    def _aligned(self, task: Task, quotes: list[str]) -> list[tuple[int, int, int]] | None:
        """(passage number, start, end) in the document of each quote, aligned near one of the task's passages
        with quality >= QUALITY; None when one does not align. Where a quote aligns near both passages of a
        compare item, the better alignment wins, then the passage it lies in (the windows may overlap)."""
        text = self.docs[task.document].text
        out = []
        for quote in quotes:
            best: tuple[float, int, int, int, int] | None = None  # (quality, -distance, passage, start, end)
            for i, p in enumerate(task.passages):
                lo, hi = max(0, p.start - NEAR_CHARS), min(len(text), p.end + NEAR_CHARS)
                a = align(quote, TokenIndex(text[lo:hi]))
                if a is None or a.quality < QUALITY:
                    continue
                start, end = lo + a.start, lo + a.end
                key = (a.quality, -max(0, p.start - start, end - p.end), i, start, end)
                if best is None or key[:2] > best[:2]:
                    best = key
            if best is None:
                return None
            out.append(best[2:])
        return out

    def _unanswerable(self, task: Task, data: dict, question: str, lang: str,
                      phash: str) -> tuple[Candidate | None, str | None]:
        entity, guess = _text(data.get("entity")), _text(data.get("guess"))
        if entity is None or guess is None:
            return None, "bad_fields"
        text = self.docs[task.document].text
        if not (_contains(question, entity, lang) and _contains(text, entity, lang)):
            return None, "unanswerable_off_document"
        if lexical_overlap(guess, [text], lang) > 0:
            return None, "unanswerable_answer_in_document"
        return Candidate(task, question, UNANSWERABLE[lang], [], [guess], lang, phash), None

    def duplicate(self, candidate: Candidate) -> bool:
        words = set(tokens(candidate.question, candidate.language))
        return any(_jaccard(words, other) >= DUPLICATE_JACCARD for other in self.kept)

    def keep(self, candidate: Candidate) -> None:
        self.kept.append(set(tokens(candidate.question, candidate.language)))


def record(candidate: Candidate, docs: dict[str, ParsedDocument], generator: dict[str, Any], seed: int) -> dict:
    """The JSONL row of a kept item."""
    task = candidate.task
    text = docs[task.document].text
    against = candidate.evidence or [text[p.start:p.end] for p in task.passages]
    overlap = lexical_overlap(candidate.question, against, candidate.language)
    provenance = {**generator, "prompt_hash": candidate.prompt_hash, "seed": seed,
                  "source": task.passages[0].span(), "passages": [p.span() for p in task.passages],
                  "quote" if task.type != "unanswerable" else "guess": candidate.quotes}
    if candidate.closed_book is not None:
        provenance["closed_book_answer"] = candidate.closed_book
    return {"id": f"gen-s{seed}-{task.index:05d}", "question": candidate.question, "answers": [candidate.answer],
            "documents": [task.document], "evidence": candidate.evidence, "task": task.type, "type": task.type,
            "language": candidate.language, "lexical_overlap": overlap, "overlap_bucket": overlap_bucket(overlap),
            "provenance": provenance}


# -- the generator ---------------------------------------------------------------------------------------
def _resolve(name: str) -> Any:
    module, _, attr = name.partition(":")
    return getattr(importlib.import_module(module), attr)


def generator_config(spec: str, settings: Iterable[str] = ()) -> dict[str, Any]:
    """The generator's config: `conf/generator/<spec>.yaml`, or the YAML file `spec`, with `KEY=VALUE` settings."""
    from omegaconf import OmegaConf

    path = Path(spec)
    if spec.endswith((".yaml", ".yml")) or path.is_file():
        if not path.is_file():
            raise FileNotFoundError(f"--generator {spec!r}: no such file")
    else:
        path = CONF / f"{spec}.yaml"
        if not path.is_file():
            known = ", ".join(sorted(p.stem for p in CONF.glob("*.yaml")))
            raise ValueError(f"--generator {spec!r}: not a name in conf/generator/ ({known}) nor a .yaml file")
    try:
        cfg = OmegaConf.merge(OmegaConf.load(path), OmegaConf.from_dotlist(list(settings)))
        data = OmegaConf.to_container(cfg, resolve=True)
    except Exception as err:  # noqa: BLE001 - OmegaConf's parse and interpolation errors, named with the file
        raise ValueError(f"--generator {path}: {type(err).__name__}: {err}") from None
    if not isinstance(data, dict) or not data.get("backend"):
        raise ValueError(f"--generator {path}: a generator config needs `backend` (see conf/generator/)")
    if data["backend"] == "none":
        raise ValueError(f"--generator {path}: backend `none` generates nothing; pick a model")
    return data


class Asker:
    """Texts in, reply texts out, through the configured generator and its response cache."""

    def __init__(self, cfg: dict[str, Any], cache_dir: str | Path):
        self.cfg = cfg
        self.generator = _resolve(GENERATOR_FACTORY)(cfg, cache_dir=cache_dir)
        self._prompt = _resolve(PROMPT_CLASS)
        self._key = _resolve(RESPONSE_KEY)
        self.asked = 0  # requests handed to the generator (cached ones included)

    @property
    def label(self) -> dict[str, str]:
        return {"generator": str(self.generator.model_id), "backend": str(self.cfg.get("backend"))}

    def prompt(self, system: str | None, user: str, max_new_tokens: int, shared_chars: int = 0) -> Any:
        """A request; `shared_chars`: the length of the user message's start that other requests share (a local
        backend reads it once for all of them and decodes them as one batch)."""
        return self._prompt(user=user, system=system, max_new_tokens=max_new_tokens, prefix_chars=shared_chars)

    def cached(self, prompts: list[Any]) -> int:
        """How many of `prompts` the response cache already answers."""
        cache = getattr(self.generator, "cache", None)
        if cache is None:
            return 0
        params = self.generator.sampling_params()
        return sum(cache.get(self._key(self.generator.model_id, p, params)) is not None for p in prompts)

    @property
    def calls(self) -> int:
        """Requests the backend actually answered (not from the cache)."""
        return int(getattr(self.generator, "calls", self.asked))

    def ask(self, prompts: list[Any], what: str) -> list[str]:
        self.asked += len(prompts)
        try:
            return [g.text for g in self.generator.generate(prompts)]
        except KeyboardInterrupt:
            raise
        except Exception as err:  # any backend failure ends the run with its name and reason
            raise GeneratorFailed(f"the generator {self.generator.model_id!r} ({self.cfg.get('backend')}) failed "
                                  f"on {what}: {type(err).__name__}: {err}") from err


# -- the run ---------------------------------------------------------------------------------------------
@dataclass
class Outputs:
    jsonl: Path

    @property
    def csv(self) -> Path:
        return self.jsonl.with_suffix(".csv")

    @property
    def summary(self) -> Path:
        return self.jsonl.with_suffix(".summary.json")


@dataclass
class Tally:
    planned: int
    kept: int = 0
    dropped: dict[str, int] = field(default_factory=lambda: {r: 0 for r in REASONS})
    kept_by_type: dict[str, int] = field(default_factory=dict)
    planned_by_type: dict[str, int] = field(default_factory=dict)
    overlap: dict[str, int] = field(default_factory=lambda: {b: 0 for b in BUCKETS})

    def drop(self, reason: str) -> None:
        self.dropped[reason] += 1

    def take(self, row: dict) -> None:
        self.kept += 1
        self.kept_by_type[row["type"]] = self.kept_by_type.get(row["type"], 0) + 1
        self.overlap[row["overlap_bucket"]] += 1

    def line(self) -> str:
        dropped = ", ".join(f"{r} {c}" for r, c in self.dropped.items() if c) or "none"
        share = f" ({100 * self.kept / self.planned:.0f}%)" if self.planned else ""
        return f"kept {self.kept} of {self.planned}{share}; dropped: {dropped}"


def load_documents(root: Path, leave_out: Iterable[Path], cache_dir: str | Path | None) -> list[ParsedDocument]:
    """The folder's documents (parsed as `benchmark=corpus` parses them); unreadable files are named in a warning."""
    from eval.corpus.cache import ParsedDocumentCache

    if not root.is_dir():
        raise FileNotFoundError(f"--docs {str(root)!r} is not a folder")
    parsed, bad = read_folder(root, leave_out=leave_out, cache=ParsedDocumentCache.in_folder(cache_dir))
    if bad:
        listed = "; ".join(f"{b.path}: {b.reason}" for b in bad[:5]) + (f" (+{len(bad) - 5} more)"
                                                                       if len(bad) > 5 else "")
        log.warning("%s: left out %d file(s) that could not be read: %s", root, len(bad), listed)
    parsed = [d for d in parsed if d.text.strip()]
    if not parsed:
        raise ValueError(f"--docs {str(root)!r}: no document could be read"
                         + (f" ({len(bad)} file(s) could not: {bad[0].path}: {bad[0].reason})" if bad else
                            " (the folder holds no .txt, .md, .html, .pdf, .docx or corpus.jsonl file)"))
    return parsed


def estimate(tasks: list[Task], asker: Asker, prompts: list[Any], closed_book: bool) -> str:
    cached = asker.cached(prompts)
    answerable = sum(t.type != "unanswerable" for t in tasks)
    text = f"{len(prompts)} generation calls ({cached} already cached, {len(prompts) - cached} to ask)"
    if closed_book:
        text += f" + up to {answerable} closed-book calls (one per item that passes the other checks)"
    return f"estimate: {text}, generator {asker.label['generator']} ({asker.label['backend']})"


def confirm(message: str, assume_yes: bool) -> bool:
    """Print the estimate; on a terminal, ask to go on (unless --yes)."""
    print(message, file=sys.stderr)
    if assume_yes or not sys.stdin.isatty():
        return True
    return input("Go on? [y/N] ").strip().lower() in ("y", "yes")


def _write_csv(path: Path, rows: list[dict]) -> None:
    columns = ["id", "approve", "type", "question", "answers", "documents", "evidence", "task", "lexical_overlap",
               "overlap_bucket", "source"]
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        for r in rows:
            src = r["provenance"]["source"]
            writer.writerow({
                "id": r["id"], "approve": "", "type": r["type"], "question": r["question"],
                "answers": json.dumps(r["answers"], ensure_ascii=False),
                "documents": json.dumps(r["documents"], ensure_ascii=False),
                "evidence": json.dumps(r["evidence"], ensure_ascii=False), "task": r["task"],
                "lexical_overlap": r["lexical_overlap"], "overlap_bucket": r["overlap_bucket"],
                "source": f"{src['document']}:{src['start']}-{src['end']}"})


def _batches(items: list, size: int) -> Iterable[list]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


@dataclass
class Run:
    """One generation run: documents, tasks, the asker and the outputs."""

    docs: dict[str, ParsedDocument]
    tasks: list[Task]
    asker: Asker
    out: Outputs
    seed: int
    closed_book: bool = False
    batch: int = 1
    max_new_tokens: int = MAX_NEW_TOKENS
    progress: bool = True
    tally: Tally = field(init=False)
    checker: Checker = field(init=False)
    rows: list[dict] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.tally = Tally(len(self.tasks))
        for t in self.tasks:
            self.tally.planned_by_type[t.type] = self.tally.planned_by_type.get(t.type, 0) + 1
        self.checker = Checker(self.docs)

    def prompts(self) -> list[tuple[Task, str, Any]]:
        out = []
        for t in self.tasks:
            system, user = task_prompt(t, self.docs, self.checker.language(t.document))
            shared = len(example_block(t.type, self.checker.language(t.document)))
            out.append((t, prompt_hash(system, user), self.asker.prompt(system, user, self.max_new_tokens, shared)))
        return out

    def go(self, prompts: list[tuple[Task, str, Any]]) -> None:
        """Ask, check and write every task, appending each kept item to the JSONL as it is kept."""
        from tqdm import tqdm

        self.out.jsonl.parent.mkdir(parents=True, exist_ok=True)
        bar = tqdm(total=len(prompts), desc="questions", unit="item", disable=not self.progress, file=sys.stderr,
                   dynamic_ncols=True)
        with self.out.jsonl.open("w", encoding="utf-8") as fh:
            for batch in _batches(prompts, self.batch):
                first = batch[0][0]
                replies = self.asker.ask([p for _, _, p in batch], f"item {first.index} ({first.document})")
                for row in self._judge(batch, replies):
                    fh.write(json.dumps(row, ensure_ascii=False) + "\n")
                    fh.flush()
                bar.update(len(batch))
                bar.set_postfix(kept=self.tally.kept)
        bar.close()

    def _judge(self, batch: list[tuple[Task, str, Any]], replies: list[str]) -> list[dict]:
        """The kept rows of one batch, in task order; every other item counted under its reason."""
        pending: list[Candidate] = []
        for (task, phash, _), reply in zip(batch, replies):
            candidate, reason = self.checker.check(task, reply, phash)
            if candidate is None:
                self.tally.drop(reason or "not_json")
            elif self.checker.duplicate(candidate):
                self.tally.drop("duplicate")
            else:
                self.checker.keep(candidate)
                pending.append(candidate)
        if self.closed_book:
            pending = self._closed_book(pending)
        rows = [record(c, self.docs, self.asker.label, self.seed) for c in pending]
        for r in rows:
            self.tally.take(r)
        self.rows += rows
        return rows

    def _closed_book(self, pending: list[Candidate]) -> list[Candidate]:
        """Drop the items the generator answers without the document (unanswerable ones are not asked)."""
        ask = [c for c in pending if c.task.type != "unanswerable"]
        if not ask:
            return pending
        prompts = [self.asker.prompt(None, CLOSED_BOOK[c.language].format(question=c.question), CLOSED_BOOK_TOKENS,
                                     CLOSED_BOOK[c.language].index("{question}")) for c in ask]
        replies = self.asker.ask(prompts, f"the closed-book check of item {ask[0].task.index}")
        answered = set()
        for c, reply in zip(ask, replies):
            c.closed_book = reply
            if _contains(reply, c.answer, c.language):
                answered.add(id(c))
                self.tally.drop("answerable_closed_book")
        return [c for c in pending if id(c) not in answered]

    def summary(self, seconds: float, interrupted: bool = False) -> dict[str, Any]:
        t = self.tally
        return {"planned": t.planned, "kept": t.kept, "dropped": t.dropped, "dropped_total": sum(t.dropped.values()),
                "planned_by_type": t.planned_by_type, "kept_by_type": t.kept_by_type, "overlap_buckets": t.overlap,
                "calls": {"asked": self.asker.asked, "answered_by_backend": self.asker.calls,
                          "answered_from_cache": self.asker.asked - self.asker.calls},
                **self.asker.label, "seed": self.seed, "documents": len(self.docs), "seconds": round(seconds, 2),
                "seconds_per_kept": round(seconds / t.kept, 2) if t.kept else None, "interrupted": interrupted,
                "reasons": REASONS}

    def finish(self, seconds: float, interrupted: bool = False) -> dict[str, Any]:
        summary = self.summary(seconds, interrupted)
        if not interrupted:
            _write_csv(self.out.csv, self.rows)
        self.out.summary.write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        return summary


def _types(text: str) -> list[str]:
    types = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [t for t in types if t not in TYPES]
    if unknown or not types:
        raise ValueError(f"--types {text!r}: unknown {unknown}; allowed: {', '.join(TYPES)}")
    return list(dict.fromkeys(types))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m testset.generate", description=__doc__.split("\n\n")[0])
    p.add_argument("--docs", required=True, help="the folder of documents (as benchmark.path)")
    p.add_argument("--out", required=True, help="the questions file to write (.jsonl); a .csv and a "
                                                ".summary.json are written beside it")
    p.add_argument("--generator", default="smollm2", help="a conf/generator name or a .yaml file (default smollm2)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="change one generator setting, e.g. --set base_url=http://localhost:8000/v1")
    p.add_argument("--n", type=int, default=100, help="items to generate (generation calls); default 100")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--types", default=",".join(TYPES), help=f"question types to mix (default {','.join(TYPES)})")
    p.add_argument("--drop-closed-book", action="store_true",
                   help="drop questions the generator answers without the document")
    p.add_argument("--passage-chars", type=int, default=PASSAGE_CHARS)
    p.add_argument("--max-new-tokens", type=int, default=MAX_NEW_TOKENS)
    p.add_argument("--batch", type=int, default=None,
                   help=f"requests sent together (default: the generator's max_concurrency, else {LOCAL_BATCH}: a "
                        "local model decodes the items of one type in a batch together)")
    p.add_argument("--cache-dir", default=os.environ.get("RAGLC_CACHE_DIR", ".cache"),
                   help="response and parsed-document caches (default $RAGLC_CACHE_DIR or .cache): a rerun "
                        "asks no call twice")
    p.add_argument("--yes", action="store_true", help="do not ask before running")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    if args.n < 1:
        p.error(f"--n must be >= 1, got {args.n}")
    if args.passage_chars < 100:
        p.error(f"--passage-chars must be >= 100, got {args.passage_chars}")
    return args


def run(args: argparse.Namespace) -> dict[str, Any] | None:
    """Generate, check and write; the summary (None when the user declined)."""
    types = _types(args.types)
    out = Outputs(Path(args.out))
    if out.jsonl.suffix.lower() != ".jsonl":
        raise ValueError(f"--out {args.out!r}: the questions file must end in .jsonl")
    root = Path(args.docs)
    docs = load_documents(root, (out.jsonl, out.csv, out.summary), args.cache_dir)
    cfg = generator_config(args.generator, args.set)
    tasks = plan(docs, args.n, types, args.seed, args.passage_chars)
    asker = Asker(cfg, args.cache_dir)
    batch = args.batch or int(cfg.get("max_concurrency") or LOCAL_BATCH)
    job = Run({d.doc_id: d for d in docs}, tasks, asker, out, args.seed, args.drop_closed_book, max(1, batch),
              args.max_new_tokens, not args.no_progress)
    prompts = job.prompts()
    if not confirm(f"{len(docs)} documents, {len(tasks)} items ({', '.join(types)}); "
                   + estimate(tasks, asker, [p for _, _, p in prompts], args.drop_closed_book), args.yes):
        print("cancelled", file=sys.stderr)
        return None
    t0 = time.perf_counter()
    try:
        job.go(prompts)
    except (KeyboardInterrupt, GeneratorFailed) as err:
        job.finish(time.perf_counter() - t0, interrupted=True)
        where = (f"{job.tally.kept} kept item(s) so far are in {out.jsonl}; run the same command again to go on "
                 "(answered calls are cached)")
        if isinstance(err, KeyboardInterrupt):
            print(f"interrupted: {where}", file=sys.stderr)
            raise
        raise GeneratorFailed(f"{err}. {where}") from err
    summary = job.finish(time.perf_counter() - t0)
    print(job.tally.line(), file=sys.stderr)
    print(f"overlap buckets: {summary['overlap_buckets']}; wrote {out.jsonl}, {out.csv}, {out.summary}",
          file=sys.stderr)
    return summary


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    args = parse_args(argv)
    try:
        return 0 if run(args) is not None else 1
    except (GeneratorFailed, FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())

