"""LV-Eval (infinigence/LVEval): 11 bilingual QA datasets x 5 length levels -> `Sample`s.

Where the data comes from (`benchmark.path`):

* a `{dataset}_{level}.jsonl` file (e.g. `cmrc_mixup_16k.jsonl`);
* a folder holding such files, directly or in `{dataset}/` subfolders (how the hub's zips
  unpack), or holding the hub's `{dataset}.zip` files themselves (read without unpacking);
* `null`: the hub dataset `Infinigence/LVEval` (`benchmark.hub_id`), whose `{dataset}.zip` data
  files are downloaded with `huggingface_hub`. The hub repository's loading script is never run.

A snapshot of the hub repository (`huggingface-cli download --repo-type dataset Infinigence/LVEval
--local-dir DIR`, for compute nodes without a network) is such a folder of `{dataset}.zip` files:
`path: DIR` reads the zips and ignores everything else there (`LVEval.py`, which is never run,
`README.md`, the licences, `.cache/huggingface/`); a snapshot of some of the zips (`--include`)
loads the datasets present.

Only the files of the selected datasets (`tasks`) and levels are opened, and with `limit` reading
stops once enough samples are read. Order is deterministic: datasets in the released
`DATASET_SELECTED` order, levels from 16k to 256k, records in file order. Sample ids are
`lveval/{dataset}_{level}/{i}` (the i-th record of the file, from 0); `task` is the dataset, `length_level` the level.

Prompt and generation settings are the released ones (`config.py`: `DATASET_PROMPT`,
`DATASET_MAXGEN`: 64 new tokens, 16 for factrecall). Over-long prompts are cut as
`prediction.py` / `utils.truncate_prompt` cut them: the whole formatted prompt (before any chat
template) to `--model-max-length` tokens (15,500 by default: a 16k window less ~500 for the
answer), its first and last half kept. So `truncation="prompt_middle"`: the window is the
generator's, the reserve `longctx.reserve_tokens` (500); see longctx/truncation.py. Questions over
one context share one cut, sized for the longest of them (longctx/arm.py `prepare`). Each sample's
metric is its dataset's primary metric in `eval.metrics.lveval` (gated F1, plain F1 for factrecall,
ROUGE-L for dureader).

Gold evidence: LV-Eval releases no evidence spans, so these proxies are derived and recorded per
sample in `metadata["evidence_source"]`:

* factrecall_en / factrecall_zh: the needle, i.e. the sentence around each occurrence of the
  answer (the inserted fact; the answer name is a replaced keyword that occurs nowhere else);
  when it occurs more than once the sentences are alternatives (`Span.alt`): any one present
  counts the evidence as present;
* cmrc_mixup (extractive answers; `evidence_datasets` configures the list): the paragraph around
  the answer, or the sentence around it when the paragraph is longer than `evidence_max_chars`.
  When the answer occurs in several places, the place whose text shares the most words (English)
  or character bigrams (Chinese) with the question is kept, with `quality = 1 / occurrences`;
  answers shorter than 2 characters (Chinese) or 3 (English) are not located;
* the other datasets: no evidence (`evidence_source = "none"`).

Occurrences inside a confusing fact never count as evidence. `confusing_facts` are located in the
context (verbatim, else sentence by sentence) and become `distractors`; `metadata` records how
many there were and how many were located.

Longer than most modules on purpose: it holds everything about one benchmark (its 11 datasets'
prompt templates from the released code, the file, zip and hub-snapshot layouts, evidence for the
needle datasets), so a fidelity question about LV-Eval has one place to look.
"""

from __future__ import annotations

import hashlib
import logging
import re
import zipfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from eval.answers import Answer
from eval.benchmarks.base import Benchmark, LoadResult, Rescoring
from eval.benchmarks.common import check_keys, first_samples, selection
from eval.data_files import Row, parse_jsonl, record_guard
from eval.metrics.lveval import LVEVAL_DATASETS, LVEVAL_LEVELS, lveval_dataset, lveval_metric
from eval.metrics.official import lveval_official
from eval.prediction_lines import keywords, text_answers
from eval.sample import PromptTemplate, Reference, Sample, Span

log = logging.getLogger(__name__)

HUB_ID = "Infinigence/LVEval"
DATASETS: tuple[str, ...] = tuple(LVEVAL_DATASETS)  # the released DATASET_SELECTED order
LEVELS: tuple[str, ...] = LVEVAL_LEVELS
SOURCE = "infinigence/LVEval config.py (DATASET_PROMPT, DATASET_MAXGEN); middle truncation: utils.py truncate_prompt"

# The released prompts (config.py DATASET_PROMPT), with `{input}` renamed `{question}`.
_EN_ONE_PASSAGE = (
    "Please answer the following question based on the given passages. Questions and answers are only relevant "
    "to one passage. Only give me the answer and do not output any other explanation and evidence.\n\n"
    "Article: {context}\n\n"
    "Please answer the following question based on the above passages. Questions and answers are only relevant "
    "to one passage. Only give me the answer and do not output any other explanation and evidence.\n\n"
    "Question: {question}\nAnswer:"
)
_ZH_ONE_PASSAGE = (
    "请根据下面给定的文章回答问题，问题和答案只与其中一篇文章有关。\n\n文章：{context}\n\n"
    "现在请基于上述文章回答下面的问题，问题和答案只与其中一篇文章有关。\n\n问题：{question}\n回答："
)
PROMPTS: dict[str, str] = {
    "hotpotwikiqa_mixup": (
        "Answer the question based on the given passages. Questions and answers are only relevant to some "
        "passages. Only give me the answer and do not output any other explanation and evidence.\n\n"
        "Article: {context}\n\n"
        "Please answer the following question based on the above passages. Questions and answers are only "
        "relevant to some passages. Only give me the answer and do not output any other explanation and "
        "evidence.\n\nQuestion: {question}\nAnswer:"
    ),
    "loogle_SD_mixup": _EN_ONE_PASSAGE,
    "loogle_CR_mixup": _EN_ONE_PASSAGE,
    "loogle_MIR_mixup": _EN_ONE_PASSAGE,
    "multifieldqa_en_mixup": _EN_ONE_PASSAGE,
    "multifieldqa_zh_mixup": (
        "请阅读以下文章并用中文回答问题，问题和答案只与其中一篇文章有关。只需要直接给出问题的答案，不要输出其他任何解释和证据。\n\n"
        "文章：{context}\n\n"
        "请基于上面的文章回答下面的问题，问题和答案只与其中一篇文章有关。只需要直接给出问题的答案，不要输出其他任何解释和证据。\n\n"
        "问题：{question}\n回答："
    ),
    "factrecall_en": (
        "Please answer the following questions based on the given article.\n\nArticle: {context}\n\n"
        "Please answer the following questions based on the above article.\n\nQuestion: {question}\nAnswer:"
    ),
    "factrecall_zh": (
        "请基于给定的文章回答下述问题。\n\n文章：{context}\n\n"
        "现在请基于上述文章回答下面的问题。\n\n问题：{question}\n回答："
    ),
    "cmrc_mixup": _ZH_ONE_PASSAGE,
    "lic_mixup": (
        "请根据下面给定的文章回答问题，问题和答案只与其中一篇文章有关。\n\n文章：{context}\n\n"
        "请现在基于上述文章回答下面的问题，问题和答案只与其中一篇文章有关。\n\n问题：{question}\n回答："
    ),
    "dureader_mixup": _ZH_ONE_PASSAGE,
}
MAX_NEW_TOKENS: dict[str, int] = {name: 16 if name.startswith("factrecall") else 64 for name in DATASETS}
TEMPLATES: dict[str, PromptTemplate] = {
    name: PromptTemplate(text=PROMPTS[name], max_new_tokens=MAX_NEW_TOKENS[name], truncation="prompt_middle",
                         source=SOURCE)
    for name in DATASETS
}

NEEDLE_DATASETS = frozenset({"factrecall_en", "factrecall_zh"})
_FILE_NAME = re.compile(r"^(?P<dataset>.+)_(?P<level>\d{1,3}k)\.jsonl$")


@dataclass(frozen=True)
class LVEvalConfig:
    path: str | None = None  # file or folder; None: the hub dataset
    hub_id: str = HUB_ID
    revision: str | None = None  # hub revision (branch, tag or commit); None: main
    variant: str = "official"  # metric variant (eval.metrics.lveval): official | strict
    evidence_datasets: tuple[str, ...] = ("cmrc_mixup", "factrecall_en", "factrecall_zh")
    evidence_max_chars: int = 600


@dataclass(frozen=True)
class _DataFile:
    dataset: str
    level: str
    name: str  # for messages: a path, `archive.zip!member` or `hub_id/file.zip!member`
    open: Callable[[], AbstractContextManager[Iterable[bytes]]]


# ---------------------------------------------------------------------------- finding the files


def _plain_file(path: Path) -> Callable[[], AbstractContextManager[Iterable[bytes]]]:
    return lambda: path.open("rb")


def _zip_member(archive: Path, member: str) -> Callable[[], AbstractContextManager[Iterable[bytes]]]:
    @contextmanager
    def opener() -> Iterator[Iterable[bytes]]:
        with zipfile.ZipFile(archive) as zf, zf.open(member) as raw:
            yield raw

    return opener


def _member_in_zip(archive: Path, dataset: str, level: str) -> str | None:
    wanted = f"{dataset}_{level}.jsonl"
    try:
        with zipfile.ZipFile(archive) as zf:
            names = sorted(n for n in zf.namelist() if n.rsplit("/", 1)[-1] == wanted and "__MACOSX" not in n)
    except zipfile.BadZipFile as err:
        raise ValueError(f"{archive}: not a readable zip archive ({err})") from None
    return names[0] if names else None


def _parse_file_name(path: Path) -> tuple[str, str]:
    m = _FILE_NAME.match(path.name)
    if not m or m.group("dataset") not in LVEVAL_DATASETS or m.group("level") not in LEVELS:
        raise ValueError(
            f"{path}: an LV-Eval file is named {{dataset}}_{{level}}.jsonl with dataset one of {', '.join(DATASETS)} "
            f"and level one of {', '.join(LEVELS)}"
        )
    return m.group("dataset"), m.group("level")


def _files_in_one(root: Path, datasets: list[str], levels: list[str]) -> list[_DataFile]:
    """`benchmark.path` naming one file: a zip archive's members of the selected datasets and levels, or one
    `{dataset}_{level}.jsonl` file (refused when outside the selection)."""
    if root.suffix == ".zip":
        found = []
        for ds in datasets:
            for lvl in levels:
                member = _member_in_zip(root, ds, lvl)
                if member:
                    found.append(_DataFile(ds, lvl, f"{root}!{member}", _zip_member(root, member)))
        if not found:
            raise FileNotFoundError(f"{root}: no {{dataset}}_{{level}}.jsonl member "
                                    "for the selected datasets and levels")
        return found
    ds, lvl = _parse_file_name(root)
    if ds not in datasets or lvl not in levels:
        raise ValueError(f"{root} holds {ds} at {lvl}, "
                         f"outside benchmark.tasks={datasets} / benchmark.levels={levels}")
    return [_DataFile(ds, lvl, str(root), _plain_file(root))]


def _local_files(root: Path, datasets: list[str], levels: list[str], explicit: tuple[bool, bool]) -> list[_DataFile]:
    """The files of the selected datasets and levels. Missing files are an error when the user named
    both the dataset and the level, or named a dataset (level) none of whose files exist."""
    if root.is_file():
        return _files_in_one(root, datasets, levels)
    if not root.is_dir():
        raise FileNotFoundError(f"benchmark.path={str(root)!r}: no such file or folder")
    found, missing = [], []
    for ds in datasets:
        for lvl in levels:
            name = f"{ds}_{lvl}.jsonl"
            candidates = [root / name, root / ds / name]
            hit = next((p for p in candidates if p.is_file()), None)
            if hit is not None:
                found.append(_DataFile(ds, lvl, str(hit), _plain_file(hit)))
                continue
            archive = root / f"{ds}.zip"
            member = _member_in_zip(archive, ds, lvl) if archive.is_file() else None
            if member:
                found.append(_DataFile(ds, lvl, f"{archive}!{member}", _zip_member(archive, member)))
                continue
            missing.append((ds, lvl, f"{candidates[0]} (or {candidates[1]}, or {archive})"))
    some_datasets, some_levels = explicit
    have = {(f.dataset, f.level) for f in found}
    required = [
        where for ds, lvl, where in missing
        if (some_datasets and some_levels)
        or (some_datasets and not any(d == ds for d, _ in have))
        or (some_levels and not any(v == lvl for _, v in have))
    ]
    if required:
        raise FileNotFoundError(f"LV-Eval files missing for the selected datasets/levels: {'; '.join(required)}")
    if not found:
        raise FileNotFoundError(f"{root}: no LV-Eval {{dataset}}_{{level}}.jsonl files "
                                "(nor {dataset}.zip archives) found")
    if missing:
        log.info("LV-Eval: %d dataset/level files not in %s; loading the %d present", len(missing), root, len(found))
    return found


def _hub_files(cfg: LVEvalConfig, datasets: list[str], levels: list[str]) -> Iterator[_DataFile]:
    """The hub's `{dataset}.zip` data files, downloaded one dataset at a time (lazily, for `limit`)."""
    for ds in datasets:
        archive = _hub_download(cfg, f"{ds}.zip")
        for lvl in levels:
            member = _member_in_zip(archive, ds, lvl)
            if member is None:
                raise FileNotFoundError(f"{cfg.hub_id}/{ds}.zip has no {ds}_{lvl}.jsonl")
            yield _DataFile(ds, lvl, f"{cfg.hub_id}/{ds}.zip!{member}", _zip_member(archive, member))


def _hub_download(cfg: LVEvalConfig, filename: str) -> Path:
    try:
        from huggingface_hub import hf_hub_download
    except ImportError as err:  # pragma: no cover - huggingface_hub comes with transformers
        raise FileNotFoundError(f"reading {cfg.hub_id} from the hub needs huggingface_hub ({err}); "
                                "or set benchmark.path") from None
    try:
        return Path(hf_hub_download(repo_id=cfg.hub_id, filename=filename, repo_type="dataset", revision=cfg.revision))
    except Exception as err:  # noqa: BLE001 - offline, unknown repo or file, network failure: all end the same way
        raise FileNotFoundError(
            f"could not get {filename} of the hub dataset {cfg.hub_id} ({type(err).__name__}: {err}); "
            f"download https://huggingface.co/datasets/{cfg.hub_id}/resolve/main/{filename} and set "
            f"benchmark.path to the folder holding it (or its unpacked {{dataset}}_{{level}}.jsonl files)"
        ) from None


# ---------------------------------------------------------------------------- reading records


def read_jsonl(data: _DataFile) -> Iterator[Row]:
    """The records of one data file (blank lines skipped); a malformed line raises naming file and line."""
    with data.open() as lines:
        yield from parse_jsonl(lines, data.name)


def _optional(row: Row, name: str, types: tuple[type, ...]) -> Any:
    """An optional field: absent and null both give None (data passed through `datasets` has nulls)."""
    return None if row.data.get(name) is None else row.field(name, types)


# ---------------------------------------------------------------------------- locating evidence

_SENTENCE_END = re.compile(r"[。！？!?；;]|\.(?=\s|$)|\n")
_WORD = re.compile(r"\w+")
_CJK = re.compile(r"[\u3400-\u9fff]")


def occurrences(text: str, needle: str, ignore_case: bool = False) -> list[tuple[int, int]]:
    """Non-overlapping (start, end) of `needle` in `text`, left to right."""
    if not needle:
        return []
    hay, pin = (text.lower(), needle.lower()) if ignore_case else (text, needle)
    out, i = [], hay.find(pin)
    while i != -1:
        out.append((i, i + len(pin)))
        i = hay.find(pin, i + len(pin))
    return out


def _strip(text: str, a: int, b: int) -> tuple[int, int]:
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return a, b


def sentence_around(text: str, start: int, end: int, max_chars: int) -> tuple[int, int]:
    """The sentence holding text[start:end], cut to about `max_chars` around it if longer."""
    lo = max(0, start - max_chars)
    a = lo
    for m in _SENTENCE_END.finditer(text, lo, start):
        a = m.end()
    if lo > 0 and a == lo:
        a = start  # no boundary within reach: the window below decides
    after = _SENTENCE_END.search(text, end, min(len(text), end + max_chars))
    b = after.end() if after else min(len(text), end + max_chars)
    if b - a > max_chars:
        half = max(0, (max_chars - (end - start)) // 2)
        a, b = max(a, start - half), min(b, end + half)
    return _strip(text, a, b)


def paragraph_around(text: str, start: int, end: int, max_chars: int) -> tuple[int, int]:
    """The line (paragraph) holding text[start:end]; the sentence when the line is longer than `max_chars`."""
    a = text.rfind("\n", 0, start) + 1
    b = text.find("\n", end)
    b = len(text) if b == -1 else b
    if b - a <= max_chars:
        return _strip(text, a, b)
    return sentence_around(text, start, end, max_chars)


def _overlap_units(text: str) -> set[str]:
    cjk = _CJK.findall(text)
    if cjk:
        chars = "".join(cjk)
        return {chars[i : i + 2] for i in range(len(chars) - 1)}
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2}


def _inside(span: tuple[int, int], regions: list[Span]) -> bool:
    return any(r.start is not None and r.end is not None and r.start <= span[0] and span[1] <= r.end for r in regions)


def locate_fact(context: str, fact: str) -> list[Span]:
    """Spans of a confusing fact: verbatim, else each of its sentences (all must be found)."""
    fact = fact.strip()
    hits = occurrences(context, fact)
    if hits:
        return [Span(a, b) for a, b in hits]
    pieces = [p.strip() for p in _SENTENCE_END.split(fact) if len(p.strip()) >= 8]
    spans = []
    for piece in pieces:
        found = occurrences(context, piece)
        if not found:
            return []
        spans += [Span(a, b, quality=0.9) for a, b in found]
    return spans


def answer_evidence(
    context: str, question: str, answer: str, language: str, needle: bool, max_chars: int, exclude: list[Span]
) -> tuple[list[Span], dict[str, Any]]:
    """Evidence spans around the answer's occurrences, and what was done (for metadata)."""
    answer = answer.strip()
    if len(answer) < (2 if language == "zh" else 3):
        return [], {"evidence_source": "none", "evidence_note": "answer too short to locate"}
    hits = occurrences(context, answer) or (occurrences(context, answer, ignore_case=True) if language == "en" else [])
    hits = [h for h in hits if not _inside(h, exclude)]
    if not hits:
        return [], {"evidence_source": "none", "evidence_note": "answer not found verbatim in the context"}
    if needle:
        units = sorted({sentence_around(context, a, b, max_chars) for a, b in hits})
        alt = "answer" if len(units) > 1 else None  # any one occurrence of the needle is the evidence
        return [Span(a, b, alt=alt) for a, b in units], {
            "evidence_source": "factrecall_needle: the sentence around each occurrence of the answer",
            "answer_occurrences": len(hits),
        }
    units = [paragraph_around(context, a, b, max_chars) for a, b in hits]
    note: dict[str, Any] = {
        "evidence_source": "answer_passage: the paragraph (or sentence) around the answer",
        "answer_occurrences": len(hits),
    }
    if len(set(units)) == 1:
        return [Span(*units[0])], note
    wanted = _overlap_units(question)
    scores = [len(wanted & _overlap_units(context[a:b])) for a, b in units]
    best = max(range(len(units)), key=lambda i: (scores[i], -i))
    note["evidence_note"] = "answer occurs in several places: kept the one sharing most with the question"
    return [Span(*units[best], quality=round(1 / len(hits), 4))], note


# ---------------------------------------------------------------------------- samples


def _context_group(context: str) -> str:
    return "lveval/" + hashlib.sha1(context.encode("utf-8")).hexdigest()[:16]


def _checked_language(data: _DataFile, row: Row) -> str:
    """The file's dataset's language, after checking the line's own `dataset` and `language` fields against it."""
    dataset_field = _optional(row, "dataset", (str,))
    if dataset_field is not None:
        try:
            named = lveval_dataset(dataset_field)
        except KeyError:
            named = None
        if named != data.dataset:
            raise row.error(f"is {dataset_field!r} in a file of {data.dataset}_{data.level}", "dataset")
    language = LVEVAL_DATASETS[data.dataset]
    language_field = _optional(row, "language", (str,))
    if language_field is not None and language_field.lower() != language:
        raise row.error(f"is {language_field!r}, but {data.dataset} is {language!r}", "language")
    return language


def build_sample(data: _DataFile, row: Row, index: int, cfg: LVEvalConfig) -> Sample:
    question = row.field("input", str)
    context = row.field("context", str)
    answers: list[Answer] = list(row.str_list("answers"))
    if not answers:
        raise row.error("is empty: the first answer is the one scored", "answers")
    length = _optional(row, "length", (int, float))
    language = _checked_language(data, row)
    keywords = _optional(row, "answer_keywords", (str,))
    facts = _optional(row, "confusing_facts", (list, str))
    facts = [facts] if isinstance(facts, str) else row.str_list("confusing_facts") if facts is not None else []
    located = [locate_fact(context, fact) for fact in facts]  # each fact's spans in the context
    metadata: dict[str, Any] = {
        "source": data.name,
        "line": row.line,
        "length": length,
        "confusing_facts": facts,
        "confusing_facts_located": sum(bool(spans) for spans in located),
    }
    distractors = [span for spans in located for span in spans]
    evidence = _evidence(data, context, question, str(answers[0]), language, cfg, distractors, metadata)
    return Sample(
        id=f"lveval/{data.dataset}_{data.level}/{index}",
        benchmark="lveval",
        task=data.dataset,
        language=language,
        length_level=data.level,
        context=context,
        question=question,
        answers=answers,
        template=TEMPLATES[data.dataset],
        metric=lveval_metric(data.dataset),
        answer_keywords=keywords,
        evidence=evidence,
        distractors=distractors,
        group=_context_group(context),
        metadata=metadata,
        reference_extra={"variant": cfg.variant},
    )


def _evidence(data: _DataFile, context: str, question: str, answer: str, language: str, cfg: LVEvalConfig,
              distractors: list[Span], metadata: dict[str, Any]) -> list[Span]:
    """The gold evidence of the datasets that have it (how it was found, and where it sits, into `metadata`)."""
    if data.dataset not in cfg.evidence_datasets:
        metadata["evidence_source"] = "none"
        return []
    evidence, note = answer_evidence(context, question, answer, language, data.dataset in NEEDLE_DATASETS,
                                     cfg.evidence_max_chars, distractors)
    metadata.update(note)
    start = evidence[0].start if evidence else None  # a char span: answer_evidence finds occurrences
    if start is not None:  # where the (first) evidence sits, 0 = start of the context (records carry it)
        metadata["depth"] = round(start / max(1, len(context)), 4)
    return evidence


def _config(cfg: dict[str, Any]) -> LVEvalConfig:
    names = {f.name for f in fields(LVEvalConfig)}
    check_keys("lveval", cfg, names)
    opts = {k: v for k, v in cfg.items() if k in names}
    if opts.get("evidence_datasets") is not None:
        opts["evidence_datasets"] = tuple(opts["evidence_datasets"])
        bad = [d for d in opts["evidence_datasets"] if d not in LVEVAL_DATASETS]
        if bad:
            raise ValueError(f"benchmark.evidence_datasets: unknown {bad}; available: {', '.join(DATASETS)}")
    elif "evidence_datasets" in opts:
        opts["evidence_datasets"] = ()
    if "evidence_max_chars" in opts:
        opts["evidence_max_chars"] = int(opts["evidence_max_chars"])
    out = LVEvalConfig(**opts)
    if out.variant not in ("official", "strict"):
        raise ValueError(f"benchmark.variant must be 'official' or 'strict', not {out.variant!r}")
    if int(out.evidence_max_chars) < 20:
        raise ValueError(f"benchmark.evidence_max_chars must be at least 20, got {out.evidence_max_chars}")
    return out


class LVEvalBenchmark(Benchmark):
    """lveval: see the module docstring."""

    name = "lveval"
    tasks = DATASETS
    levels = LEVELS
    evidence = "spans"
    truncation = "prompt_middle"
    templates = TEMPLATES
    official_aggregate = staticmethod(lveval_official)  # the leaderboard's overall

    @classmethod
    def rescoring(cls, task: str, options: Any) -> Rescoring:
        dataset = lveval_dataset(task)  # a length suffix (`cmrc_mixup_16k`) is accepted and ignored
        language, variant = LVEVAL_DATASETS[dataset], options.variant
        return Rescoring(lveval_metric(task), lambda rec: Reference(text_answers(rec), keywords(rec), language, dataset,
                                                                    {"variant": variant}),
                         fields={"task": task})  # each line keeps the task as given, its length suffix too

    def load(self, cfg: dict[str, Any]) -> LoadResult:
        """The `benchmark=lveval` config group -> samples (see the module docstring)."""
        conf = _config(cfg)
        datasets, some_datasets = selection(cfg.get("tasks"), DATASETS, "tasks", "lveval")
        levels, some_levels = selection(cfg.get("levels"), LEVELS, "levels", "lveval")
        limit = cfg.get("limit")
        if conf.path:
            files: Iterable[_DataFile] = _local_files(Path(conf.path).expanduser(), datasets, levels,
                                                      (some_datasets, some_levels))
        else:
            files = _hub_files(conf, datasets, levels)
        result = LoadResult(first_samples((_file_samples(data, conf) for data in files),
                                          None if limit is None else int(limit)))
        _log_summary(result.samples)
        return result


def _file_samples(data: _DataFile, conf: LVEvalConfig) -> Iterator[Sample]:
    for index, row in enumerate(read_jsonl(data)):
        sample = None
        with record_guard():
            sample = build_sample(data, row, index, conf)
        if sample is not None:
            yield sample


def _log_summary(samples: list[Sample]) -> None:
    facts = sum(len(s.metadata["confusing_facts"]) for s in samples)
    located = sum(s.metadata["confusing_facts_located"] for s in samples)
    log.info(
        "LV-Eval: %d samples, %d with evidence, %d/%d confusing facts located in their contexts",
        len(samples), sum(bool(s.evidence) for s in samples), located, facts,
    )
