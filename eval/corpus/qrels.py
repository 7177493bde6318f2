"""BEIR qrels: a TSV (header `query-id<TAB>corpus-id<TAB>score`) that gives each query its relevant documents,
those with score > 0 (document-level evidence); a line naming a query or document that was not loaded is
an error naming file and line."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from eval.corpus.parsers import ParsedDocument
from eval.corpus.questions import decode_questions
from eval.data_files import DataError, record_guard

log = logging.getLogger(__name__)

QRELS_HEADER = ("query-id", "corpus-id", "score")


@dataclass
class Judgment:
    query: str
    document: str
    score: float
    line: int


def _qrels_line(fields_: list[str], source: str, lineno: int) -> Judgment:
    if len(fields_) != 3:
        raise DataError(source, lineno, f"{len(fields_)} tab-separated fields; a BEIR qrels line has 3: "
                        + "\t".join(QRELS_HEADER))
    query, document, score = (f.strip() for f in fields_)
    try:
        value = float(score)
    except ValueError:
        raise DataError(source, lineno, f"score {score!r} is not a number", "score") from None
    if not query or not document:
        raise DataError(source, lineno, "empty query-id or corpus-id")
    return Judgment(query, document, value, lineno)


def read_qrels(path: Path) -> list[Judgment]:
    """The judgments of a BEIR qrels TSV (its header line `query-id corpus-id score` is optional)."""
    if not path.is_file():
        raise FileNotFoundError(f"benchmark.qrels={str(path)!r}: no such file")
    source = str(path)
    out: list[Judgment] = []
    for lineno, line in enumerate(decode_questions(path.read_bytes(), source).splitlines(), 1):
        fields_ = line.rstrip("\r").split("\t")
        if not line.strip() or (not out and tuple(f.strip().lower() for f in fields_) == QRELS_HEADER):
            continue
        with record_guard():
            out.append(_qrels_line(fields_, source, lineno))
    return out


class Qrels:
    """Each question's relevant documents (score > 0) from a qrels file, checked against what was loaded."""

    def __init__(self, path: Path, docs: dict[str, ParsedDocument]):
        self.path = path
        self.judgments: list[Judgment] = []
        for j in read_qrels(path):
            with record_guard():
                if j.document not in docs:
                    raise DataError(str(path), j.line, f"corpus-id {j.document!r} is not among the {len(docs)} "
                                    "documents read", "corpus-id")
                self.judgments.append(j)
        self.relevant: dict[str, list[str]] = {}
        for j in self.judgments:
            if j.score > 0 and j.document not in self.relevant.setdefault(j.query, []):
                self.relevant[j.query].append(j.document)

    def check_queries(self, loaded: set[str]) -> None:
        """A judgment of a query that is not among the loaded questions: an error naming its line."""
        for j in self.judgments:
            if j.query not in loaded:
                with record_guard():
                    raise DataError(str(self.path), j.line, f"query-id {j.query!r} is not among the questions "
                                    "loaded", "query-id")
