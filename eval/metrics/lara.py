"""LaRA's scoring (Alibaba-NLP/LaRA `evaluation/compute_score_llm.py`, MIT; the judge prompts below
are reproduced from there).

* `lara_judge` (official): an LLM judge says True or False. System message "You are a
  discriminator that judges whether the predictions to questions are correct."; the user message
  holds the question, the gold answer and the prediction. Hallucination questions (which the
  document does not answer) have their own prompt: an answer consistent with the gold one, i.e.
  saying the text does not mention it, is correct, so a refusal is credited. Accuracy per file =
  True / judged; the released table averages files over domains (unweighted), then tasks
  (`lara_table`); the runner's metrics.json `score_by_task` is the mean over questions instead.
* `lara_auto` (judge-free fallback, not the paper's): hallucination scores 1 when the prediction
  says the document does not contain the information (`is_refusal`), other tasks the SQuAD-style
  token F1 against the gold answer (eval.metrics.text). `refusal` is reported for every task (a
  refusal on an answerable question is a miss the judge would also mark False).

Parsing the judge (`variant`, `Reference.extra["variant"]`): `official` reproduces the released
rule, `1.0 if 'true' in reply.lower() else 0.0`, with one difference: a reply holding neither
"true" nor "false" is unparsable, `NoJudgment` (the runner records it as failed, retried on
resume; the released code scores it 0). A reply like "not true" therefore counts as True, as in
the release. `strict` reads only the reply's first word (True/False), as `parse_true_false`.

Where the release differs from what runs here: its scorer calls the judge as
`call_gpt(eval_model, msg)`, i.e. with the name of the model being scored (its README says GPT-4o
or Qwen-max judge: set `judge.model`); it sets no temperature (the API default), the project's
judge asks at temperature 0; and the released file misses `from openai import OpenAI` and
`import pandas`, so it does not run as shipped. Failed judge calls are left out of the released
means, as here (`NoJudgment`).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from eval.metrics import MetricValues, NoJudgment, register
from eval.metrics.judge import Judge, judged, parse_true_false
from eval.metrics.refusal import is_refusal
from eval.metrics.text import f1, tokens_en
from eval.sample import Reference

LARA_JUDGE_SYSTEM = "You are a discriminator that judges whether the predictions to questions are correct."
LARA_JUDGE_PROMPT = (
    "I will provide you with a question and its groundtruth answer, as well as an answer from an AI assistant. You "
    "need to judge whether the AI assistant's answer is correct based on the groundtruth answer. If it is correct, "
    "you should only output True; if it is incorrect, only output False.\n\n[Query] {query}\n\n[Groundtruth Answer] "
    "{label}\n\n[AI Assistant's Answer] {pred}\n\nNow, start your judgment:"
)
LARA_HALLU_JUDGE_PROMPT = (
    "You need to help me determine whether an AI model is hallucinating. I will provide you with a question, a "
    "ground truth answer, and a prediction from the model. If the prediction from the model and the ground truth "
    "answer are basically consistent, and it is determined that this question is not mentioned in the text, then "
    "the model is deemed not to be hallucinating and the answer is considered correct. If it is correct, you should "
    "only output True; if it is incorrect, only output False.\n\n[Query] {query}\n\n[Groundtruth Answer] "
    "{label}\n\n[AI Assistant's Answer] {pred}\n\nNow, start your judgement:"
)
HALLUCINATION = "hallucination"
_TASK_NAMES = {"hallu": HALLUCINATION, "comp": "comparison"}  # the release's file types -> task names
_SLOTS = re.compile(r"\{(query|label|pred)\}")
_ID_DOMAIN = re.compile(r"lara/\d+k_([a-z]+)_")


def task_name(task: str) -> str:
    """A task name from either spelling (`hallu` or `hallucination`)."""
    return _TASK_NAMES.get(task, task)


def judge_prompt(task: str) -> str:
    """The released judge prompt for a task: hallucination has its own."""
    return LARA_HALLU_JUDGE_PROMPT if task_name(task) == HALLUCINATION else LARA_JUDGE_PROMPT


def judge_messages(task: str, question: str, answer: str, prediction: str) -> list[dict[str, str]]:
    """The messages the released scorer sends (its f-string, filled in one pass: braces in the texts stay)."""
    values = {"query": question, "label": answer, "pred": prediction}
    user = _SLOTS.sub(lambda m: values[m.group(1)], judge_prompt(task))
    return [{"role": "system", "content": LARA_JUDGE_SYSTEM}, {"role": "user", "content": user}]


def parse_lara_verdict(text: str | None, variant: str = "official") -> bool | None:
    """True/False from a judge reply (None: unparsable); see the module docstring."""
    if variant == "strict":
        return parse_true_false(text)
    if not text:
        return None
    low = text.lower()
    if "true" in low:
        return True
    return False if "false" in low else None


def lara_reference(task: str, rec: Mapping[str, Any], variant: str = "official") -> Reference:
    """The Reference of one LaRA question: `answer` (query files) or `ground_truth` (released
    prediction files), and the question the judge sees."""
    answer = rec.get("answer", rec.get("ground_truth"))
    if not isinstance(answer, str):
        raise ValueError("no reference: expected `answer` or `ground_truth` (text)")
    question = rec.get("question")
    if not isinstance(question, str):
        raise ValueError("no question: the LaRA judge needs `question` (text)")
    return Reference([answer], None, "en", task_name(task), {"question": question, "variant": variant})


@register("lara_judge", judged=True)
def lara_judge(prediction: str, ref: Reference, judge: Judge) -> MetricValues | NoJudgment:
    extra = ref.extra or {}
    answer = str(ref.answers[0]) if ref.answers else ""  # a text: alternatives are refused at load
    reply = judge.ask(judge_messages(ref.task, str(extra.get("question", "")), answer, prediction))
    verdict = parse_lara_verdict(reply.text, str(extra.get("variant", "official")))
    return judged(None if verdict is None else 100.0 * verdict, reply)


@register("lara_auto")
def lara_auto(prediction: str, ref: Reference) -> dict[str, float]:
    refusal = is_refusal(prediction)
    if task_name(ref.task) == HALLUCINATION:
        return {"score": float(refusal), "refusal": float(refusal)}
    answer = str(ref.answers[0]) if ref.answers else ""  # a text: alternatives are refused at load
    value = f1(tokens_en(prediction or ""), tokens_en(answer))
    return {"score": value, "f1": value, "refusal": float(refusal)}


# ---------------------------------------------------------------------------------------------
# The released table


def lara_table(rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, float | None]]:
    """LaRA's table from per-question scores: {length: {task: %, ..., "overall": %}}.

    Each row needs `length_level`, `task`, `score` (0..1; rows whose `score` is None, unjudged or
    failed ones, are left out, as the released scorer leaves out failed judgments) and `domain`, or
    an `id` of a LaRA sample (`lara/32k_book_location/3`), so a run's records.jsonl lines serve as
    they are. As compute_score_llm.py: accuracy per (length, domain, task) file, the mean of its
    domains per task (unweighted), overall = the mean of the four tasks; x100, 2 decimals.
    """
    files: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for r in rows:
        if r.get("score") is None:
            continue
        domain = r.get("domain")
        if domain is None:
            m = _ID_DOMAIN.match(str(r.get("id", "")))
            if m is None:
                raise ValueError(f"row {r.get('id')!r}: needs `domain` or a LaRA sample id "
                                 "(lara/<length>_<domain>_...)")
            domain = m.group(1)
        files[(str(r["length_level"]), str(domain), task_name(str(r["task"])))].append(float(r["score"]))
    out: dict[str, dict[str, float | None]] = {}
    for length in sorted({k[0] for k in files}, key=lambda x: float(x.rstrip("k"))):
        table: dict[str, float | None] = {}
        for task in ("location", "reasoning", "comparison", HALLUCINATION):
            accs = [sum(v) / len(v) for (n, _, t), v in files.items() if n == length and t == task and v]
            table[task] = round(100 * sum(accs) / len(accs), 2) if accs else None
        present = [v for v in table.values() if v is not None]
        table["overall"] = round(sum(present) / len(present), 2) if len(present) == 4 else None
        out[length] = table
    return out
