"""LLM judges through any OpenAI-compatible endpoint (OpenAI, a vLLM server, ...), with a disk cache.

* `loong_judge`: Loong's judge (MozerWang/Loong `src/utils/prompt.py` `get_evaluate_prompts`; the
  prompt text below is reproduced from there). One user message, temperature 0; the judge explains
  and ends with "Rating: [[score]]", 1-100. Avg Score = mean over *parsable* judgments; Perfect
  Rate = share of parsable judgments equal to 100 (`src/utils/metric.py`). Unparsable and failed
  judgments are counted and reported, never scored as 0.
* `loogle_judge`: LooGLE's GPT-4 judge (bigai-nlco/LooGLE `Evaluation/llm_score.py`, prompts
  reproduced): True/False for QA (accuracy = True / (True + False)), a 0-100 score for summaries;
  temperature 0, top_p 1, max_tokens 10.

Score parsing: Loong's released parser takes the first "[[x]]", else the first "[x]"; here the same
order, tolerating spaces inside the brackets and falling back to "Rating: x"; values outside
0..100 are unparsable. LooGLE's released code compares the reply to "True"/"False" exactly (and
calls `int()` on summary replies); here case, surrounding punctuation and extra words after the
first one are tolerated.

Asking the model is not done here: a `Judge` is handed an `Ask` (messages and sampling parameters
-> reply text, raising on failure), built by a layer that may use llm/ (llm/judge_backend.py `build_judge`:
the OpenAI-compatible backend with its retries, whole-attempt timeouts and key handling), wired
up by experiments/run.py and by the `experiments.score` CLI's judge factory. The judge metrics take the
judge as an argument (`eval.metrics.score(name, prediction, reference, judge=...)`); no module
state. A judgment that could not be had comes back as `eval.metrics.NoJudgment` (`judged` builds
it): a failed call with its reason (the error type and HTTP status of the underlying error, never
the key or the request), or an unparsable reply with an excerpt of it.

Judgments are cached in SQLite (`eval.storage`: WAL, lock retries, a checksum per entry, a
damaged file moved aside), keyed by the SHA-256 of the judge model, the messages and the sampling
parameters; failed calls are not cached, and a cache that fails is logged and bypassed, never a
failed judgment.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from eval.metrics import MetricValues, NoJudgment, register
from eval.sample import Reference
from eval.storage import JSONCache

log = logging.getLogger(__name__)

LOONG_JUDGE_PROMPT = '''[Question]
{}

[Gold Answer]
{}

[The Start of Assistant's Predicted Answer]
{}
[The End of Assistant's Predicted Answer]

[System]
We would like to request your feedback on the performance of the AI assistant in response to the user question displayed above according to the gold answer. Please use the following listed aspects and their descriptions as evaluation criteria:
    - Accuracy and Hallucinations: The assistant's answer is semantically consistent with the gold answer; The numerical value and order need to be accurate, and there should be no hallucinations.
    - Completeness: Referring to the reference answers, the assistant's answer should contain all the key points needed to answer the user's question; further elaboration on these key points can be omitted.
Please rate whether this answer is suitable for the question. Please note that the gold answer can be considered as a correct answer to the question.

The assistant receives an overall score on a scale of 1 to 100, where a higher score indicates better overall performance.
Please note that if the assistant's answer and the gold answer fully meet the above criteria, its overall rating should be the full marks (100).
Please first provide a comprehensive explanation of your evaluation, avoiding any potential bias.
Then, output a line indicating the score of the Assistant.

PLEASE OUTPUT WITH THE FOLLOWING FORMAT, WHERE THE SCORE IS A SCALE OF 1 TO 100 BY STRICTLY FOLLOWING THIS FORMAT: "[[score]]", FOR EXAMPLE "Rating: [[100]]":
<start output>
Evaluation evidence: your evluation explanation here, no more than 100 words
Rating: [[score]]
<end output>

Now, start your evaluation:'''  # noqa: E501 - Loong's released judge prompt, verbatim

LOOGLE_QA_SYSTEM = (
    "Given one question, there is a groundtruth and a predict_answer. Please decide whether they are the same "
    "or not in semantic. Please only output 'True' or 'False' ."
)
LOOGLE_SUMMARY_PROMPT = (
    "There is a groundtruth summary of a arxiv paper and a auto-generated summary .Please Compare generated "
    "summary with the goundtruth and evaluate the generated summary from the perspectives of information "
    "completeness, consistency, fluency, and grammar by giving a score within the range of 0 to 100. "
    "\nGroundtruth = {} \nGenerated = {} \nScore = "
)


# ---------------------------------------------------------------------------------------------
# Parsing

_DOUBLE = re.compile(r"\[\[\s*([0-9]*\.?[0-9]+)\s*\]\]")
_SINGLE = re.compile(r"\[\s*([0-9]*\.?[0-9]+)\s*\]")
_RATING = re.compile(r"rating\s*[:：]?\s*\**\s*([0-9]*\.?[0-9]+)", re.IGNORECASE)


def parse_loong_score(text: str | None) -> float | None:
    """The judge's 0-100 rating, or None when none can be read."""
    if not text:
        return None
    for pattern in (_DOUBLE, _SINGLE, _RATING):
        m = pattern.search(text)
        if m:
            value = float(m.group(1))
            return value if 0 <= value <= 100 else None
    return None


def parse_true_false(text: str | None) -> bool | None:
    if not text:
        return None
    words = re.findall(r"[A-Za-z]+", text)
    if not words:
        return None
    first = words[0].lower()
    return True if first == "true" else False if first == "false" else None


def parse_summary_score(text: str | None) -> float | None:
    if not text:
        return None
    m = re.search(r"-?\d+(?:\.\d+)?", text)
    if not m:
        return None
    value = float(m.group(0))
    return value if 0 <= value <= 100 else None


# ---------------------------------------------------------------------------------------------
# Client and cache


class JudgmentCache(JSONCache):
    """SQLite store of judge replies keyed by a hash of (model, messages, parameters).

    Entries live in table `judgment_replies` as checked entries (`eval.storage.JSONCache`), the
    value being JSON `{"model": ..., "reply": ...}`. A file written before the checksums (table
    `judgments (key, model, reply)`) is migrated when opened: its rows are copied in, checksummed
    as they are, and the old table dropped. An entry that fails its checksum or does not parse is
    logged, counted in `corrupted` and read as a miss (the judge is asked again)."""

    TABLE = "judgment_replies"
    LEGACY_TABLE = "judgments"

    def __init__(self, path: str | os.PathLike, busy_timeout_s: float = 60.0, lock_retries: int = 30):
        super().__init__(path, self.TABLE, label="judgment cache", logger=log, busy_timeout_s=busy_timeout_s,
                         lock_retries=lock_retries)
        self.store.adopt_legacy_table(self.LEGACY_TABLE, ("key", "model", "reply"), self._legacy_entry)

    @staticmethod
    def _legacy_entry(row: tuple) -> tuple[str, str] | None:
        key, model, reply = row
        if not isinstance(key, str) or not isinstance(reply, str):
            return None
        return key, json.dumps({"model": str(model) if model is not None else "", "reply": reply},
                               ensure_ascii=False, sort_keys=True)

    @staticmethod
    def key(model: str, messages: list[dict[str, str]], params: Mapping[str, Any]) -> str:
        blob = json.dumps([model, messages, dict(sorted(params.items()))], ensure_ascii=False, sort_keys=True)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def get(self, key: str) -> str | None:
        data = self.get_json(key, _check_reply)
        return None if data is None else data["reply"]

    def put(self, key: str, model: str, reply: str) -> None:
        self.put_json(key, {"model": model, "reply": reply})


def _check_reply(data: dict) -> None:
    if not isinstance(data.get("reply"), str):
        raise ValueError("no reply text")


class Ask(Protocol):
    """How a judge asks its model: the reply text, or an exception saying why there is none."""

    def __call__(self, messages: list[dict[str, str]], **params: Any) -> str: ...


@dataclass(frozen=True)
class JudgeReply:
    """One judgment: the reply text, or None and why (`error`: the error type and HTTP status)."""

    text: str | None
    error: str | None = None


class Judge:
    """A judge model behind an `Ask`, with a judgment cache. `ask` never raises for the model's sake."""

    def __init__(self, ask: Ask, model: str, cache_path: str | os.PathLike | None = None):
        self._ask = ask
        self.model = model
        self.cache = JudgmentCache(cache_path or Path(".cache") / "judgments.sqlite")
        self.calls = 0  # requests actually sent (cache misses)
        self.base_url: str | None = None  # where `ask` sends (set by llm.judge_backend.build_judge)

    def ask(self, messages: list[dict[str, str]], **params: Any) -> JudgeReply:
        """The judge's reply (a failed call: text None and the reason). The cache never makes this
        fail: a cache error is logged and the judge asked (or its reply kept)."""
        params = {"temperature": 0.0, **params}
        key = self.cache.key(self.model, messages, params)
        try:
            cached = self.cache.get(key)
        except Exception as exc:  # noqa: BLE001 - a broken cache costs a request, not the sample
            log.warning("judgment cache %s: read failed (%s); asking the judge", self.cache.path, _describe_cache(exc))
            cached = None
        if cached is not None:
            return JudgeReply(cached)
        self.calls += 1
        try:
            reply = self._ask(messages, **params)
        except Exception as exc:  # noqa: BLE001 - the API, the network or a malformed body: reported, not scored
            error = _describe(exc)
            log.warning("judge call failed: %s", error)
            return JudgeReply(None, error)
        if not isinstance(reply, str):
            log.warning("judge reply has no text content")
            return JudgeReply(None, "judge reply has no text content")
        try:
            self.cache.put(key, self.model, reply)
        except Exception as exc:  # noqa: BLE001 - the judgment stands; only its reuse is lost
            log.warning("judgment cache %s: write failed (%s); the judgment is kept but not cached",
                        self.cache.path, _describe_cache(exc))
        return JudgeReply(reply)


def _describe(exc: BaseException) -> str:
    """The root error's type and HTTP status only: messages and bodies may echo the request or a key.
    (An asker's own error wrapping the HTTP one, e.g. llm's GenerationError, is looked through.)"""
    seen = {id(exc)}
    while exc.__cause__ is not None and id(exc.__cause__) not in seen:
        exc = exc.__cause__
        seen.add(id(exc))
    status = getattr(exc, "status_code", None)
    return f"{type(exc).__name__}" + (f" (HTTP {status})" if status else "")


def _describe_cache(exc: Exception) -> str:
    """A cache (SQLite or file system) error in full: it holds no key or request."""
    return f"{type(exc).__name__}: {exc}"


# ---------------------------------------------------------------------------------------------
# Metrics


def loong_question(rec: Mapping[str, Any]) -> str:
    """The question shown to the judge, built as Loong's released code builds it."""
    question = str(rec.get("question", ""))
    template = rec.get("prompt_template")
    if not template:
        return question
    if rec.get("type") != "paper":
        template = template.replace("{docs}", "")
    return template.replace("{question}", question).replace("{instruction}", str(rec.get("instruction", "")))


def loong_reference(rec: Mapping[str, Any]) -> Reference:
    if "answer" in rec:
        answer = rec["answer"]
    elif "answers" in rec:
        answer = rec["answers"][0] if isinstance(rec["answers"], list) and rec["answers"] else rec["answers"]
    else:
        raise ValueError("no reference: expected `answer` or `answers`")
    return Reference([str(answer)], None, str(rec.get("language", "en")), str(rec.get("level", "")),
                     {"question": loong_question(rec), "answer": answer})


def judged(value: float | None, reply: JudgeReply, scale: float = 100.0) -> MetricValues | NoJudgment:
    """A judged metric's outcome from the judge's reply and the verdict parsed out of it.

    `value` is the verdict on a 0..`scale` scale (a True/False judge: 100.0 * verdict), None when
    the reply held none. A failed call (`reply.text` None) or an unreadable reply is `NoJudgment`,
    never a silent 0 (the released Loong scorer averages parsable judgments only); otherwise the
    values `score` (value / scale), `judge_score` (value) and `perfect` (value == scale)."""
    if reply.text is None:
        return NoJudgment.failed(reply.error)
    if value is None:
        return NoJudgment.unparsable(reply.text)
    return {"score": value / scale, "judge_score": value, "perfect": float(value == scale)}


@register("loong_judge", judged=True)
def loong_judge(prediction: str, ref: Reference, judge: Judge) -> MetricValues | NoJudgment:
    extra = ref.extra or {}
    answer = extra.get("answer", ref.answers[0] if ref.answers else "")
    prompt = LOONG_JUDGE_PROMPT.format(extra.get("question", ""), answer, prediction)
    reply = judge.ask([{"role": "user", "content": prompt}])
    return judged(parse_loong_score(reply.text), reply)


@register("loogle_judge", judged=True)
def loogle_judge(prediction: str, ref: Reference, judge: Judge) -> MetricValues | NoJudgment:
    extra = ref.extra or {}
    reference = str(ref.answers[0]) if ref.answers else ""  # a text: alternatives are refused at load
    params = {"temperature": 0.0, "top_p": 1, "max_tokens": 10, "frequency_penalty": 0, "presence_penalty": 0}
    if "qa" in ref.task:
        user = ("Question: " + str(extra.get("question", "")) + "\n" + "groudtruth = " + reference + "\n"
                + "predict_answer = " + prediction)
        reply = judge.ask([{"role": "system", "content": LOOGLE_QA_SYSTEM}, {"role": "user", "content": user}],
                          **params)
        verdict = parse_true_false(reply.text)
        return judged(None if verdict is None else 100.0 * verdict, reply)
    prompt = LOOGLE_SUMMARY_PROMPT.format(reference, prediction)
    reply = judge.ask([{"role": "system", "content": prompt}], **params)
    return judged(parse_summary_score(reply.text), reply)
