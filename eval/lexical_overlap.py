"""Lexical overlap of a question with its evidence: how much of the question is the evidence's own words.

NoLiMa (Modarressi et al., 2025) showed that questions repeating the words of the passage that answers
them flatter lexical retrieval (BM25 finds the passage by those words) and make a task easier than real
questions are; so a report shows recall and score by overlap bucket, for generated and given questions
alike.

`lexical_overlap(question, evidence_texts, language)` is the share of the question's *content words*
found in the evidence, 0..1:

- English: SQuAD-normalised word tokens (`eval.metrics.text.tokens_en`: lower case, no punctuation, no
  articles), stop words removed (NLTK's English list as bm25s ships it, plus question and filler words:
  `what`, `which`, `many`, `according`, ...); a word counts as found when the evidence has the same token.
- Chinese: jieba precise-mode words (`eval.metrics.text.tokens_zh`), stop words removed (bm25s' Chinese
  list plus question words such as 什么, 哪, 多少); a word counts as found when it occurs as a substring of
  the evidence's normalised text, so a different segmentation of the evidence does not hide it.

Each distinct content word counts once. A question with no content word has overlap 0.0.
`overlap_bucket(value)` puts a value in one of the fixed `BUCKETS`: `low` (< 0.3), `mid` (< 0.6), `high`.
"""

from __future__ import annotations

from functools import lru_cache

from eval.metrics.text import normalize_zh, tokens_en, tokens_zh

BUCKETS = ("low", "mid", "high")
BUCKET_EDGES = (0.3, 0.6)  # low < 0.3 <= mid < 0.6 <= high

_EN_EXTRA = ("what", "which", "who", "whom", "whose", "when", "where", "why", "how", "many", "much", "according",
             "text", "passage", "document", "mentioned", "mention", "described", "say", "says", "said", "also",
             "would", "could", "one", "ones", "kind", "type", "name", "named")
_ZH_EXTRA = ("什么", "哪", "哪个", "哪些", "哪里", "哪儿", "谁", "多少", "几", "为什么", "怎么", "怎样", "如何", "是否",
             "吗", "呢", "的", "了", "是", "在", "有", "和", "与", "及", "根据", "文中", "文章", "文档", "提到", "所述")


@lru_cache(maxsize=1)
def _stop_words() -> tuple[frozenset[str], frozenset[str]]:
    """(English, Chinese) stop words: bm25s' lists and the question words above."""
    from bm25s.stopwords import STOPWORDS_CHINESE, STOPWORDS_EN_PLUS

    english = {w for word in STOPWORDS_EN_PLUS for w in tokens_en(word)} | set(_EN_EXTRA)
    return frozenset(english), frozenset(STOPWORDS_CHINESE) | frozenset(_ZH_EXTRA)


def content_words(text: str, language: str) -> list[str]:
    """The distinct content words of `text`, in order of first occurrence."""
    english, chinese = _stop_words()
    words = tokens_zh(text) if language == "zh" else tokens_en(text)
    stop = chinese if language == "zh" else english
    return list(dict.fromkeys(w for w in words if w not in stop))


@lru_cache(maxsize=64)
def _evidence_view(text: str, language: str) -> frozenset[str] | str:
    """What a word is looked up in: the token set (English) or the normalised text (Chinese)."""
    return normalize_zh(text) if language == "zh" else frozenset(tokens_en(text))


def lexical_overlap(question: str, evidence_texts: list[str] | tuple[str, ...], language: str) -> float:
    """The share (0..1) of the question's distinct content words found in any of `evidence_texts`."""
    words = content_words(question, language)
    if not words:
        return 0.0
    views = [_evidence_view(t, language) for t in evidence_texts if t]
    found = sum(1 for w in words if any(w in v for v in views))
    return round(found / len(words), 4)


def overlap_bucket(value: float) -> str:
    """`low` (< 0.3), `mid` (< 0.6) or `high`."""
    for edge, name in zip(BUCKET_EDGES, BUCKETS[:-1], strict=True):  # the last bucket, above every edge, is the rest
        if value < edge:
            return name
    return BUCKETS[-1]


__all__ = ["BUCKETS", "BUCKET_EDGES", "content_words", "lexical_overlap", "overlap_bucket"]
