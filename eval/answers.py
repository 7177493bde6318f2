"""Reference answers with alternatives: what a list of answers means to every metric that reads it this way.

A sample's `answers` is a list whose entries must ALL be found in a reply ("all of these"); an entry may itself
be a list of alternatives, ANY one of which counts: `[["twice", "2"]]` is right for "The answer is: 2" and for
"It runs twice", `[["twice", "2"], "loop"]` needs "loop" too. A team's questions file writes them so
(eval/benchmarks/corpus.py); the benchmarks' own answers are plain texts, so an entry is a text or a list of texts.

The metrics that read alternatives are registered with `alternatives=True` (eval/metrics/base.py); the others
read plain texts only, and a questions file with alternatives is refused under them at load.
"""

from __future__ import annotations

from collections.abc import Iterable

Answer = str | list[str]  # one reference answer: a text, or alternatives any of which counts


def alternatives(answer: Answer) -> list[str]:
    """The non-blank texts of one answer entry: its alternatives, or the text itself."""
    texts = list(answer) if isinstance(answer, (list, tuple)) else [answer]
    return [str(t) for t in texts if t is not None and str(t).strip()]


def answer_groups(answers: Iterable[Answer]) -> list[list[str]]:
    """Each entry that has a non-blank text, as its list of alternatives (one text: a list of one)."""
    return [alts for alts in (alternatives(a) for a in answers) if alts]


def answer_texts(answers: Iterable[Answer]) -> list[str]:
    """Every non-blank text of every entry, alternatives included: what "is any gold answer in this text" reads."""
    return [t for alts in answer_groups(answers) for t in alts]


def has_alternatives(answers: Iterable[Answer]) -> bool:
    """Some entry lists alternatives (more than one text)."""
    return any(len(alts) > 1 for alts in answer_groups(answers))


def shown(answer: Answer) -> str:
    """One entry as a reader sees it: "twice" or "twice or 2"."""
    return " or ".join(alternatives(answer))


__all__ = ["Answer", "alternatives", "answer_groups", "answer_texts", "has_alternatives", "shown"]
