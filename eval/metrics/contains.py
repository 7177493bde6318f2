"""`contains_all`: every reference answer appears in the prediction (the idea of RULER's
`string_match_all` for its needle tasks, Hsieh et al., 2024, "RULER: What's the Real Context
Size of Your Long-Context Language Models?"; written here from that description, not copied).

A small instruction-tuned model answers in sentences ("The main export of Gritran is dried
figs."): token F1 against the short answer ("dried figs") stays well below 1 for a right answer,
so nothing would count as correct. Containment scores such an answer 1.

Normalisation is the text module's: English lower-cased, ASCII punctuation and the articles
a/an/the dropped, whitespace collapsed, and an answer must match whole words (the synthetic
benchmark's confusing names differ by one letter, so "Tamir" must not match "Tamira");
Chinese lower-cased with ASCII and Chinese punctuation and all whitespace removed, matched as a
substring (no word splitting). With several answers, every one must be contained; an answer that lists
alternatives (`["twice", "2"]`, eval/answers.py) is contained when any of them is; a reference with no
non-empty answer scores 0. Secondary value: the share of answers contained.
"""

from __future__ import annotations

from eval.answers import answer_groups
from eval.metrics import register
from eval.metrics.text import normalize_en, normalize_zh
from eval.sample import Reference


def contained(prediction: str, answer: str, language: str) -> bool:
    if language == "zh":
        a = normalize_zh(answer)
        return bool(a) and a in normalize_zh(prediction)
    a = normalize_en(answer)
    return bool(a) and f" {a} " in f" {normalize_en(prediction)} "


def all_answers_found(prediction: str, ref: Reference, found) -> dict[str, float]:
    """1 when `found(prediction, answer, language)` holds for every non-blank answer (0 without any), an answer
    that lists alternatives holding when any of them does, and the share of answers found: the rule of every
    "contains all answers" metric, whatever "found" means."""
    language = "zh" if ref.language == "zh" else "en"
    groups = answer_groups(ref.answers)
    if not groups:
        return {"score": 0.0, "contains_share": 0.0}
    hits = [any(found(prediction, a, language) for a in alts) for alts in groups]
    return {"score": float(all(hits)), "contains_share": sum(hits) / len(hits)}


@register("contains_all", alternatives=True)
def contains_all(prediction: str, ref: Reference) -> dict[str, float]:
    return all_answers_found(prediction, ref, contained)


@register("synthetic_contains_all")
def synthetic_contains_all(prediction: str, ref: Reference) -> dict[str, float]:
    """The synthetic benchmark's primary metric: `contains_all`, with LV-Eval's keyword-gated F1
    (the metric it used before) kept as the secondary values `f1_gated` and `f1`."""
    from eval.metrics.lveval import lveval_gated_f1

    values = contains_all(prediction, ref)
    gated = lveval_gated_f1(prediction, ref)
    values.update(f1_gated=gated["score"], f1=gated["f1"])
    return values
