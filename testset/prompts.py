"""What the generator is asked: the task prompts per question type, their worked examples, the closed-book
prompt and the prompt hash written into provenance."""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from typing import Any

from eval.corpus.parsers import ParsedDocument
from eval.metrics.text import normalize_en, normalize_zh
from testset.plan import Task

UNANSWERABLE = {"en": "unanswerable", "zh": "无法回答"}


REPLY_ONLY = {"en": "You reply with one JSON object and nothing else: no preamble, no explanation.",
              "zh": "你只回复一个 JSON 对象，不要任何开场白或解释。"}


ASK = {
    "en": {
        "locate": "Write one question that the text answers, its short answer (a few words copied from the text), "
                  "and the sentence of the text that contains the answer, copied word for word.",
        "reason": "Write one question that asks why or how something in the text happens, or what follows from it, "
                  "so that answering takes a step of reasoning. Give its short answer (a few words copied from the "
                  "text) and the sentence of the text that contains the answer, copied word for word.",
        "compare": "Write one question that needs both texts to answer: it compares or combines a fact of text 1 "
                   "with a fact of text 2. Give its short answer (a few words copied from the texts) and, copied "
                   "word for word, one sentence of each text that supports it.",
        "unanswerable": "Write one natural question about a person, place, organisation or thing named in the text "
                        "that asks for a detail the text does not give (a date, number, place or name that is not "
                        "stated). Give the name it asks about (`entity`) and a plausible answer that is NOT in the "
                        "text (`guess`).",
    },
    "zh": {
        "locate": "写一个这段文字能回答的问题、它的简短答案（从文中照抄几个词），"
                  "以及文中包含答案的那句话（逐字照抄）。",
        "reason": "写一个问题，问文中某件事为什么或如何发生、或由此可推出什么，回答需要一步推理。"
                  "给出简短答案（从文中照抄几个词）和文中包含答案的那句话（逐字照抄）。",
        "compare": "写一个必须同时用到两段文字才能回答的问题：把文字 1 的一个事实与文字 2 的一个事实比较或结合。"
                   "给出简短答案（从文中照抄几个词），并从每段各逐字照抄一句支持它的话。",
        "unanswerable": "针对文中提到的某个人、地点、机构或事物，写一个自然的问题，询问文中没有给出的细节"
                        "（未提及的日期、数字、地点或名字）。给出问题所问的名称（entity）和一个看似合理但文中没有的答案（guess）。",
    },
}


# One worked example per type and language: small models copy the form of an example far more reliably than they
# follow a description of it, and the reply then opens with the JSON the prompt ends on.
EXAMPLES: dict[str, dict[str, Any]] = {
    "en": {
        "text": "The bridge over the Elbe was finished in 1892 after a flood had destroyed the old ferry. It was "
                "designed by Karl Weber.",
        "text2": "The new ferry across the Elbe, built in 1950, carries forty cars.",
        "locate": {"question": "Who designed the bridge over the Elbe?", "answer": "Karl Weber",
                   "quote": "It was designed by Karl Weber."},
        "reason": {"question": "Why was the bridge over the Elbe built?", "answer": "a flood had destroyed the old "
                   "ferry", "quote": "The bridge over the Elbe was finished in 1892 after a flood had destroyed the "
                   "old ferry."},
        "compare": {"question": "Which is older, the bridge over the Elbe or the new ferry?", "answer": "the bridge",
                    "quote": ["The bridge over the Elbe was finished in 1892 after a flood had destroyed the old "
                              "ferry.", "The new ferry across the Elbe, built in 1950, carries forty cars."]},
        "unanswerable": {"question": "How long is the bridge over the Elbe?", "entity": "bridge over the Elbe",
                         "guess": "310 metres"},
    },
    "zh": {
        "text": "易北河大桥在一场洪水冲毁旧渡口之后于1892年建成。它由卡尔·韦伯设计。",
        "text2": "1950年建造的易北河新渡轮可载四十辆汽车。",
        "locate": {"question": "易北河大桥是谁设计的？", "answer": "卡尔·韦伯", "quote": "它由卡尔·韦伯设计。"},
        "reason": {"question": "为什么要建易北河大桥？", "answer": "洪水冲毁旧渡口",
                   "quote": "易北河大桥在一场洪水冲毁旧渡口之后于1892年建成。"},
        "compare": {"question": "易北河大桥和新渡轮哪个更早？", "answer": "易北河大桥",
                    "quote": ["易北河大桥在一场洪水冲毁旧渡口之后于1892年建成。",
                              "1950年建造的易北河新渡轮可载四十辆汽车。"]},
        "unanswerable": {"question": "易北河大桥有多长？", "entity": "易北河大桥", "guess": "310米"},
    },
}


TEXT = {"en": "Text", "zh": "文字"}
CLOSED_BOOK = {"en": "Answer the question in a few words.\n\nQuestion: {question}\nAnswer:",
               "zh": "请用几个词回答问题。\n\n问题：{question}\n回答："}


def _texts(passages: list[str], language: str) -> str:
    """Passages as the prompt shows them: one `Text:` block, or `Text 1:` and `Text 2:`."""
    if len(passages) == 1:
        return f'{TEXT[language]}: """{passages[0]}"""'
    return "\n".join(f'{TEXT[language]} {i + 1}: """{p}"""' for i, p in enumerate(passages))


def example_block(kind: str, language: str) -> str:
    """The worked example every prompt of this type and language opens with (their shared prefix)."""
    example = EXAMPLES[language]
    shown = [example["text"], example["text2"]] if kind == "compare" else [example["text"]]
    return f"{_texts(shown, language)}\nJSON: {json.dumps(example[kind], ensure_ascii=False)}\n\n"


def task_prompt(task: Task, docs: dict[str, ParsedDocument], language: str) -> tuple[str, str]:
    """(system, user) of the generation request for `task`. The system message says what to write; the user
    message is a worked example (text, then `JSON:` and its reply), then the passage(s) and `JSON:` for the reply
    to continue: the embedded 135M model writes JSON in this form and rambles in others."""
    text = docs[task.document].text
    passages = [text[p.start:p.end].strip() for p in task.passages]
    user = f"{example_block(task.type, language)}{_texts(passages, language)}\nJSON:"
    return f"{ASK[language][task.type]} {REPLY_ONLY[language]}", user


@lru_cache(maxsize=2)
def example_questions(language: str) -> frozenset[str]:
    return frozenset(normalized(v["question"], language) for v in EXAMPLES[language].values() if isinstance(v, dict))


def prompt_hash(system: str | None, user: str) -> str:
    return hashlib.sha256(json.dumps([system, user], ensure_ascii=False).encode()).hexdigest()[:16]


def normalized(text: str, language: str) -> str:
    return normalize_zh(text) if language == "zh" else normalize_en(text)
