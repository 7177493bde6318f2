"""A team's questions file: `.jsonl` (or a `.json` array) or `.csv`, one question per row, in UTF-8 (with or
without a byte order mark), UTF-16 or GB18030 (a file mixing encodings is refused, naming the line), or a
BEIR `queries.jsonl`; each row read into a `Question` with every error naming file, line and field
(eval/benchmarks/corpus.py lists the fields)."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from eval.answers import Answer
from eval.corpus.parsers import Unparsable, decoded
from eval.data_files import DataError, Row, parse_jsonl, record_guard

log = logging.getLogger(__name__)

DEFAULT_TASK = "qa"


_CJK = re.compile(r"[\u3400-\u9fff]")


_LETTER = re.compile(r"[A-Za-z\u3400-\u9fff]")


_BOMS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")


@dataclass
class Question:
    id: str
    question: str
    answers: list[Answer]  # each a text, or alternatives any of which counts (eval/answers.py)
    documents: list[str]
    evidence: list[str]
    task: str
    row: Row


def language_of(text: str) -> str:
    """`zh` when most letters are CJK characters, else `en`."""
    letters = _LETTER.findall(text)
    return "zh" if letters and len(_CJK.findall(text)) / len(letters) > 0.3 else "en"


def _mixed_encodings(data: bytes, source: str) -> DataError | None:
    """The error for a file whose non-ASCII lines are partly UTF-8 and partly not (None: not mixed)."""
    utf8, other = None, None
    for lineno, line in enumerate(data.split(b"\n"), 1):
        if line.isascii():
            continue
        try:
            line.decode("utf-8")
            utf8 = utf8 or lineno
        except UnicodeDecodeError:
            other = other or lineno
        if utf8 and other:
            return DataError(source, other, f"not UTF-8, while line {utf8} is: the file mixes encodings; "
                             "save it in one (UTF-8)")
    return None


def decode_questions(data: bytes, source: str) -> str:
    """A questions (or qrels) file as text: UTF-8 (a byte order mark allowed), UTF-16, GB18030 or another
    encoding charset-normalizer recognises; a file whose lines mix UTF-8 and another encoding is refused
    naming the first line that is not UTF-8 (a guess for the whole file would garble the other lines)."""
    if not data.startswith(_BOMS):
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            mixed = _mixed_encodings(data, source)
            if mixed is not None:
                raise mixed from None
    try:
        text, encoding = decoded(data)
    except Unparsable as err:
        raise DataError(source, None, str(err)) from None
    if encoding.endswith("(guessed)"):
        log.warning("%s: not UTF-8, UTF-16 or GB18030; read as %s: check its text, or save it as UTF-8", source,
                    encoding)
    return text.removeprefix("\ufeff")


def _csv_rows(text: str, source: str) -> Iterator[Row]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        if reader.fieldnames is None:
            return
        line = reader.line_num + 1
        for data in reader:
            yield Row({k.strip(): (v.strip() if isinstance(v, str) else v) for k, v in data.items() if k}, source, line)
            line = reader.line_num + 1
    except csv.Error as err:
        raise DataError(source, reader.line_num, f"malformed CSV: {err}") from None


def _array_rows(text: str, source: str) -> Iterator[Row]:
    """The objects of a `.json` file holding one array (`line`: the item's 1-based position)."""
    try:
        items = json.loads(text)
    except json.JSONDecodeError as err:
        raise DataError(source, err.lineno, f"malformed JSON: {err.msg} (column {err.colno})") from None
    for i, item in enumerate(items, 1):
        with record_guard():
            if not isinstance(item, dict):
                raise DataError(source, i, f"item {i} of the JSON array is {type(item).__name__}, not an object")
            yield Row(item, source, i)


def question_rows(path: Path) -> Iterator[Row]:
    """The rows of a `.jsonl`/`.json` or `.csv` questions file, in any encoding `decode_questions` reads."""
    if not path.is_file():
        raise FileNotFoundError(f"benchmark.questions={str(path)!r}: no such file")
    text = decode_questions(path.read_bytes(), str(path))
    if path.suffix.lower() == ".csv":
        return _csv_rows(text, str(path))
    if text.lstrip().startswith("["):
        return _array_rows(text, str(path))
    return parse_jsonl((line.encode("utf-8") for line in text.split("\n")), str(path))


def _text_list(row: Row, name: str) -> list[str]:
    """A field that may be a list of text, one text, a JSON list in a CSV cell, or absent."""
    value = row.data.get(name)
    if value is None or value == "":
        return []
    if isinstance(value, str) and row.source.endswith(".csv") and value.lstrip().startswith("["):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as err:
            raise row.error(f"not a JSON list ({err.msg})", name) from None
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return [str(value)]
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value):
        return [str(v) for v in value if str(v).strip()]
    raise row.error(f"must be text or a list of text, got {type(value).__name__}", name)


def _answer_list(row: Row) -> list[Answer]:
    """`answers`: one text, or a list whose entries are texts or lists of alternatives (eval/answers.py), as in
    `_text_list`; a list of alternatives with one text is that text. Anything else raises, naming the entry."""
    value = row.data.get("answers")
    if isinstance(value, str) and row.source.endswith(".csv") and value.lstrip().startswith("["):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as err:
            raise row.error(f"not a JSON list ({err.msg})", "answers") from None
    if not isinstance(value, list):
        return list(_text_list(row, "answers"))  # absent, one text, or refused naming its type
    out: list[Answer] = []
    for i, entry in enumerate(value):
        if isinstance(entry, list):
            texts = [str(t) for t in entry if _is_text(t)]
            if len(texts) != len(entry):
                bad = next(t for t in entry if not _is_text(t))
                raise row.error(f"entry {i + 1} lists alternatives, which must be text: got {type(bad).__name__} "
                                f"{bad!r}", "answers")
            texts = [t for t in texts if t.strip()]
            if not texts:
                raise row.error(f"entry {i + 1} is an empty list of alternatives (write at least one answer)",
                                "answers")
            out.append(texts if len(texts) > 1 else texts[0])
        elif _is_text(entry):
            if str(entry).strip():
                out.append(str(entry))
        else:
            raise row.error(f"entry {i + 1} must be text or a list of alternatives (texts), got "
                            f"{type(entry).__name__}", "answers")
    return out


def _is_text(value: object) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def is_beir_query(row: Row) -> bool:
    """A BEIR `queries.jsonl` row: `_id` and `text`, no `question`."""
    return "question" not in row.data and "_id" in row.data and "text" in row.data


APPROVE_YES = frozenset({"", "y", "yes", "true", "1", "ok", "x"})


APPROVE_NO = frozenset({"n", "no", "false", "0", "reject", "drop"})


def approved(row: Row) -> bool:
    """A row's `approve` column (the review CSV `python -m testset` writes): empty or yes keeps the question,
    no leaves it out (counted); any other value is an error naming file, line and field."""
    value = row.data.get("approve")
    if value is None or isinstance(value, bool):
        return value is not False
    text = str(value).strip().lower()
    if text in APPROVE_YES or text in APPROVE_NO:
        return text in APPROVE_YES
    raise row.error(f"{value!r} is neither yes ({', '.join(sorted(APPROVE_YES - {''}))}, or empty) nor no "
                    f"({', '.join(sorted(APPROVE_NO))})", "approve")


def question_of(row: Row) -> Question:
    """One question (a BEIR query too); a bad row raises `DataError` naming file, line and field."""
    beir = is_beir_query(row)
    field, id_field = ("text", "_id") if beir else ("question", "id")
    question = row.field(field, str).strip()
    if not question:
        raise row.error("is empty", field)
    qid = row.data.get(id_field)
    if isinstance(qid, (dict, list, bool)):
        raise row.error(f"must be text or a number, got {type(qid).__name__}", id_field)
    qid = str(qid) if qid not in (None, "") else "q" + hashlib.sha256(question.encode()).hexdigest()[:12]
    task = str(row.data.get("task") or DEFAULT_TASK)
    return Question(qid, question, _answer_list(row), _text_list(row, "documents"),
                    _text_list(row, "evidence"), task, row)
