"""Judges for questions without reference answers (a team's own questions, `benchmark=corpus`).

* `evidence_judge`: the question has evidence quotes from the documents but no reference answer. The
  judge reads the question, the quotes and the answer, and says True (correct and supported by the
  quotes) or False; the score is 1 or 0, a reply that is neither is no judgment.
* `pairwise_judge`: the question has neither. No single answer can be scored, so the runner records
  the answer unscored and `python -m experiments.pairwise` compares, per question, the RAG config's
  answer with the long-context config's after the sweep (`compare`): the judge is asked twice, the
  answers as "Answer 1" and "Answer 2" in both orders, never told which arm wrote which. A
  preference counts only when both orders agree; a preference that flips with the order (the judge
  favours a position, not an answer) is a tie, and so is a tie in either order.

Judges favour longer answers, and a judge of the answering model's family favours that family: the
report shows answer lengths beside the win rate, and docs/predictions.md recommends a judge of another model
family than the answerer. The prompts are the project's own.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from eval.metrics import MetricValues, NoJudgment, register
from eval.metrics.judge import Judge, judged, parse_true_false
from eval.sample import Reference

EVIDENCE_SYSTEM = (
    "You grade an answer to a question about a set of documents. You are given the question, passages quoted "
    "from the documents that answer it, and the answer to grade. Reply True if the answer is correct and "
    "supported by the passages, False if it is wrong, contradicts them, or does not answer the question. "
    "Reply with one word: True or False.")
PAIRWISE_SYSTEM = (
    "You compare two answers to a question about a set of documents. Prefer the answer that is correct, "
    "answers the question and invents nothing; do not prefer an answer for being longer. Reply with one "
    "word: 1 if Answer 1 is better, 2 if Answer 2 is better, tie if they are equally good or equally bad.")
PAIRWISE_PARAMS = {"temperature": 0.0, "max_tokens": 5}

WIN, TIE, LOSS = "win", "tie", "loss"  # for the first answer of `compare` (the RAG config's)
OUTCOME_SCORE = {WIN: 1.0, TIE: 0.5, LOSS: 0.0}


def evidence_prompt(question: str, evidence: list[str], answer: str) -> list[dict[str, str]]:
    quotes = "\n".join(f"[{i}] {q}" for i, q in enumerate(evidence, 1))
    return [{"role": "system", "content": EVIDENCE_SYSTEM},
            {"role": "user", "content": f"Question: {question}\n\nPassages:\n{quotes}\n\nAnswer: {answer}"}]


@register("evidence_judge", judged=True)
def evidence_judge(prediction: str, ref: Reference, judge: Judge) -> MetricValues | NoJudgment:
    extra = ref.extra or {}
    evidence = [str(q) for q in extra.get("evidence") or []]
    if not evidence:
        raise ValueError("evidence_judge needs the question's evidence quotes (Reference.extra['evidence'])")
    reply = judge.ask(evidence_prompt(str(extra.get("question", "")), evidence, prediction), max_tokens=5)
    verdict = parse_true_false(reply.text)
    return judged(None if verdict is None else 100.0 * verdict, reply)


PAIRWISE_PENDING = "compared pairwise after the sweep (python -m experiments.pairwise)"


def is_pairwise(metric: str | None) -> bool:
    """Scored by `compare` over two runs' answers, not per answer."""
    return metric == "pairwise_judge"


def pairwise_prompt(question: str, first: str, second: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": PAIRWISE_SYSTEM},
            {"role": "user", "content": f"Question: {question}\n\nAnswer 1: {first}\n\nAnswer 2: {second}\n\n"
                                        "Which answer is better? Reply 1, 2 or tie."}]


_CHOICE = re.compile(r"\b(1|2|tie|one|two|answer\s*1|answer\s*2)\b", re.IGNORECASE)


def parse_choice(text: str | None) -> str | None:
    """"1", "2" or "tie" from the judge's reply (the first such word), None when it names none."""
    if not text:
        return None
    m = _CHOICE.search(text)
    if not m:
        return None
    word = re.sub(r"\s+", " ", m.group(1).lower())
    return {"one": "1", "two": "2", "answer 1": "1", "answer 2": "2", "answer1": "1", "answer2": "2"}.get(word, word)


@dataclass(frozen=True)
class Comparison:
    """One question's pairwise judgment of answer A (the RAG config's) against answer B (long context's)."""

    outcome: str | None  # WIN / TIE / LOSS for A; None: no judgment (a failed call or an unreadable reply)
    a_first: str | None  # the choice with A shown first ("1": A, "2": B, "tie"), None when unreadable
    b_first: str | None  # the choice with B shown first ("1": B, "2": A, "tie")
    flipped: bool  # the two orders preferred different answers (counted as a tie)
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "a_first": self.a_first, "b_first": self.b_first, "flipped": self.flipped,
                "error": self.error}


def outcome_of(a_first: str, b_first: str) -> tuple[str, bool]:
    """A's outcome from the two orders' choices, and whether the preference flipped with the order."""
    prefers = ({"1": "a", "2": "b"}.get(a_first, TIE), {"1": "b", "2": "a"}.get(b_first, TIE))
    if prefers == ("a", "a"):
        return WIN, False
    if prefers == ("b", "b"):
        return LOSS, False
    return TIE, prefers in (("a", "b"), ("b", "a"))


def compare(judge: Judge, question: str, answer_a: str, answer_b: str) -> Comparison:
    """Ask `judge` which answer is better, in both orders (see the module docstring)."""
    first = judge.ask(pairwise_prompt(question, answer_a, answer_b), **PAIRWISE_PARAMS)
    second = judge.ask(pairwise_prompt(question, answer_b, answer_a), **PAIRWISE_PARAMS)
    error = first.error or second.error
    if first.text is None or second.text is None:
        return Comparison(None, None, None, False, error or "no reply")
    a_first, b_first = parse_choice(first.text), parse_choice(second.text)
    if a_first is None or b_first is None:
        bad = first.text if a_first is None else second.text
        return Comparison(None, a_first, b_first, False, f"unreadable reply: {bad[:80]!r}")
    outcome, flipped = outcome_of(a_first, b_first)
    return Comparison(outcome, a_first, b_first, flipped)


def prompt_hash() -> str:
    """Identifies the pairwise prompt (a changed prompt is a new comparison, not a cached one)."""
    return hashlib.sha256((PAIRWISE_SYSTEM + repr(sorted(PAIRWISE_PARAMS.items()))).encode()).hexdigest()[:12]


__all__ = ["Comparison", "EVIDENCE_SYSTEM", "LOSS", "OUTCOME_SCORE", "PAIRWISE_PENDING", "PAIRWISE_SYSTEM", "TIE",
           "WIN", "compare", "evidence_judge", "evidence_prompt", "is_pairwise", "outcome_of", "pairwise_prompt",
           "parse_choice", "prompt_hash"]


@register("pairwise_judge")
def pairwise_judge(prediction: str, ref: Reference) -> MetricValues:
    """Not a per-answer metric: the runner records such answers unscored (`is_pairwise`)."""
    raise ValueError("pairwise_judge compares two arms' answers to one question and cannot score one answer: "
                     "run the sweep, then python -m experiments.pairwise RUN_DIRS --judge-model MODEL")
