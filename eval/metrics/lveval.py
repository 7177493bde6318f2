"""LV-Eval's QA metrics: token F1 behind a keyword-recall gate.

With answer keywords, the share of keyword tokens found in the prediction (blacklisted words do
not count as matches) must reach a threshold, or the score is 0; past the gate the score is plain
token F1 against the first answer. The released code uses 0.2 for English and 0.4 for Chinese
(the paper states them the other way round; the code produced the published numbers).
"""

from __future__ import annotations

import logging
from collections import Counter

from eval.metrics import register
from eval.metrics.text import f1, tokens
from eval.sample import Reference

log = logging.getLogger(__name__)

GATE_THRESHOLD = {"en": 0.2, "zh": 0.4}

# Words that do not count as keyword matches (LV-Eval's released blacklists, abridged in this
# first version; the full lists arrive with the complete metric module).
BLACKLIST = {
    "en": {"the", "and", "to", "of", "a", "in", "is", "was", "for", "on", "with", "as", "by"},
    "zh": {"的", "和", "是", "在", "了", "与", "及", "或", "一个"},
}


def keyword_recall(prediction: str, keywords: str, language: str) -> float | None:
    """Share of keyword tokens matched by the prediction; None when keywords normalise to nothing."""
    kw = tokens(keywords, language)
    if not kw:
        return None
    common = Counter(tokens(prediction, language)) & Counter(kw)
    matched = sum(n for word, n in common.items() if word not in BLACKLIST[language])
    return matched / len(kw)


@register("qa_f1")
def qa_f1(prediction: str, ref: Reference) -> dict[str, float]:
    """Plain token F1 against the first answer (English or jieba-Chinese by the reference's language)."""
    answer = ref.answers[0] if ref.answers else ""
    return {"score": f1(tokens(prediction, ref.language), tokens(answer, ref.language))}


@register("lveval_gated_f1")
def lveval_gated_f1(prediction: str, ref: Reference) -> dict[str, float]:
    answer = ref.answers[0] if ref.answers else ""
    keywords = ref.answer_keywords
    if not keywords and ref.language == "zh":
        keywords = answer  # Chinese datasets without keywords gate on the answer itself
    plain = f1(tokens(prediction, ref.language), tokens(answer, ref.language))
    if keywords:
        recall = keyword_recall(prediction, keywords, ref.language)
        if recall is None:
            log.warning("answer keywords %r normalise to nothing: scoring 0", keywords)
            return {"score": 0.0, "f1": plain, "keyword_recall": 0.0}
        if recall < GATE_THRESHOLD[ref.language]:
            return {"score": 0.0, "f1": plain, "keyword_recall": recall}
        return {"score": plain, "f1": plain, "keyword_recall": recall}
    return {"score": plain, "f1": plain}
