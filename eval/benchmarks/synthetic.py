"""The built-in synthetic benchmark: procedurally generated haystacks about fictional places.

Everything is generated from a seed, so a sample id always means the same text. Names are
assembled from syllables (English) or characters (Chinese) into places and people that exist
nowhere, so no model can answer from memory. Each haystack carries several questions (as LooGLE
documents do):

- `single_hop`: one planted fact answers the question;
- `two_hop`: two planted facts must be chained (the mayor of a town, then where the mayor was born);

Planted facts ("needles") sit at varied depths. Some questions also get confusing facts: the same
statement about a near-duplicate name with another value (as LV-Eval's CFI). Gold evidence is
the char span of each needed fact; confusing facts are recorded as known distractors.

Lengths are counted with `approx_tokens`, a model-independent measure (one token per English
word or punctuation mark, one per CJK character), so the same level means the same text for
every model; records carry each model's own prompt token count.

Scoring (`synthetic_contains_all`, eval/metrics/contains.py): correct when every reference answer
is contained in the normalised prediction, as RULER scores its needle tasks, so a right answer
given in a sentence counts; LV-Eval's keyword-gated F1 stays in `scores` as `f1_gated` and `f1`.

Longer than most modules on purpose: the whole generator of our own benchmark (haystacks,
needles, confusers, questions in two languages) reads best in one file.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field, replace
from typing import Any

from eval.benchmarks.base import COMMON_KEYS, Benchmark, LoadResult, Rescoring
from eval.benchmarks.common import approx_tokens
from eval.prediction_lines import keywords, text_answers
from eval.sample import Document, PromptTemplate, Reference, Sample, Span


def level_name(tokens: int) -> str:
    return f"{tokens // 1000}k" if tokens % 1000 == 0 else str(tokens)


def parse_level(level: int | str) -> int:
    """'4k' -> 4000, '128k' -> 128000, 1500 -> 1500."""
    if isinstance(level, int):
        return level
    text = str(level).strip().lower()
    m = re.fullmatch(r"(\d+)(k?)", text)
    if not m:
        raise ValueError(f"length level {level!r} is neither a number of tokens nor like '4k'")
    return int(m.group(1)) * (1000 if m.group(2) else 1)


TASKS = ("single_hop", "two_hop")

TEMPLATES = {
    # Context first, question last: the shared context is a reusable prompt prefix.
    "en": PromptTemplate(
        text=(
            "Read the following records and answer the question using only them. "
            "Reply with the answer alone, in a few words.\n\n"
            "Records:\n{context}\n\nQuestion: {question}\nAnswer:"
        ),
        max_new_tokens=24,
        truncation="middle",
        source="this project",
    ),
    "zh": PromptTemplate(
        text=(
            "阅读以下记录，仅根据记录回答问题。只输出答案，尽量简短。\n\n"
            "记录：\n{context}\n\n问题：{question}\n回答："
        ),
        max_new_tokens=24,
        truncation="middle",
        source="this project",
    ),
}


# ---------------------------------------------------------------- vocabulary: English
_EN_ONSETS = "b br c cr d dr f fl g gr h k kr l m n p pr qu r s sk st t th tr v vr w z".split()
_EN_NUCLEI = "a e i o u ae ai ei ou oa y".split()
_EN_CODAS = ["", "", "n", "r", "l", "th", "x", "sk", "m", "nd", "rk", "sh", "lt"]
_EN_GOODS = [
    "copper wire", "blue glass beads", "salted eels", "cedar barrels", "woollen rugs",
    "clay pipes", "smoked cheese", "iron nails", "linen sails", "pickled plums", "tin lanterns",
    "silver thread", "bone combs", "amber resin", "rye flour", "paper kites", "wax candles",
    "oak rafters", "dried figs", "felt hats", "slate tiles", "brass bells", "honey wine",
]
_EN_ADJ = "quiet crowded ancient narrow windy sunlit muddy famous crooked tidy stern gentle".split()
_EN_BUILDINGS = ("bell tower|granary|stone bridge|market hall|lighthouse|mill|library|bathhouse|"
                 "watchtower|theatre").split("|")
_EN_EVENTS = ("flood|great fire|drought|festival riot|salt shortage|bridge collapse|harvest fair|"
              "plague of moths").split("|")
_EN_CONSEQ = [
    "forced the council to rebuild the harbour",
    "emptied half the streets for a season",
    "led to a new tax on barges",
    "is still remembered in local songs",
    "brought traders from three valleys",
    "closed the old road for years",
]
_EN_SEASONS = "spring|summer|autumn|winter|first frost|long night".split("|")
_EN_TRADES = "weaver|ferryman|cartographer|glassblower|beekeeper|archivist|brewer|tanner|clockmaker".split("|")


def _en_word(rng: random.Random, syllables: int) -> str:
    parts = [rng.choice(_EN_ONSETS) + rng.choice(_EN_NUCLEI) + rng.choice(_EN_CODAS) for _ in range(syllables)]
    return "".join(parts).capitalize()


# ---------------------------------------------------------------- vocabulary: Chinese
_ZH_CHARS = list("岚墨澜琨璃翎霁沅汐珩蘅芷湄泓崧岑棠砚菁骁赭黛檀琮瑜溟渚汀苒荇筠篁楹榆枳蓼")
_ZH_SURNAMES = list("柏甄祁卓闵裘殷邝郗隗沃訾逄")
_ZH_PLACE_SUFFIX = ["镇", "城", "村", "堡", "集"]
_ZH_GOODS = [
    "紫陶罐", "青铜铃", "腌鳗鱼", "雪松木桶", "羊毛毯", "陶土烟斗", "熏奶酪", "铁钉", "亚麻帆",
    "腌梅子", "锡灯笼", "银丝线", "骨梳", "琥珀树脂", "黑麦粉", "纸风筝", "蜂蜡蜡烛", "橡木椽",
]
_ZH_ADJ = ["安静的", "拥挤的", "古老的", "狭窄的", "多风的", "泥泞的", "著名的", "整洁的"]
_ZH_BUILDINGS = ["钟楼", "粮仓", "石桥", "集市大厅", "灯塔", "磨坊", "藏书楼", "浴堂", "瞭望塔"]
_ZH_EVENTS = ["洪水", "大火", "旱灾", "盐荒", "桥梁坍塌", "丰收集会", "蛾灾"]
_ZH_CONSEQ = ["迫使议事会重建港口", "让半个城空了一整季", "催生了一项新的驳船税", "至今仍在歌谣里传唱",
              "引来了三座山谷的商人"]
_ZH_SEASONS = ["春天", "夏天", "秋天", "冬天", "初霜时节", "长夜时节"]
_ZH_TRADES = ["织工", "摆渡人", "制图师", "吹玻璃匠", "养蜂人", "档案员", "酿酒师", "钟表匠"]


class _Names:
    """Fictional names for one haystack.

    Names used by questions are unique and reserved: no other name equals one of them or
    contains one (or is contained in one), so every question has exactly one answer in the text.
    Filler draws from a pool of other names, which may repeat, as places recur in a chronicle.
    """

    POOL = 80

    def __init__(self, rng: random.Random, language: str):
        self.rng, self.language = rng, language
        self.reserved: set[str] = set()
        self._pool: dict[str, list[str]] = {}

    def _clashes(self, name: str) -> bool:
        return any(name in u or u in name for u in self.reserved)

    def _draw(self, make, reserve: bool) -> str:
        for _ in range(1000):
            name = make()
            if not self._clashes(name):
                if reserve:
                    self.reserved.add(name)
                return name
        raise RuntimeError("ran out of fictional names; use a different seed")

    def _make_place(self) -> str:
        r = self.rng
        if self.language == "zh":
            return r.choice(_ZH_CHARS) + r.choice(_ZH_CHARS) + r.choice(_ZH_PLACE_SUFFIX)
        return _en_word(r, r.choice((2, 2, 3)))

    def _make_person(self) -> str:
        r = self.rng
        if self.language == "zh":
            return r.choice(_ZH_SURNAMES) + r.choice(_ZH_CHARS) + r.choice(_ZH_CHARS)
        return f"{_en_word(r, 2)} {_en_word(r, 2)}"

    def place(self) -> str:
        return self._draw(self._make_place, reserve=True)

    def person(self) -> str:
        return self._draw(self._make_person, reserve=True)

    def filler(self, kind: str) -> str:
        """A name for filler text (call after all question names are reserved)."""
        if kind not in self._pool:
            make = self._make_place if kind == "place" else self._make_person
            self._pool[kind] = [self._draw(make, reserve=False) for _ in range(self.POOL)]
        return self.rng.choice(self._pool[kind])

    def near_duplicate(self, name: str) -> str:
        """A confusable variant of `name` (one vowel or one character changed), reserved."""
        r = self.rng
        for attempt in range(1000):
            if self.language == "zh":
                i = r.randrange(len(name) - 1) if len(name) > 1 else 0
                variant = name[:i] + r.choice(_ZH_CHARS) + name[i + 1 :]
            else:
                vowels = [i for i, ch in enumerate(name) if ch in "aeiou"]
                if attempt >= 100 and len(name) > 1:  # every vowel variant clashes: change another letter
                    i = r.randrange(1, len(name))
                    variant = name[:i] + r.choice([c for c in "bcdfghklmnprstvz" if c != name[i]]) + name[i + 1 :]
                elif not vowels:
                    variant = name + "e"
                else:
                    i = r.choice(vowels)
                    variant = name[:i] + r.choice([v for v in "aeiou" if v != name[i]]) + name[i + 1 :]
            if variant != name and not self._clashes(variant):
                self.reserved.add(variant)
                return variant
        raise RuntimeError("could not make a near-duplicate name")


# ---------------------------------------------------------------- facts and questions
@dataclass
class _Fact:
    text: str
    depth: float
    is_distractor: bool = False


@dataclass
class _Question:
    task: str
    question: str
    answer: str
    facts: list[_Fact]  # gold facts
    distractors: list[_Fact] = field(default_factory=list)
    kind: str = ""


def _make_question(rng: random.Random, names: _Names, lang: str, task: str, confuse: bool) -> _Question:
    place = names.place()
    if task == "two_hop":
        mayor, village = names.person(), names.place()
        if lang == "zh":
            facts = [f"{place}的镇长是{mayor}。", f"{mayor}出生在{village}。"]
            question = f"{place}的镇长出生在哪里？"
        else:
            facts = [f"The mayor of {place} is {mayor}.", f"{mayor} was born in the village of {village}."]
            question = f"In which village was the mayor of {place} born?"
        q = _Question(task, question, village, [_Fact(t, 0.0) for t in facts], kind="mayor_birthplace")
        if confuse:
            other_mayor, other_village = names.near_duplicate(mayor), names.place()
            text = (f"{other_mayor}出生在{other_village}。" if lang == "zh"
                    else f"{other_mayor} was born in the village of {other_village}.")
            q.distractors.append(_Fact(text, 0.0, True))
        return q

    kind = rng.choice(["export", "founder", "code"])
    if kind == "export":
        goods = _ZH_GOODS if lang == "zh" else _EN_GOODS
        value, other = rng.sample(goods, 2)
        fact = ((lambda s, v: f"{s}最主要的出口货物是{v}。") if lang == "zh"
                else (lambda s, v: f"The main export of {s} is {v}."))
        question = f"{place}最主要的出口货物是什么？" if lang == "zh" else f"What is the main export of {place}?"
    elif kind == "founder":
        value, other = names.person(), names.person()
        year = rng.randrange(1200, 1900)
        fact = ((lambda s, v: f"{s}由{v}于{year}年建立。") if lang == "zh"
                else (lambda s, v: f"{s} was founded in {year} by {v}."))
        question = f"{place}是由谁建立的？" if lang == "zh" else f"Who founded {place}?"
    else:
        value, other = str(rng.randrange(1_000_000, 9_999_999)), str(rng.randrange(1_000_000, 9_999_999))
        fact = ((lambda s, v: f"{s}档案馆的门锁密码是{v}。") if lang == "zh"
                else (lambda s, v: f"The archive of {s} is locked with the code {v}."))
        question = f"{place}档案馆的门锁密码是多少？" if lang == "zh" else f"What code locks the archive of {place}?"
    q = _Question("single_hop", question, value, [_Fact(fact(place, value), 0.0)], kind=kind)
    if confuse:
        q.distractors.append(_Fact(fact(names.near_duplicate(place), other), 0.0, True))
    return q


# ---------------------------------------------------------------- filler
def _filler_paragraph(rng: random.Random, names: _Names, lang: str) -> str:
    place, person = names.filler("place"), names.filler("person")
    if lang == "zh":
        options = [
            lambda: f"{place}坐落在{names.filler('place')}河的{rng.choice(['东', '西', '南', '北'])}岸。",
            lambda: f"来到{place}的旅人常常谈起那座{rng.choice(_ZH_ADJ)}{rng.choice(_ZH_BUILDINGS)}。",
            lambda: f"{rng.randrange(1200, 1900)}年，{place}的一场{rng.choice(_ZH_EVENTS)}{rng.choice(_ZH_CONSEQ)}。",
            lambda: f"每逢{rng.choice(_ZH_SEASONS)}，{place}的居民都会举行{names.filler('place')[:2]}节。",
            lambda: f"{rng.choice(_ZH_TRADES)}{person}为{place}写过一部{rng.choice(_ZH_ADJ)}编年史。",
            lambda: f"{place}的集市上常见{rng.choice(_ZH_GOODS)}和{rng.choice(_ZH_GOODS)}。",
            lambda: f"{person}曾在{place}的{rng.choice(_ZH_BUILDINGS)}里住过{rng.randrange(2, 40)}年。",
        ]
        title = f"【{place}志】"
    else:
        options = [
            lambda: (f"{place} sits on the {rng.choice(['north', 'south', 'east', 'west'])} bank of the "
                     f"{names.filler('place')} river."),
            lambda: f"Travellers to {place} often remark on its {rng.choice(_EN_ADJ)} {rng.choice(_EN_BUILDINGS)}.",
            lambda: f"In {rng.randrange(1200, 1900)}, a {rng.choice(_EN_EVENTS)} in {place} {rng.choice(_EN_CONSEQ)}.",
            lambda: f"The people of {place} hold the {names.filler('place')} festival every {rng.choice(_EN_SEASONS)}.",
            lambda: f"The {rng.choice(_EN_TRADES)} {person} wrote a {rng.choice(_EN_ADJ)} chronicle of {place}.",
            lambda: f"At the market of {place} one finds {rng.choice(_EN_GOODS)} and {rng.choice(_EN_GOODS)}.",
            lambda: (f"{person} lived for {rng.randrange(2, 40)} years beside the {rng.choice(_EN_BUILDINGS)} "
                     f"of {place}."),
        ]
        title = f"On {place}."
    sentences = [rng.choice(options)() for _ in range(rng.randrange(4, 8))]
    return title + ("" if lang == "zh" else " ") + ("" if lang == "zh" else " ").join(sentences)


# ---------------------------------------------------------------- haystack assembly
@dataclass
class SyntheticConfig:
    seed: int = 0
    languages: tuple[str, ...] = ("en", "zh")
    levels: tuple[int | str, ...] = ("1k", "2k", "4k")
    haystacks_per_level: int | dict = 1  # or {level: n}: more haystacks where they are cheap
    questions_per_haystack: int = 4
    two_hop_share: float = 0.25
    confusing_share: float = 0.5
    max_new_tokens: int = 24  # the answer's token limit (the templates' own)


def make_haystack(seed: int, language: str, tokens: int, n_questions: int,
                  two_hop_share: float = 0.25, confusing_share: float = 0.5,
                  haystack_id: str = "h0") -> list[Sample]:
    """One haystack of about `tokens` approximate tokens with `n_questions` questions over it."""
    if language not in TEMPLATES:
        raise ValueError(f"synthetic benchmark language {language!r}: allowed {sorted(TEMPLATES)}")
    rng = random.Random(f"{seed}/{language}/{tokens}/{haystack_id}")
    names = _Names(rng, language)
    n_two_hop = round(n_questions * two_hop_share)
    tasks = ["two_hop"] * n_two_hop + ["single_hop"] * (n_questions - n_two_hop)
    rng.shuffle(tasks)
    questions = [_make_question(rng, names, language, t, rng.random() < confusing_share) for t in tasks]

    # Depths: each question gets its own band so needles spread over the whole haystack.
    for i, q in enumerate(questions):
        for fact in q.facts + q.distractors:
            fact.depth = (i + rng.random()) / len(questions)
    planted = [f for q in questions for f in q.facts + q.distractors]
    paragraphs = _filler(rng, names, language, tokens - sum(approx_tokens(f.text) for f in planted))
    context, spans = _plant(paragraphs, planted)
    level = level_name(tokens)
    group = f"synthetic/{language}/{level}/{haystack_id}/s{seed}"
    return [_sample(q, f"syn-{language}-{level}-{haystack_id}-q{i}-s{seed}", language, level, context, spans, group)
            for i, q in enumerate(questions)]


def _filler(rng: random.Random, names: _Names, language: str, budget: int) -> list[str]:
    """Filler paragraphs of about `budget` approximate tokens (at least one)."""
    paragraphs: list[str] = []
    used = 0
    while used < budget or not paragraphs:
        p = _filler_paragraph(rng, names, language)
        paragraphs.append(p)
        used += approx_tokens(p)
    return paragraphs


def _plant(paragraphs: list[str], planted: list[_Fact]) -> tuple[str, dict[int, tuple[int, int]]]:
    """The haystack text: planted facts inserted at paragraph boundaries by depth, and each fact's char span
    (keyed by the fact's id)."""
    sep = "\n\n"
    slots: dict[int, list[_Fact]] = {}
    for f in planted:
        slots.setdefault(round(f.depth * len(paragraphs)), []).append(f)
    pieces: list[str] = []
    spans: dict[int, tuple[int, int]] = {}
    offset = 0

    def add(text: str, fact: _Fact | None = None) -> None:
        nonlocal offset
        if pieces:
            pieces.append(sep)
            offset += len(sep)
        if fact is not None:
            spans[id(fact)] = (offset, offset + len(text))
        pieces.append(text)
        offset += len(text)

    for i in range(len(paragraphs) + 1):
        for f in sorted(slots.get(i, []), key=lambda f: f.depth):
            add(f.text, f)
        if i < len(paragraphs):
            add(paragraphs[i])
    return "".join(pieces), spans


def _sample(q, sample_id: str, language: str, level: str, context: str, spans: dict[int, tuple[int, int]],
            group: str) -> Sample:
    return Sample(
        id=sample_id,
        benchmark="synthetic",
        task=q.task,
        language=language,
        length_level=level,
        context=context,
        question=q.question,
        answers=[q.answer],
        answer_keywords=q.answer,
        template=TEMPLATES[language],
        metric="synthetic_contains_all",
        evidence=[Span(*spans[id(f)]) for f in q.facts],
        distractors=[Span(*spans[id(f)]) for f in q.distractors],
        documents=[Document(doc_id=group, start=0, end=len(context))],
        group=group,
        metadata={
            "kind": q.kind,
            "depth": round(min(f.depth for f in q.facts), 4),
            "confusing_facts": bool(q.distractors),
            "approx_tokens": approx_tokens(context),
        },
    )


def generate(cfg: SyntheticConfig) -> list[Sample]:
    if int(cfg.max_new_tokens) <= 0:
        raise ValueError(f"benchmark.max_new_tokens must be positive, got {cfg.max_new_tokens}")
    samples: list[Sample] = []
    for language in cfg.languages:
        for level in cfg.levels:
            for h in range(_haystacks(cfg.haystacks_per_level, level)):
                samples += make_haystack(
                    cfg.seed, language, parse_level(level), cfg.questions_per_haystack,
                    cfg.two_hop_share, cfg.confusing_share, haystack_id=f"h{h}",
                )
    for sample in samples:
        if sample.template.max_new_tokens != int(cfg.max_new_tokens):
            sample.template = replace(sample.template, max_new_tokens=int(cfg.max_new_tokens))
    return samples


def _haystacks(per_level: int | dict, level: int | str) -> int:
    if not isinstance(per_level, dict):
        return int(per_level)
    for key, n in per_level.items():
        if str(key) == str(level) or parse_level(key) == parse_level(level):
            return int(n)
    raise ValueError(f"benchmark.haystacks_per_level has no entry for level {level!r}: {dict(per_level)}")


class SyntheticBenchmark(Benchmark):
    """synthetic: see the module docstring."""

    name = "synthetic"
    tasks = TASKS

    @classmethod
    def rescoring(cls, task: str, options: Any) -> Rescoring:
        """A prediction file is scored by LV-Eval's keyword-gated F1, in each line's `language` (default en)."""
        variant = options.variant
        return Rescoring("lveval_gated_f1", lambda rec: Reference(text_answers(rec), keywords(rec),
                                                                  rec.get("language") or "en", task,
                                                                  {"variant": variant}))
    levels_generated = True  # `levels` says what to generate
    evidence = "spans"
    truncation = "middle"
    templates = TEMPLATES

    def load(self, cfg: dict) -> LoadResult:
        """The `benchmark=synthetic` config group -> samples."""
        fields = SyntheticConfig.__dataclass_fields__
        unknown = set(cfg) - set(fields) - set(COMMON_KEYS)
        if unknown:
            raise ValueError(f"benchmark=synthetic: unknown keys {sorted(unknown)}; known: {sorted(fields)}")
        opts: dict[str, Any] = {k: (tuple(v) if isinstance(v, list) else v) for k, v in cfg.items() if k in fields}
        return LoadResult(generate(SyntheticConfig(**opts)))
