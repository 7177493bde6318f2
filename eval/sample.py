"""The data every part of the project shares: a benchmark sample and its prompt template.

`eval` is the bottom layer: `rag`, `longctx`, `llm` and `experiments` may import these types,
and nothing here imports them.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from eval.answers import Answer


def level_sort_key(level: object) -> tuple[float, str]:
    """Order length levels by size ("1k" < "8k" < "16k" < "128k", plain numbers as themselves);
    names that are not sizes come last, alphabetically."""
    text = str(level)
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmM]?)", text.strip())
    if not m:
        return (float("inf"), text)
    scale = {"": 1, "k": 1e3, "m": 1e6}[m.group(2).lower()]
    return (float(m.group(1)) * scale, text)


@dataclass(frozen=True)
class Span:
    """A piece of evidence: a char span of the sample's context, a whole document, or both.

    `quality` is how well the benchmark's evidence text was located in the context (1.0 for an
    exact match; fuzzy alignments score lower). Spans sharing an `alt` key are alternatives: one
    piece of evidence found in several places (an answer that occurs more than once), present
    when any of them is (`eval.evidence`).
    """

    start: int | None = None
    end: int | None = None
    doc_id: str | None = None
    quality: float = 1.0
    alt: str | None = None

    @property
    def is_char_span(self) -> bool:
        return self.start is not None and self.end is not None


@dataclass(frozen=True)
class Document:
    """One document of a multi-document context, as a char span of the joined context.

    `header` is the text the context shows before the document's body, inside its span (Loong:
    `《title》\n`); the RAG arm heads each chunk with it (`rag.doc_titles`). Empty: `title` on a
    line of its own, when there is a title.
    """

    doc_id: str
    start: int
    end: int
    title: str = ""
    header: str = ""

    def heading(self) -> str:
        return self.header or (f"{self.title}\n" if self.title else "")


_PLACEHOLDER = re.compile(r"\{(context|question)\}")


@dataclass(frozen=True)
class PromptTemplate:
    """A benchmark's prompt: text with `{context}` and `{question}` placeholders.

    Only those two placeholders are substituted, so templates may contain other braces
    (JSON examples in Loong's prompts, for instance). Both arms fill the same template; only the
    context differs. Generation settings travel with the template because benchmarks define them
    together.
    """

    text: str
    max_new_tokens: int = 64
    truncation: str = "middle"  # how the long-context arm cuts an over-long context
    system: str | None = None
    source: str = ""  # where the template comes from (benchmark repository and file)
    chat: bool = True  # False: the model sees the raw text, no chat template (LooGLE's open-model scripts)
    repetition_penalty: float | None = None  # HF-style penalty (LooGLE: 2); None: none

    def __post_init__(self) -> None:
        names = _PLACEHOLDER.findall(self.text)
        if names.count("context") != 1 or names.count("question") > 1:
            raise ValueError(
                "a prompt template needs exactly one {context} and at most one {question}; "
                f"got {names} in {self.text[:80]!r}"
            )

    def parts(self) -> tuple[str, str]:
        """The template text before and after `{context}` (question not yet filled)."""
        head, tail = self.text.split("{context}", 1)
        return head, tail

    def render(self, context: str, question: str) -> str:
        head, tail = self.parts()
        return _fill_question(head, question) + context + _fill_question(tail, question)


def _fill_question(text: str, question: str) -> str:
    # Plain replacement: the question itself may contain braces.
    return text.replace("{question}", question)


@dataclass
class Sample:
    """One question over one long context, in a benchmark-independent shape."""

    id: str
    benchmark: str
    task: str
    language: str  # "en" or "zh"
    length_level: str
    context: str
    question: str
    answers: list[Answer]  # a text, or alternatives any of which counts (eval/answers.py)
    template: PromptTemplate
    metric: str  # name in eval.metrics.METRICS: the benchmark's primary metric for this task
    answer_keywords: str | None = None  # LV-Eval style: comma separated keywords
    evidence: list[Span] = field(default_factory=list)
    distractors: list[Span] = field(default_factory=list)  # known confusing facts
    documents: list[Document] = field(default_factory=list)
    group: str = ""  # samples sharing one context share a group (prefix reuse, index reuse)
    metadata: dict[str, Any] = field(default_factory=dict)
    # what a metric needs beyond the answers (a judge's question)
    reference_extra: dict[str, Any] = field(default_factory=dict)

    def reference(self) -> Reference:
        return Reference(
            answers=list(self.answers),
            answer_keywords=self.answer_keywords,
            language=self.language,
            task=self.task,
            extra=dict(self.reference_extra),
        )

    def summary(self) -> dict[str, Any]:
        """Light fields for records (no context)."""
        return {
            "id": self.id,
            "benchmark": self.benchmark,
            "task": self.task,
            "language": self.language,
            "length_level": self.length_level,
            "group": self.group,
            "question": self.question,
            "answers": self.answers,
            "context_chars": len(self.context),
            "evidence": [asdict(s) for s in self.evidence],
            "metadata": self.metadata,
        }


@dataclass
class Reference:
    """What a metric needs to score a prediction (also built from any JSON line by eval.score)."""

    answers: list[Answer]
    answer_keywords: str | None = None
    language: str = "en"
    task: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
