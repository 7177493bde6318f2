"""Text normalisation and bag-of-token F1, the building blocks of the QA metrics.

English follows the SQuAD normalisation used by LongBench and LV-Eval (lower case, drop
punctuation and the articles a/an/the, collapse whitespace). Chinese uses jieba precise-mode
tokens with punctuation and whitespace removed from each token.
"""

from __future__ import annotations

import logging
import re
import string
from collections import Counter
from functools import lru_cache

_EN_PUNCT = set(string.punctuation)
# Chinese punctuation as the LongBench / LV-Eval normaliser lists it, plus ASCII punctuation.
_ZH_PUNCT = set(
    "！？｡。＂＃＄％＆＇（）＊＋，－／：；＜＝＞＠［＼］＾＿｀｛｜｝～｟｠｢｣､、〃》「」『』【】〔〕〖〗〘〙〚〛〜〝〞〟〰〾〿–—‘’‛“”„‟…‧﹏."
) | _EN_PUNCT
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_en(text: str) -> str:
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _EN_PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def normalize_zh(text: str) -> str:
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _ZH_PUNCT)
    return "".join(text.split())


@lru_cache(maxsize=1)
def _jieba():
    import jieba

    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()
    return jieba


def jieba_tokens(text: str) -> list[str]:
    return list(_jieba().cut(text, cut_all=False))


def tokens_en(text: str) -> list[str]:
    return normalize_en(text).split()


def tokens_zh(text: str) -> list[str]:
    return [t for t in (normalize_zh(tok) for tok in jieba_tokens(text)) if t]


def tokens(text: str, language: str) -> list[str]:
    return tokens_zh(text) if language == "zh" else tokens_en(text)


def f1(prediction_tokens: list[str], reference_tokens: list[str]) -> float:
    common = Counter(prediction_tokens) & Counter(reference_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(prediction_tokens)
    recall = same / len(reference_tokens)
    return 2 * precision * recall / (precision + recall)
