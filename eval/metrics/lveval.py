"""LV-Eval's metrics, as its released scoring code (infinigence/LVEval `metrics.py`, `config.py`,
`evaluation.py`) computes them.

Per dataset (`LVEVAL_DATASET_METRIC`):

* English QA (hotpotwikiqa, loogle_SD/CR/MIR, multifieldqa_en): `lveval_gated_f1`. SQuAD-normalised
  whitespace tokens. With answer keywords, keyword recall = (keyword tokens matched by the
  prediction, bag intersection, *blacklisted words not counted*) / (all keyword tokens); below
  **0.2** the score is 0, otherwise plain F1 against the first answer (the blacklist does not touch
  the F1). Without keywords: plain F1.
* Chinese QA (multifieldqa_zh, cmrc, lic): the same with jieba tokens and a **0.4** threshold;
  without keywords (empty or missing) the answer itself serves as keywords.
  (The paper states the thresholds the other way round; the code produced the published numbers.)
* factrecall_en / factrecall_zh: plain F1 (`qa_f1`). The released code also has recall-only
  variants, which it does not use.
* dureader: `lveval_rouge_zh`: jieba-tokenise, join with spaces, tokenise that string again with
  jieba, normalise every token, drop blacklisted tokens (empty tokens stay), join with spaces,
  ROUGE-L F of the `rouge` package (see `eval.metrics.rouge`); any error there scores 0.

Only the first answer is scored. Aggregation: 100 x mean per dataset and level, rounded to
2 decimals; overall = unweighted mean over datasets (`aggregate_lveval`).

Variants (`Reference.extra["variant"]`):

* official (default): keywords that normalise to no token make the released code divide by zero
  (it crashes); here such a sample scores 0 with a warning, the closest reproducible behaviour.
* strict: such a sample has no usable keywords, so the gate is skipped and plain F1 is scored.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from eval.answers import Answer
from eval.metrics import register
from eval.metrics.aggregate import percent
from eval.metrics.rouge import rouge_l_f
from eval.metrics.text import _cut, f1, normalize_zh, tokens
from eval.registry import UnknownName
from eval.sample import Reference, level_sort_key

log = logging.getLogger(__name__)

GATE_THRESHOLD = {"en": 0.2, "zh": 0.4}

# The two word lists of LV-Eval's released `metrics.py` (ABANDON_WORDS_EN / ABANDON_WORDS_ZH),
# reproduced as data. A keyword token in these lists never counts as matched.
BLACKLIST_EN = frozenset(
    "and to of in her was with for it from is that his he by she they or at because be on are "
    "their what as had were about being this who but have has when which does".split()
)
BLACKLIST_ZH = frozenset(
    [
        "的", "和", "是", "等", "在", "年", "可以", "为", "与", "‰", "了", "或", "一种", "月", "c",
        "至", "日", "有", "进行", "于", "不", "中", "×", "根据", "小", "由", "亩", "也", "要", "指",
        "法", "会", "元", "主要", "以及", "通过", "首先", "对", "然后", "号", "以", "所", "后", "丁",
        "包括", "无", "将", "用", "能", "形", "方面", "因素", "位于", "而", "从", "到", "一定",
        "用于", "但", "使用", "让", "具有", "并", "亿元", "万元", "上", "类", "基于", "才", "来",
        "地", "片", "其他", "个", "或者", "变得", "时", "给", "你", "使", "条", "受", "已经", "带",
        "度",
    ]
)
BLACKLIST = {"en": BLACKLIST_EN, "zh": BLACKLIST_ZH}

LVEVAL_DATASETS = {
    "hotpotwikiqa_mixup": "en",
    "loogle_SD_mixup": "en",
    "loogle_CR_mixup": "en",
    "loogle_MIR_mixup": "en",
    "multifieldqa_en_mixup": "en",
    "multifieldqa_zh_mixup": "zh",
    "factrecall_en": "en",
    "factrecall_zh": "zh",
    "cmrc_mixup": "zh",
    "lic_mixup": "zh",
    "dureader_mixup": "zh",
}
LVEVAL_DATASET_METRIC = {
    "hotpotwikiqa_mixup": "lveval_gated_f1",
    "loogle_SD_mixup": "lveval_gated_f1",
    "loogle_CR_mixup": "lveval_gated_f1",
    "loogle_MIR_mixup": "lveval_gated_f1",
    "multifieldqa_en_mixup": "lveval_gated_f1",
    "multifieldqa_zh_mixup": "lveval_gated_f1",
    "factrecall_en": "qa_f1",
    "factrecall_zh": "qa_f1",
    "cmrc_mixup": "lveval_gated_f1",
    "lic_mixup": "lveval_gated_f1",
    "dureader_mixup": "lveval_rouge_zh",
}
LVEVAL_LEVELS = ("16k", "32k", "64k", "128k", "256k")
_LEVEL_SUFFIX = re.compile(r"_.{1,3}k")


def lveval_dataset(task: str) -> str:
    """The dataset name of a task or config name (`cmrc_mixup_16k` -> `cmrc_mixup`)."""
    name = _LEVEL_SUFFIX.split(task)[0]
    if name not in LVEVAL_DATASETS:
        raise UnknownName(f"unknown LV-Eval dataset {task!r}; known: {', '.join(LVEVAL_DATASETS)}")
    return name


def lveval_level(task: str) -> str:
    m = re.search(r"_(\d{1,3}k)$", task)
    return m.group(1) if m else ""


def keyword_recall(prediction_tokens: list[str], keyword_tokens: list[str], language: str) -> float:
    """Share of keyword tokens matched by the prediction; blacklisted matches do not count."""
    common = Counter(prediction_tokens) & Counter(keyword_tokens)
    blacklist = BLACKLIST[language]
    matched = sum(n for word, n in common.items() if word not in blacklist)
    return matched / len(keyword_tokens)


def _variant(ref: Reference) -> str:
    return ref.extra.get("variant", "official") if ref.extra else "official"


@register("qa_f1")
def qa_f1(prediction: str, ref: Reference) -> dict[str, float]:
    """Plain token F1 against the first answer (English or jieba-Chinese by the reference's language)."""
    answer = str(ref.answers[0]) if ref.answers else ""  # a text: alternatives are refused at load
    return {"score": f1(tokens(prediction, ref.language), tokens(answer, ref.language))}


@register("lveval_gated_f1")
def lveval_gated_f1(prediction: str, ref: Reference) -> dict[str, float]:
    language = "zh" if ref.language == "zh" else "en"
    answer = str(ref.answers[0]) if ref.answers else ""  # a text: alternatives are refused at load
    pred_tokens = tokens(prediction, language)
    plain = f1(pred_tokens, tokens(answer, language))
    keywords = ref.answer_keywords
    if not keywords and language == "zh":
        keywords = answer  # Chinese datasets without keywords gate on the answer itself
    if not keywords:
        return {"score": plain, "f1": plain}
    kw_tokens = tokens(keywords, language)
    if not kw_tokens:
        if _variant(ref) == "strict":
            return {"score": plain, "f1": plain}
        log.warning("answer keywords %r normalise to nothing (the released code crashes): scoring 0", keywords)
        return {"score": 0.0, "f1": plain, "keyword_recall": 0.0}
    recall = keyword_recall(pred_tokens, kw_tokens, language)
    gated = plain if recall >= GATE_THRESHOLD[language] else 0.0
    return {"score": gated, "f1": plain, "keyword_recall": recall}


def _dureader_text(text: str) -> str:
    retokenised = _cut(" ".join(_cut(text)))
    kept = [t for t in (normalize_zh(tok) for tok in retokenised) if t not in BLACKLIST_ZH]
    return " ".join(kept)


@register("lveval_rouge_zh")
def lveval_rouge_zh(prediction: str, ref: Reference) -> dict[str, float]:
    """dureader: ROUGE-L F on jieba tokens with the Chinese blacklist removed (0 on any error)."""
    answer = str(ref.answers[0]) if ref.answers else ""  # a text: alternatives are refused at load
    try:
        value = rouge_l_f(_dureader_text(prediction), _dureader_text(answer))
    except ValueError:
        value = 0.0
    return {"score": value}


def lveval_metric(task: str) -> str:
    return LVEVAL_DATASET_METRIC[lveval_dataset(task)]


def lveval_reference(task: str, answers: list[Answer], answer_keywords: str | None,
                     variant: str = "official") -> Reference:
    dataset = lveval_dataset(task)
    return Reference(
        answers=list(answers),
        answer_keywords=answer_keywords,
        language=LVEVAL_DATASETS[dataset],
        task=dataset,
        extra={"variant": variant},
    )


def aggregate_lveval(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """LV-Eval's table from per-sample records with `task` (dataset, optionally `_16k`-suffixed),
    optional `length_level`, and `score` in 0..1.

    Returns `per_dataset` {dataset: {level: score}} (100 x mean, 2 decimals), `per_level`
    {level: unweighted mean over the datasets present}, `per_dataset_mean` {dataset: mean over its
    levels} and `overall` (unweighted mean over datasets of their level means).
    """
    groups: dict[str, dict[str, list[float]]] = {}
    for rec in records:
        task = str(rec["task"])
        dataset = lveval_dataset(task)
        level = str(rec.get("length_level") or lveval_level(task) or "all")
        groups.setdefault(dataset, {}).setdefault(level, []).append(float(rec["score"]))
    per_dataset = {
        ds: {lvl: percent(vals) for lvl, vals in sorted(levels.items(), key=lambda kv: level_sort_key(kv[0]))}
        for ds, levels in groups.items()
    }
    levels = sorted({lvl for d in per_dataset.values() for lvl in d}, key=level_sort_key)
    per_level = {
        lvl: round(sum(d[lvl] for d in per_dataset.values() if lvl in d)
                   / sum(1 for d in per_dataset.values() if lvl in d), 2)
        for lvl in levels
    }
    per_dataset_mean = {ds: round(sum(d.values()) / len(d), 2) for ds, d in per_dataset.items()}
    overall = round(sum(per_dataset_mean.values()) / len(per_dataset_mean), 2) if per_dataset_mean else float("nan")
    return {"per_dataset": per_dataset, "per_level": per_level, "per_dataset_mean": per_dataset_mean,
            "overall": overall}

