"""What a corpus run was run on, as two short hashes: its documents and its questions.

`documents`: every file under the folder (as `eval.corpus.folder.files_under` lists them: hidden ones left out), by
its relative path and its bytes; `questions`: the questions file's bytes (and the qrels file's, where there is
one). An edited questions file or a changed document gives another fingerprint, so `rol-decide` writes another
sweep folder (experiments/decide.py) and the report refuses to pool runs whose fingerprints differ unless asked
(experiments/report/data_mix.py).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from eval.corpus.folder import files_under

SHORT = 8  # hex digits of a fingerprint


def _file_digest(path: Path) -> bytes:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.digest()


def documents_fingerprint(folder: str | Path) -> str:
    """A short hash of every file under `folder`: its path relative to the folder and its bytes."""
    root = Path(folder)
    h = hashlib.sha256()
    files = [root] if root.is_file() else files_under(root)
    for path in files:
        h.update(path.relative_to(root).as_posix().encode() if path != root else path.name.encode())
        h.update(b"\0" + _file_digest(path))
    return h.hexdigest()[:SHORT]


def questions_fingerprint(*files: str | Path | None) -> str:
    """A short hash of the questions file (and the qrels file) bytes."""
    h = hashlib.sha256()
    for f in files:
        if f:
            h.update(_file_digest(Path(f)))
    return h.hexdigest()[:SHORT]


def data_fingerprint(folder: str | Path, questions: str | Path, qrels: str | Path | None = None) -> dict[str, str]:
    """{"documents": ..., "questions": ...}: what `metrics.json` `data_fingerprint` records."""
    return {"documents": documents_fingerprint(folder), "questions": questions_fingerprint(questions, qrels)}


__all__ = ["data_fingerprint", "documents_fingerprint", "questions_fingerprint"]
