"""What a prediction file's line says about its reference, for rescoring (`python -m experiments.score`):
the answers, as text, and the answer keywords. A line that says it wrongly raises `BadLine` (the command names
the file and line)."""

from __future__ import annotations

from typing import Any

from eval.answers import Answer


class BadLine(ValueError):
    pass


def answers(rec: dict[str, Any]) -> list[Any]:
    if "answers" in rec:
        answers = rec["answers"]
        if isinstance(answers, str):
            return [answers]
        if not isinstance(answers, list):
            raise BadLine(f"`answers` must be a list or a string, not {type(answers).__name__}")
        return answers
    if "answer" in rec:
        return [rec["answer"]]
    raise BadLine("no reference: expected `answers` (list) or `answer`")


def text_answers(rec: dict[str, Any]) -> list[Answer]:
    """The line's answers, each a text (no alternatives)."""
    out: list[Answer] = []
    for a in answers(rec):
        if a is None or isinstance(a, (dict, list)):
            raise BadLine(f"answer must be text, not {type(a).__name__}")
        out.append(str(a))
    return out


def keywords(rec: dict[str, Any]) -> str | None:
    kw = rec.get("answer_keywords", rec.get("gold_ans"))
    if kw is not None and not isinstance(kw, str):
        raise BadLine(f"answer keywords must be a string, not {type(kw).__name__}")
    return kw
