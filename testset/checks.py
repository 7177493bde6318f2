"""What is kept: a reply read as JSON and checked in a fixed order, the first failure its drop reason (testset
package docstring: "What is kept"), and the record written for a kept item."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from eval.align import TokenIndex, align
from eval.corpus.parsers import ParsedDocument
from eval.corpus.questions import language_of
from eval.lexical_overlap import lexical_overlap, overlap_bucket
from eval.metrics.text import tokens
from testset.plan import Task
from testset.prompts import UNANSWERABLE, example_questions, normalized

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


QUALITY = 0.8  # the corpus benchmark's evidence_threshold
NEAR_CHARS = 200  # a quote may align this far outside its passage
DUPLICATE_JACCARD = 0.7
MIN_QUESTION_TOKENS = 3


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
        quotes = [q for q in (_text(v) for v in value) if q]
        return quotes if quotes and len(quotes) == len(value) else None
    one = _text(value)
    return [one] if one else None


def contains(haystack: str, needle: str, language: str) -> bool:
    n = normalized(needle, language)
    return bool(n) and n in normalized(haystack, language)


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


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
        if normalized(question, lang) in example_questions(lang):
            return None, "copied_example"
        if language_of(question) != lang:
            return None, "wrong_language"
        if len(tokens(question, lang)) < MIN_QUESTION_TOKENS:
            return None, "bad_fields"
        if task.type == "unanswerable":
            return self._unanswerable(task, data, question, lang, phash)
        answer, quotes = _text(data.get("answer")), _quotes(data.get("quote"))
        if answer is None or quotes is None or not normalized(answer, lang):
            return None, "bad_fields"
        spans = self._aligned(task, quotes)
        if spans is None:
            return None, "quote_not_found"
        if task.type == "compare" and len({p for p, _, _ in spans}) < len(task.passages):
            return None, "compare_one_passage"
        text = self.docs[task.document].text
        evidence = [text[s:e] for _, s, e in spans]
        if not contains(" ".join(evidence), answer, lang):
            return None, "answer_not_in_quote"
        if task.type != "compare" and contains(question, answer, lang):  # "which is older, A or B?" may name it
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
        if not (contains(question, entity, lang) and contains(text, entity, lang)):
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
