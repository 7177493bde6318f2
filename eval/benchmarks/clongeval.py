"""CLongEval (zexuanqiu/CLongEval): 7 Chinese long-context tasks in three sizes -> `Sample`s.

Where the data comes from (`benchmark.path`), in the released layout (one folder per task, named
`1-1_long_story_qa` ... `4-2_table_querying` as on the hub, or just the task name), each with
`small.jsonl`, `medium.jsonl`, `large.jsonl` (1-16K, 16-50K, 50-100K InternLM2 tokens):

* the data folder holding the task folders;
* one task folder;
* one `{size}.jsonl` file inside a task folder;
* `null`: the hub dataset `zexuanqiu22/CLongEval` (`benchmark.hub_id`), whose
  `{task folder}/{size}.jsonl` files are downloaded with `huggingface_hub` (no remote code).

A snapshot of the hub repository (`huggingface-cli download --repo-type dataset zexuanqiu22/CLongEval
--local-dir DIR`) is the data folder: `path: DIR` (its `.cache/huggingface/` is ignored).

Only the files of the selected tasks and sizes are opened; with `limit`, reading stops once enough
samples are read. Order: tasks in the released order (as `eval.metrics.clongeval` lists them),
sizes small, medium, large, records in file order. `task` is the task name, `length_level` the
size (`small`, `medium`, `large`), `id` is `clongeval/{task}/{size}/{record id}`.

Fields: `id`, `context`, `query` (empty for the summarization, news-labeling and typo tasks),
`answer`, `internlm2_length`.

Prompts and max new tokens are the released `config/dataset2prompt.json` and
`config/dataset2maxlen.json`. The released `inference.py` never truncates (every model it ran had a
window longer than the set it was given); for models with shorter windows the long-context arm
cuts the middle of the context, as LongBench (which the release adapts) does.

Gold evidence (`metadata["evidence_source"]` says which):

* key_passage_retrieval: the context is a JSON object and the answer is the value of the key the
  query names; the evidence is the char span of that value in the context text (quality 1.0
  when the decoded value equals the answer; `metadata["key_span"]` is where the key stands);
* table_querying: the question names a table (`表格-197196`); the evidence is that table's
  char span: the line naming it and its Markdown rows (`|...|` lines) next to it;
* the other tasks: none (the answer is not a verbatim part of the context).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from eval.benchmarks.base import Benchmark, LoadResult, Rescoring
from eval.benchmarks.common import check_keys, first_samples, selection
from eval.data_files import Row, read_records, record_guard
from eval.metrics.clongeval import CLONGEVAL_SIZES, CLONGEVAL_TASK_METRIC, clongeval_metric, excluded_in
from eval.prediction_lines import text_answers
from eval.sample import PromptTemplate, Reference, Sample, Span

log = logging.getLogger(__name__)

HUB_ID = "zexuanqiu22/CLongEval"
TASKS: tuple[str, ...] = tuple(CLONGEVAL_TASK_METRIC)
SIZES: tuple[str, ...] = CLONGEVAL_SIZES
TASK_FOLDERS: dict[str, str] = {
    "long_story_qa": "1-1_long_story_qa",
    "long_conversation_memory": "1-2_long_conversation_memory",
    "long_story_summarization": "2-1_long_story_summarization",
    "stacked_news_labeling": "3-1_stacked_news_labeling",
    "stacked_typo_detection": "3-2_stacked_typo_detection",
    "key_passage_retrieval": "4-1_key_passage_retrieval",
    "table_querying": "4-2_table_querying",
}
QUERY_TASKS = frozenset({"long_story_qa", "long_conversation_memory", "key_passage_retrieval", "table_querying"})
SOURCE = "zexuanqiu/CLongEval config/dataset2prompt.json, config/dataset2maxlen.json"

# The released prompts (config/dataset2prompt.json), positional `{}` named `{context}`, `{question}`.
PROMPTS: dict[str, str] = {
    "long_story_qa": (
        "下面是一部小说的节选。请阅读该小说节选，并尽可能用简洁的短语（或短句）回答给定的问题，不要提供任何解释。\n小说节选如下：\n\n"
        "{context}\n\n请尽可能简洁地回答下列问题，不要提供任何解释。\n问题：{question}\n答案："
    ),
    "long_conversation_memory": (
        "你是一个具有聊天陪伴功能的ai伴侣。下面是用户和你的对话记录, 请你阅读对话记录后尽可能简洁地回答问题，"
        "不要提供任何解释。对话记录由多天的对话组成：\n\n{context}{question}\n答案："
    ),
    "long_story_summarization": (
        "下面是一个小说节选，请你阅读后写出相应的摘要，不要输出其他任何内容。\n小说节选如下：\n\n{context}\n\n摘要："
    ),
    "stacked_news_labeling": (
        "下面是一个新闻列表。每个新闻属于【体育，娱乐，家居，房产，教育，时政，游戏，科技，财经】这九个类别的某一个类别。"
        "请按顺序判断并输出每个新闻的所属类别，输出格式为：\n新闻1，类别名1\n新闻2，类别名2\n......\n新闻N，类别名N\n\n"
        "新闻如下：\n\n{context}\n\n每个新闻的所属类别依次为：\n"
    ),
    "stacked_typo_detection": (
        "下面是一部小说的多个段落，每个段落包含段落ID以及段落内容。有些段落中不存在错别字，有些段落有且仅有一个错别字，"
        "该错别字与原来的正确汉字同音。请按照段落顺序输出错别字，输出格式为：段落ID，错别字，正确字。不同段落ID用换行符隔开。"
        "例如，一个示例输出是\"4，蚔，奇\n8，鎌，连\"。"
        "该示例输出中的第一行表示在ID为4的段落中，错别字为蚔，正确字应为奇；"
        "第二行表示在ID为8的段落中，错别字为鎌，正确字应为连。小说的多个段落如下：\n\n{context}\n\n所有的错别字为：\n"
    ),
    "key_passage_retrieval": (
        "请提取下面 JSON 对象中指定键对应的值。只输出对应键的值，不输出任何其他文字。Json数据如下：\n\n"
        "{context}\n\n键：{question}\n值："
    ),
    "table_querying": (
        "请根据下列多个表格的内容回答给定问题，表格为Markdown格式。请直接返回问题的答案，除此之外不要输出其他内容。"
        "表格如下：\n\n{context}。\n\n问题：{question}\n答案："
    ),
}
MAX_NEW_TOKENS: dict[str, int] = {
    "long_story_qa": 100,
    "long_conversation_memory": 100,
    "long_story_summarization": 400,
    "stacked_news_labeling": 800,
    "stacked_typo_detection": 800,
    "key_passage_retrieval": 400,
    "table_querying": 50,
}
TEMPLATES: dict[str, PromptTemplate] = {
    task: PromptTemplate(text=PROMPTS[task], max_new_tokens=MAX_NEW_TOKENS[task], truncation="middle", source=SOURCE)
    for task in TASKS
}


@dataclass(frozen=True)
class CLongEvalConfig:
    path: str | None = None  # data folder, task folder or {size}.jsonl file; None: the hub dataset
    hub_id: str = HUB_ID
    revision: str | None = None  # hub branch, tag or commit; None: main
    variant: str = "official"  # metric variant (eval.metrics.clongeval): official | strict
    typo_answer_order: str = "id,correct,typo"  # order of the released typo answers (see eval.metrics.clongeval)


# ---------------------------------------------------------------------------- finding the files


def _task_of_folder(name: str) -> str | None:
    task = re.sub(r"^\d+-\d+_", "", name)
    return task if task in TASK_FOLDERS else None


def _size_of_file(path: Path) -> str | None:
    return path.stem if path.suffix == ".jsonl" and path.stem in SIZES else None


def _local_files(root: Path, tasks: list[str], sizes: list[str],
                 explicit: tuple[bool, bool]) -> list[tuple[str, str, Path]]:
    """(task, size, path) of the selected files. A missing file is an error when the user named both
    its task and size, or named a task (size) none of whose files exist."""
    if root.is_file():
        task, size = _task_of_folder(root.parent.name), _size_of_file(root)
        if task is None or size is None:
            raise ValueError(
                f"{root}: a CLongEval file is {{small,medium,large}}.jsonl inside a task folder "
                f"({', '.join(TASK_FOLDERS.values())}, or the bare task names)"
            )
        if task not in tasks or size not in sizes:
            raise ValueError(f"{root} holds {task}/{size}, outside benchmark.tasks={tasks} / benchmark.levels={sizes}")
        return [(task, size, root)]
    if not root.is_dir():
        raise FileNotFoundError(f"benchmark.path={str(root)!r}: no such file or folder")
    own_task = _task_of_folder(root.name)
    if own_task is not None and not any((root / TASK_FOLDERS[t]).is_dir() or (root / t).is_dir() for t in TASKS):
        folders = {own_task: root}  # a single task folder
    else:
        folders = {}
        for task in TASKS:
            for name in (TASK_FOLDERS[task], task):
                if (root / name).is_dir():
                    folders[task] = root / name
                    break
    found, missing = [], []
    for task in tasks:
        for size in sizes:
            path = folders[task] / f"{size}.jsonl" if task in folders else None
            if path is not None and path.is_file():
                found.append((task, size, path))
            else:
                where = path or root / TASK_FOLDERS[task] / f"{size}.jsonl"
                missing.append((task, size, str(where)))
    some_tasks, some_sizes = explicit
    have = {(t, s) for t, s, _ in found}
    required = [
        where for task, size, where in missing
        if (some_tasks and some_sizes)
        or (some_tasks and not any(t == task for t, _ in have))
        or (some_sizes and not any(s == size for _, s in have))
    ]
    if required:
        raise FileNotFoundError(f"CLongEval files missing for the selected tasks/sizes: {'; '.join(required)}")
    if not found:
        raise FileNotFoundError(f"{root}: no CLongEval task folders with {{small,medium,large}}.jsonl found")
    return found


def _hub_files(cfg: CLongEvalConfig, tasks: list[str], sizes: list[str]) -> Iterator[tuple[str, str, Path]]:
    """The hub's `{task folder}/{size}.jsonl` files, downloaded one at a time (lazily, for `limit`)."""
    for task in tasks:
        for size in sizes:
            yield task, size, _hub_download(cfg, f"{TASK_FOLDERS[task]}/{size}.jsonl")


def _hub_download(cfg: CLongEvalConfig, filename: str) -> Path:
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
            f"download the dataset's task folders and set benchmark.path to the folder holding them"
        ) from None


# ---------------------------------------------------------------------------- evidence

_TABLE_NAME = re.compile(r"表格\s*[-－]\s*[0-9A-Za-z_]+")


def key_passage_span(context: str, key: str, answer: str) -> tuple[Span | None, dict[str, Any]]:
    """The span of the value of `key` in the JSON text `context`."""
    for literal in dict.fromkeys((json.dumps(key, ensure_ascii=False), json.dumps(key))):
        m = re.search(re.escape(literal) + r'\s*:\s*"', context)
        if m is None:
            continue
        start = m.end()  # just after the value's opening quote
        try:
            value, after = json.decoder.scanstring(context, start)  # type: ignore[attr-defined]  # CPython's, not in typeshed
        except json.JSONDecodeError:
            break
        exact = value.strip() == answer.strip()
        note = {
            "evidence_source": "key_passage: the value of the queried key",
            "key_span": [m.start(), m.start() + len(literal)],
        }
        if not exact:
            note["evidence_note"] = "the value in the context differs from the answer"
        return Span(start, after - 1, quality=1.0 if exact else 0.5), note
    start = context.find(answer.strip()) if answer.strip() else -1
    if start != -1:
        return Span(start, start + len(answer.strip())), {
            "evidence_source": "key_passage: the answer found verbatim (the key was not found)"}
    return None, {"evidence_source": "none", "evidence_note": "queried key not found in the context"}


def _lines(text: str) -> list[tuple[int, int]]:
    out, start = [], 0
    for line in text.split("\n"):
        out.append((start, start + len(line)))
        start += len(line) + 1
    return out


def table_span(context: str, question: str) -> tuple[Span | None, dict[str, Any]]:
    """The span of the table the question names: its naming line and the Markdown rows next to it.

    Whether names stand before or after their tables is read from the context's first table (a
    name inside a table's rows is taken as naming that table).
    """
    m = _TABLE_NAME.search(question)
    if m is None:
        return None, {"evidence_source": "none", "evidence_note": "the question names no table"}
    name = m.group(0)
    lines = _lines(context)
    text = [context[a:b] for a, b in lines]
    rows = [t.lstrip().startswith("|") for t in text]
    blank = [not t.strip() for t in text]
    first_kind = next((rows[i] for i, t in enumerate(text) if rows[i] or _TABLE_NAME.search(t)), False)
    names_first = not first_kind

    def block(start: int, step: int) -> int:
        """The last row index of the table starting at `start` (rows only) going by `step`."""
        k = start
        while 0 <= k + step < len(lines) and rows[k + step]:
            k += step
        return k

    for hit in (h.start() for h in re.finditer(re.escape(name) + r"(?![0-9A-Za-z_])", context)):
        i = next(k for k, (a, b) in enumerate(lines) if a <= hit <= b)
        if rows[i]:  # named inside the table
            first, last = block(i, -1), block(i, 1)
        else:
            step = 1 if names_first else -1
            j = i + step
            while 0 <= j < len(lines) and blank[j] and abs(j - i) <= 2:
                j += step
            if not (0 <= j < len(lines) and rows[j]):
                continue
            first, last = (i, block(j, 1)) if names_first else (block(j, -1), i)
        return Span(lines[first][0], lines[last][1]), {"evidence_source": "table: the table the question names",
                                                       "table": name}
    return None, {"evidence_source": "none", "evidence_note": f"table {name} not found in the context"}


# ---------------------------------------------------------------------------- samples


def _context_group(context: str) -> str:
    return "clongeval/" + hashlib.sha1(context.encode("utf-8")).hexdigest()[:16]


def build_sample(task: str, size: str, row: Row, cfg: CLongEvalConfig) -> Sample:
    record_id = row.field("id", (str, int))
    context = row.field("context", str)
    query = "" if row.data.get("query") is None else row.field("query", str)  # absent or null: no question
    answer = row.field("answer", str)
    length = None if row.data.get("internlm2_length") is None else row.field("internlm2_length", (int, float))
    if task in QUERY_TASKS and not query.strip():
        raise row.error(f"is empty, but {task} asks a question", "query")
    metadata: dict[str, Any] = {"source": row.source, "line": row.line, "record_id": record_id,
                                "internlm2_length": length}
    if task == "key_passage_retrieval":
        span, note = key_passage_span(context, query, answer)
    elif task == "table_querying":
        span, note = table_span(context, query)
    else:
        span, note = None, {"evidence_source": "none"}
    metadata.update(note)
    evidence: list[Span] = [span] if span is not None else []
    if span is not None and span.start is not None:  # a char span (always, for these two tasks)
        metadata["depth"] = round(span.start / max(1, len(context)), 4)  # 0 = start of the context
    extra: dict[str, Any] = {"variant": cfg.variant}
    if task == "stacked_typo_detection":
        extra["typo_answer_order"] = cfg.typo_answer_order
    return Sample(
        id=f"clongeval/{task}/{size}/{record_id}",
        benchmark="clongeval",
        task=task,
        language="zh",
        length_level=size,
        context=context,
        question=query,
        answers=[answer],
        template=TEMPLATES[task],
        metric=CLONGEVAL_TASK_METRIC[task],
        evidence=evidence,
        group=_context_group(context),
        metadata=metadata,
        reference_extra=extra,
    )


def _config(cfg: dict[str, Any]) -> CLongEvalConfig:
    names = {f.name for f in fields(CLongEvalConfig)}
    check_keys("clongeval", cfg, names)
    out = CLongEvalConfig(**{k: v for k, v in cfg.items() if k in names})
    if out.variant not in ("official", "strict"):
        raise ValueError(f"benchmark.variant must be 'official' or 'strict', not {out.variant!r}")
    if out.typo_answer_order not in ("id,correct,typo", "id,typo,correct"):
        raise ValueError("benchmark.typo_answer_order must be 'id,correct,typo' or 'id,typo,correct', "
                         f"not {out.typo_answer_order!r}")
    return out


def _file_samples(task: str, size: str, path: Path, conf: CLongEvalConfig) -> Iterator[Sample]:
    seen: dict[str, int] = {}
    for row in read_records(path):
        sample = None
        with record_guard():
            sample = build_sample(task, size, row, conf)
            if sample.id in seen:
                raise row.error(f"duplicates the id of line {seen[sample.id]}", "id")
            seen[sample.id] = row.line
        if sample is not None:
            yield sample


class CLongEvalBenchmark(Benchmark):
    """clongeval: see the module docstring."""

    name = "clongeval"
    tasks = TASKS

    @classmethod
    def rescoring(cls, task: str, options: Any) -> Rescoring:
        kept = {"variant": options.variant, "typo_answer_order": options.typo_answer_order}
        return Rescoring(clongeval_metric(task), lambda rec: Reference(text_answers(rec), None, "zh", task, dict(kept)),
                         excluded=excluded_in(options.variant))
    levels = SIZES
    evidence = "spans"
    truncation = "middle"
    templates = TEMPLATES

    def load(self, cfg: dict[str, Any]) -> LoadResult:
        """The `benchmark=clongeval` config group -> samples (see the module docstring)."""
        conf = _config(cfg)
        tasks, some_tasks = selection(cfg.get("tasks"), TASKS, "tasks", "clongeval")
        sizes, some_sizes = selection(cfg.get("levels"), SIZES, "levels", "clongeval")
        limit = cfg.get("limit")
        if conf.path:
            files: Iterable[tuple[str, str, Path]] = _local_files(Path(conf.path).expanduser(), tasks, sizes,
                                                                  (some_tasks, some_sizes))
        else:
            files = _hub_files(conf, tasks, sizes)
        streams = (_file_samples(task, size, path, conf) for task, size, path in files)
        result = LoadResult(first_samples(streams, None if limit is None else int(limit)))
        log.info("CLongEval: %d samples, %d with evidence", len(result.samples),
                 sum(bool(s.evidence) for s in result.samples))
        return result
