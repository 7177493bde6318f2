"""CLongEval's metrics, as its released scoring code (zexuanqiu/CLongEval `metrics.py`, `eval.py`,
`post_processing_for_stacked_tasks.py`) computes them.

| task | metric | what it computes |
| --- | --- | --- |
| long_story_qa, long_conversation_memory | `clongeval_f1` | strip; keep the first line; cut at "问题："; jieba token F1 (punctuation and spaces removed) |
| long_story_summarization | `clongeval_rouge_l` | ROUGE-L F (`rouge` package semantics) on space-joined jieba tokens, no normalisation; empty prediction 0 |
| stacked_news_labeling | `clongeval_news_labeling` | (news id, label) pairs parsed from each line by three patterns; \\|pred set ∩ gold set\\| / gold lines |
| stacked_typo_detection | `clongeval_typo_detection` | (paragraph id, typo) pairs parsed by six line patterns; \\|pred set ∩ gold set\\| / gold lines |
| key_passage_retrieval | `clongeval_kpr_edit` | cut at "键："; punctuation removed; 1 - Levenshtein / max length |
| table_querying | `clongeval_table_match` | punctuation removed; 1 if the answer is contained in the prediction |

Score = 100 x mean per size. The released `eval.py` drops predictions containing "HTTP_ERROR" or
"UNKNOW_ERROR" (API failures) before averaging; `eval.score` does the same in the official variant.

Known bugs of the released code and what the variants do (`Reference.extra["variant"]`):

* **Typo-detection answer reordering.** Gold answers of the released data read
  "paragraph，correct，typo" per line, and the model is asked for "paragraph，typo，correct". For every
  model but GPT-4-Turbo, `eval.py` "reorders" the answer with `answer.split("，")` over the *whole
  multi-line string* and keeps parts 0, 2 and 0, which leaves two gold items: (first paragraph,
  its typo) and a bogus ("<second paragraph id>", "<first paragraph id>"). Every sample is thus
  scored on its first typo only, out of 2. The published numbers come from this; **official**
  reproduces it. GPT-4-Turbo's released prediction files carry answers as "paragraph，typo，correct"
  and were scored without the reordering: set `extra["typo_answer_order"] = "id,typo,correct"`
  (CLI: `--typo-answer-order id,typo,correct`) to score such files as the authors did.
  **strict** reads every gold line in the given order and scores recall of (paragraph, typo) pairs.
* **Typo-detection blank lines.** When a prediction contains a blank line, the released parser
  looks for the multi-line formats in the *last line only* and keeps the intersection with the
  line-by-line pairs, which usually empties it: such predictions score 0. **official** reproduces
  this; **strict** searches the whole prediction for the multi-line formats and takes the union.
* **Crashes.** The released code raises on a prediction that is only ASCII full stops for
  summarization, on empty prediction and answer for key-passage retrieval, and on malformed gold
  lines; here such samples score 0 with a warning.
"""  # noqa: E501 - the task table above cannot be wrapped

from __future__ import annotations

import logging
import re
from collections.abc import Callable

from eval.metrics import register
from eval.metrics.rouge import rouge_l_f
from eval.metrics.text import _cut, f1, remove_punctuation_zh, tokens_zh
from eval.registry import UnknownName
from eval.sample import Reference

log = logging.getLogger(__name__)

CLONGEVAL_TASK_METRIC = {
    "long_story_qa": "clongeval_f1",
    "long_conversation_memory": "clongeval_f1",
    "long_story_summarization": "clongeval_rouge_l",
    "stacked_news_labeling": "clongeval_news_labeling",
    "stacked_typo_detection": "clongeval_typo_detection",
    "key_passage_retrieval": "clongeval_kpr_edit",
    "table_querying": "clongeval_table_match",
}
CLONGEVAL_SIZES = ("small", "medium", "large")
API_ERROR_MARKERS = ("HTTP_ERROR", "UNKNOW_ERROR")


def _variant(ref: Reference) -> str:
    return ref.extra.get("variant", "official") if ref.extra else "official"


def _answer(ref: Reference) -> str:
    return str(ref.answers[0]) if ref.answers else ""


@register("clongeval_f1")
def clongeval_f1(prediction: str, ref: Reference) -> dict[str, float]:
    pred = prediction.strip()
    pred = pred.split("\n")[0]
    cut = pred.find("问题：")
    if cut != -1:
        pred = pred[:cut]
    return {"score": f1(tokens_zh(pred), tokens_zh(_answer(ref)))}


@register("clongeval_rouge_l")
def clongeval_rouge_l(prediction: str, ref: Reference) -> dict[str, float]:
    if prediction == "":
        return {"score": 0.0}
    try:
        value = rouge_l_f(" ".join(_cut(prediction)), " ".join(_cut(_answer(ref))))
    except ValueError as exc:
        log.warning("summary ROUGE-L failed (%s; the released code crashes here): scoring 0", exc)
        value = 0.0
    return {"score": value}


# Output formats the authors observed (label strings of the released post-processing).
_NEWS_PATTERNS = (
    re.compile(r"新闻(\d+)，类别名：(\w+)"),
    re.compile(r"新闻(\d+)，类别名\d+：(\w+)"),
    re.compile(r"新闻\s?(\d+)[，：](\w+)"),
)
_NEWS_GOLD = re.compile(r"新闻\s(\d+)[：](\w+)")


def news_labels(prediction: str) -> list[tuple[str, str]]:
    """(news id, label) per line, by the first of the three patterns found in the line."""
    out = []
    for line in prediction.split("\n"):
        for pattern in _NEWS_PATTERNS:
            m = pattern.search(line)
            if m:
                out.append((m.group(1), m.group(2)))
                break
    return out


@register("clongeval_news_labeling")
def clongeval_news_labeling(prediction: str, ref: Reference) -> dict[str, float]:
    predicted = set(news_labels(prediction.strip()))
    if not predicted:
        return {"score": 0.0}
    gold = []
    for line in _answer(ref).split("\n"):
        m = _NEWS_GOLD.search(line)
        if m is None:
            log.warning("malformed news-labeling gold line %r (the released code crashes): scoring 0", line)
            return {"score": 0.0}
        gold.append((m.group(1), m.group(2)))
    return {"score": len(predicted & set(gold)) / len(gold)}


_TYPO_LINE_PATTERNS = (
    re.compile(r"段落ID：(\d+)[，,]错别字\d+，(\w+)[，,]正确字\d+，(\w+)"),
    re.compile(r"段落ID：(\d+)[，,]错别字，(\w+)[，,]正确字，(\w+)"),
    re.compile(r"段落ID：(\d+)[，,]错别字：(\w+)[，,]正确字：(\w+)"),
    re.compile(r"段落ID：(\d+)[，,]错别字\d+，(\w+)[，,](\w+)"),
    re.compile(r"段落ID：(\d+)[，,](\w+)[，,](\w+)"),
    re.compile(r"(\d+)[，,](\w+)[，,](\w+)"),
)
_TYPO_BLOCK_PATTERNS = (
    re.compile(r"段落ID：(\d+)\n错别字：(\w)\n正确字：(\w)"),
    re.compile(r"段落ID：(\d+)\n错别字：(\w)，正确字：(\w)"),
)


def typo_triples(prediction: str, strict: bool = False) -> list[tuple[str, str, str]]:
    """(paragraph id, typo, correct) found in a prediction, as the released parser finds them."""
    found: list[tuple[str, str, str]] = []
    line = ""
    for line in prediction.split("\n"):
        paren = line.find("（")
        if paren != -1:
            line = line[:paren]
        for pattern in _TYPO_LINE_PATTERNS:
            m = pattern.search(line)
            if m:
                found.append((m.group(1), m.group(2), m.group(3)))
                break
    if len(prediction.split("\n\n")) == 1:
        return found
    if strict:
        blocks = {t for p in _TYPO_BLOCK_PATTERNS for t in p.findall(prediction)}
        return list(dict.fromkeys(found + sorted(blocks)))
    # Released behaviour: block formats are searched in the last line only, first pattern that
    # matches, and only pairs found both ways are kept.
    alternative = set()
    for pattern in _TYPO_BLOCK_PATTERNS:
        m = pattern.search(line)
        if m:
            alternative.add((m.group(1), m.group(2), m.group(3)))
            break
    return list(set(found) & alternative)


def _first_two(item: str) -> str:
    return "".join(item.split("，")[0:2])


@register("clongeval_typo_detection")
def clongeval_typo_detection(prediction: str, ref: Reference) -> dict[str, float]:
    strict = _variant(ref) == "strict"
    order = (ref.extra or {}).get("typo_answer_order", "id,correct,typo")
    if order not in ("id,correct,typo", "id,typo,correct"):
        raise ValueError(f"typo_answer_order must be 'id,correct,typo' or 'id,typo,correct', not {order!r}")
    triples = typo_triples(prediction.strip(), strict=strict)
    if not triples:
        return {"score": 0.0}
    predicted = {p + t for p, t, _c in triples}
    answer = _answer(ref)
    if strict:
        gold = []
        for line in answer.strip().split("\n"):
            parts = line.split("，")
            if len(parts) < 3:
                log.warning("malformed typo gold line %r: skipped", line)
                continue
            gold.append(parts[0] + (parts[2] if order == "id,correct,typo" else parts[1]))
        if not gold:
            return {"score": 0.0}
        return {"score": len(predicted & set(gold)) / len(gold)}
    if order == "id,correct,typo":
        parts = answer.split("，")
        if len(parts) < 3:
            log.warning("malformed typo answer %r (the released code crashes): scoring 0", answer)
            return {"score": 0.0}
        answer = "，".join([parts[0], parts[2], parts[0]])
    gold = [_first_two(item) for item in answer.strip().split("\n")]
    return {"score": len(predicted & set(gold)) / len(gold)}


def levenshtein(a: str, b: str) -> int:
    try:
        from rapidfuzz.distance import Levenshtein
    except ImportError:  # pure-Python fallback, same unit costs
        if len(a) < len(b):
            a, b = b, a
        previous = list(range(len(b) + 1))
        for i, ca in enumerate(a, 1):
            current = [i]
            for j, cb in enumerate(b, 1):
                current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
            previous = current
        return previous[-1]
    return Levenshtein.distance(a, b)


@register("clongeval_kpr_edit")
def clongeval_kpr_edit(prediction: str, ref: Reference) -> dict[str, float]:
    cut = prediction.find("键：")
    if cut != -1:
        prediction = prediction[:cut]
    pred, gold = remove_punctuation_zh(prediction), remove_punctuation_zh(_answer(ref))
    longest = max(len(pred), len(gold))
    if longest == 0:
        if _variant(ref) == "strict":
            return {"score": 1.0}
        log.warning("empty prediction and answer (the released code crashes): scoring 0")
        return {"score": 0.0}
    return {"score": 1.0 - levenshtein(pred, gold) / longest}


@register("clongeval_table_match")
def clongeval_table_match(prediction: str, ref: Reference) -> dict[str, float]:
    gold = remove_punctuation_zh(_answer(ref))
    return {"score": 1.0 if gold in remove_punctuation_zh(prediction) else 0.0}


def clongeval_metric(task: str) -> str:
    try:
        return CLONGEVAL_TASK_METRIC[task]
    except KeyError:
        raise UnknownName(f"unknown CLongEval task {task!r}; known: {', '.join(CLONGEVAL_TASK_METRIC)}") from None


def is_api_error(prediction: str) -> bool:
    return any(marker in prediction for marker in API_ERROR_MARKERS)


def excluded_in(variant: str) -> Callable[[str], str | None]:
    """Why a prediction file's line is left out of the scores (`Rescoring.excluded`): in the official variant an
    API error message ("api_error"), as the released eval.py drops it; None: it is scored."""
    return lambda prediction: "api_error" if variant == "official" and is_api_error(prediction) else None
