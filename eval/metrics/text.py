"""Text normalisation and bag-of-token F1, the building blocks of the QA metrics.

English follows the SQuAD normalisation used by LongBench and LV-Eval (lower case, drop ASCII
punctuation, then the articles a/an/the, collapse whitespace). Chinese uses jieba precise-mode
tokens, each lower-cased with ASCII and Chinese punctuation and all whitespace removed; tokens
left empty are dropped (LV-Eval, CLongEval and LongBench all do this the same way).
"""

from __future__ import annotations

import logging
import re
import string
from collections import Counter
from functools import lru_cache

# The Chinese punctuation string of the LongBench normaliser, which LV-Eval and CLongEval reuse
# verbatim (note it includes the ASCII full stop).
CN_PUNCTUATION = (
    "！？｡。＂＃＄％＆＇（）＊＋，－／：；＜＝＞＠［＼］＾＿｀｛｜｝～｟｠｢｣､、〃》「」『』【】〔〕〖〗〘〙〚〛〜〝〞〟〰〾〿–—‘’‛“”„‟…‧﹏."
)
_EN_PUNCT = frozenset(string.punctuation)
_ZH_PUNCT = frozenset(string.punctuation + CN_PUNCTUATION)
_EN_PUNCT_TABLE = str.maketrans("", "", string.punctuation)
_ZH_PUNCT_TABLE = str.maketrans("", "", "".join(sorted(_ZH_PUNCT)))
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_en(text: str) -> str:
    """SQuAD normalisation: lower, strip ASCII punctuation, drop articles, collapse whitespace."""
    text = text.lower().translate(_EN_PUNCT_TABLE)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def remove_punctuation_zh(text: str) -> str:
    """Remove ASCII and Chinese punctuation (case and whitespace untouched)."""
    return text.translate(_ZH_PUNCT_TABLE)


def normalize_zh(text: str) -> str:
    """Lower, strip ASCII and Chinese punctuation, remove every whitespace character."""
    return "".join(remove_punctuation_zh(text.lower()).split())


@lru_cache(maxsize=1)
def _jieba():
    import jieba

    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()
    return jieba


@lru_cache(maxsize=65536)
def _cut(text: str) -> tuple[str, ...]:
    return tuple(_jieba().cut(text, cut_all=False))


def jieba_tokens(text: str) -> list[str]:
    """jieba precise-mode tokens (HMM on, as `jieba.cut(text, cut_all=False)`), unnormalised."""
    return list(_cut(text))


def tokens_en(text: str) -> list[str]:
    return normalize_en(text).split()


def tokens_zh(text: str) -> list[str]:
    return [t for t in (normalize_zh(tok) for tok in _cut(text)) if t]


def tokens(text: str, language: str) -> list[str]:
    return tokens_zh(text) if language == "zh" else tokens_en(text)


def f1(prediction_tokens: list[str], reference_tokens: list[str]) -> float:
    """Bag-of-token F1; 0 when nothing overlaps (so also when either side is empty)."""
    common = Counter(prediction_tokens) & Counter(reference_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(prediction_tokens)
    recall = same / len(reference_tokens)
    return 2 * precision * recall / (precision + recall)
