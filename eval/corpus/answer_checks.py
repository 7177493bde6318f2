"""Reference answers checked when a team's questions load: the answers a metric scores wrongly whatever the reply.

No rule applied to the reply can see these, so they are named before any answer is generated:

- **never matches**: the answer cannot be found even in a reply that is the answer itself (it normalises to
  nothing, or to an article that the metric drops: `a`, `the`, `.`);
- **in the question**: the question's own text holds the answer, so a reply that only echoes the question
  (or breaks off after repeating it) scores 1;
- **a number the numbering holds**: a bare number that a section or list number of its evidence document also
  holds (`4` against headings `4.1` and `4.8.2`): a reply echoing a heading from its context may hold it by
  chance (the metric compares numbers whole, `4` is not in `4.8.2`, but a heading `4. More Control Flow` is
  still `4`).

Only metrics that compare the reply with the answers are checked (not judges, not `refusal`). An answer that lists
alternatives (eval/answers.py) has each alternative checked as an answer of its own: any of them can score a reply.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from eval.answers import Answer, answer_texts
from eval.metrics import NoJudgment, needs_judge, score
from eval.sample import Reference

NEVER_MATCHES = "can never match (the answer scores 0 against itself: empty, or only words the metric drops)"
IN_QUESTION = "is in the question's own text (a reply that echoes the question scores 1)"
NUMBERING = "is a bare number that the numbering of its evidence document also holds"
UNCHECKED_METRICS = frozenset({"refusal"})
_BARE_NUMBER = re.compile(r"\d+")
_NUMBERING = re.compile(r"(?m)^[ \t]*(\d+(?:\.\d+)*)\.?[ \t]+\S")  # "4.8.2. Heading", "2. Item", "10 Title"


@dataclass(frozen=True)
class AnswerProblem:
    question_id: str
    answer: str
    problem: str

    def describe(self) -> str:
        return f"{self.question_id}: {self.answer!r} {self.problem}"


def numbering_numbers(text: str) -> set[str]:
    """Every number that a line-leading section or list number of `text` holds (`4.8.2.` holds 4, 8 and 2)."""
    return {part for m in _NUMBERING.finditer(text) for part in m.group(1).split(".")}


def _score(metric: str, text: str, ref: Reference) -> float:
    values = score(metric, text, ref)
    assert not isinstance(values, NoJudgment), "only a judged metric gives no judgment, and none is checked here"
    return values["score"]


def answer_problems(question_id: str, question: str, answers: list[Answer], metric: str, language: str,
                    evidence_documents: list[str]) -> list[AnswerProblem]:
    """What is wrong with each answer of one question under `metric` (empty: nothing; the module doc says what
    is checked). `evidence_documents`: the texts of the documents its evidence lies in."""
    if not answers or metric in UNCHECKED_METRICS or needs_judge(metric):
        return []
    numbers = None
    out = []
    for answer in answer_texts(answers):
        ref = Reference(answers=[answer], language=language)
        if _score(metric, answer, ref) < 1.0:
            out.append(AnswerProblem(question_id, answer, NEVER_MATCHES))
            continue
        if _score(metric, question, ref) >= 1.0:
            out.append(AnswerProblem(question_id, answer, IN_QUESTION))
        if _BARE_NUMBER.fullmatch(answer.strip()):
            if numbers is None:
                numbers = set().union(*(numbering_numbers(t) for t in evidence_documents))
            if str(int(answer.strip())) in {str(int(n)) for n in numbers}:
                out.append(AnswerProblem(question_id, answer, NUMBERING))
    return out


__all__ = ["AnswerProblem", "IN_QUESTION", "NEVER_MATCHES", "NUMBERING", "answer_problems", "numbering_numbers"]
