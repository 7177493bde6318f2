"""A BEIR `corpus.jsonl` as documents (one per line, named by its `_id`), and its companions beside it
(`queries.jsonl`, the `qrels/` folder), which are questions and judgments, not documents."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

from eval.corpus.parsers import BEIR_CORPUS, BadFile, ParsedDocument

log = logging.getLogger(__name__)


BEIR_COMPANIONS = ("queries.jsonl", "qrels")  # beside a corpus.jsonl: BEIR's questions and judgments


def beir_corpus(path: Path, name: str) -> Iterator[ParsedDocument | BadFile]:
    """The documents of a BEIR `corpus.jsonl` (`{_id, title, text}` per line)."""
    from eval.data_files import DataError, read_records

    try:
        for row in read_records(path):
            try:
                doc_id, text = row.field("_id", (str, int)), row.field("text", str)
                title = row.field("title", str, "")
            except DataError as err:
                yield BadFile(f"{name}:{row.line}", err.detail)
                continue
            if not text.strip():
                yield BadFile(f"{name}:{row.line}", f"document {doc_id!r} has no text")
                continue
            yield ParsedDocument(str(doc_id), f"{title}\n{text}" if title else text, title=title)
    except DataError as err:
        yield BadFile(name if err.line is None else f"{name}:{err.line}", err.detail)


def beir_companion(path: Path, root: Path) -> bool:
    """`queries.jsonl` or a file under `qrels/` in a folder that holds a BEIR `corpus.jsonl`."""
    for folder in path.parents:
        if (folder / BEIR_CORPUS).is_file():
            rel = path.relative_to(folder).parts
            return rel[0] == BEIR_COMPANIONS[1] or rel == (BEIR_COMPANIONS[0],)
        if folder == root:
            return False
    return False
