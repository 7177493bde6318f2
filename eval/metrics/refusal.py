"""Does an answer say that the document does not hold the answer? The score of a question the document
cannot answer.

`is_refusal(prediction)` recognises the ways models decline: "The text does not mention ...", "... is not
stated", "There is no information ...", "cannot be determined", in English, and 没有提到 / 未提及 / 无法回答 /
没有相关信息 ... in Chinese. LaRA's judge-free `lara_auto` credits a refusal on its hallucination questions with it;
`refusal` is the metric of `benchmark=corpus` questions labelled `task: unanswerable` (`python -m testset`
writes them: a natural question about something the document names but does not state), where declining is
the right answer and any other answer is a made-up one.
"""

from __future__ import annotations

import re

from eval.answers import answer_texts
from eval.metrics import register
from eval.sample import Reference

_SOURCE = (r"(?:text|document|book|novel|story|passage|excerpt|paper|article|statement|report|filing|context|"
           r"chunk|material|content|source|information|narrative|data)s?")
_REPORT = (r"(?:mention|provide|discuss|specify|address|propose|explore|compare|describe|suggest|examine|detail|"
           r"outline|delve|cover|disclose|present|include|list|state|say|contain|indicate|give|reveal|report|offer|"
           r"explain|identify|name|reference|cite|talk|touch|elaborate|note|show|clarify|record|feature|analy[sz]e)")
_REPORTED = (r"(?:mentioned|provided|discussed|specified|stated|given|described|detailed|disclosed|addressed|"
             r"included|found|available|covered|reported|listed|indicated|revealed|explained|identified|named|"
             r"known|clear|presented|documented|recorded|outlined|explored|referenced|noted|shown)")
_REFUSAL = re.compile("|".join([
    # "The text does not mention ...", "Paper 2 doesn't discuss ...", "the chunks do not provide ..."
    rf"\b{_SOURCE}\b[^.;!?\n]{{0,80}}?\b(?:does|do|did|is|are|was|were|has|have|can|could)\s*(?:not|n[o']t)\b"
    rf"(?:\s+\w+){{0,3}}?\s+{_REPORT}",
    # "... is not mentioned", "not explicitly stated", "was never specified"
    rf"\b(?:not|never)\s+(?:\w+\s+){{0,2}}?{_REPORTED}\b",
    # "There is no information", "no specific details", "provides no mention"
    r"\bno\s+(?:\w+\s+){0,2}?(?:information|mention|details?|data|indication|evidence|reference|record|"
    r"description|specifics|discussion)\b",
    # "There is no backstory provided"
    r"\bthere(?:\s+(?:is|are|was|were)|'s)\s+no\s+(?:\w+\s+){0,3}?(?:provided|mentioned|given|specified|stated|"
    r"described|detailed|disclosed|available)\b",
    # "cannot be determined", "unable to find", "it is impossible to say"
    r"\b(?:cannot|can't|can not|could not|couldn't|unable to|impossible to|not possible to)\s+(?:\w+\s+){0,3}?"
    r"(?:determine|determined|answer|answered|find|found|locate|located|identify|identified|tell|say|confirm|"
    r"confirmed|infer|inferred|know|known|ascertain|ascertained)\b",
    r"\b(?:i|we)\s+(?:do not|don't|did not|didn't)\s+(?:know|have)\b",
    r"\b(?:not enough|insufficient|no sufficient)\s+(?:\w+\s+)?(?:information|details|data|context|evidence)\b",
]), re.IGNORECASE)


def is_refusal(prediction: str | None) -> bool:
    """The prediction says the document (text, paper, statement, chunks ...) does not hold the answer."""
    return prediction is not None and _REFUSAL.search(prediction) is not None


_REFUSAL_ZH = re.compile(
    r"(?:没有|未|并未|没)(?:有)?(?:提到|提及|说明|给出|提供|记载|涉及|明确|写明|指出)|无法(?:回答|确定|得知|判断|找到)|"
    r"(?:没有|缺乏|并无|无)(?:相关|足够|具体)?(?:信息|资料|内容|记录)|不清楚|不得而知")


def is_refusal_zh(prediction: str | None) -> bool:
    """The Chinese counterpart of `is_refusal`."""
    return prediction is not None and _REFUSAL_ZH.search(prediction) is not None


@register("refusal", alternatives=True)
def refusal(prediction: str, ref: Reference) -> dict[str, float]:
    """1 when the answer declines (says the document does not hold it, or answers with the reference's own
    marker, e.g. `unanswerable`), else 0: a question the document cannot answer."""
    marked = any(a.strip().lower() in (prediction or "").lower() for a in answer_texts(ref.answers))
    declined = is_refusal(prediction) or is_refusal_zh(prediction) or marked
    return {"score": float(declined), "refusal": float(declined)}
