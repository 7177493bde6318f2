"""questions.html: the question viewer, a static page beside report.html that stays small at any size.

No network, no CDN, works from file://. The page holds an index of its questions (what the filters read:
benchmark, level, task, outcome cell, each answer's config and loss reason) and the script
(experiments.report.page.viewer_script); the rows themselves (experiments.report.questions.rows: question,
answers, chunks, context windows) are cut into parts of about `PART_BYTES`, each with its own string table. A small
report (everything under `ONE_FILE_BYTES`) keeps its parts inside the page: one self-contained file. A larger one
writes them, gzip-compressed (in base64), as scripts under `questions_data/` beside the page, which it reads as the
reader pages and filters (a text search reads one more file, every question's text: `search.js`) and decompresses
with the browser's own DecompressionStream: the page opens in the same time at 100k answers as at 2k, and the
report folder, shared whole, carries the parts at a fraction of their size. The index grows by a few dozen bytes
a question; past `PAGE_MAX_BYTES` of it, the viewer holds the first questions (in its order: benchmark, level,
task, id) and the report says how many, the others being in lost_answers.csv and `--export details`.

The filters live in the URL's hash (`questions.html#cell=only_rag&level=1k`), which is how the report's first
screen and agreement table link to a filtered view (`questions_link`); `open=<question id>` opens that question's
chunks and context window. `read_viewer` reads a written viewer back into the rows it was written from (tests).
"""

from __future__ import annotations

import base64
import gzip
import html
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from eval.storage import atomic_write_text
from experiments.report.page.viewer_script import BOOT, SCRIPT, STYLE
from experiments.report.questions.reasons import REASONS

QUESTIONS_FILE = "questions.html"
DATA_DIR = "questions_data"
SEARCH_FILE = "search.js"  # in DATA_DIR: every question's searchable text, read when the reader searches
FILTERS = ("bench", "level", "task", "cell", "reason", "config", "q")
PART_BYTES = 500_000  # a part: what a page of results reads at most per question it shows
ONE_FILE_BYTES = 8_000_000  # up to this, parts inline: one file
PAGE_MAX_BYTES = 15_000_000  # the page a reader opens, at most
TITLE = "Every question: RAG vs long context"


def questions_link(**filters: Any) -> str:
    """The viewer's URL filtered to `filters` (keys in FILTERS; None values left out)."""
    unknown = set(filters) - set(FILTERS)
    if unknown:
        raise ValueError(f"unknown viewer filter(s) {', '.join(sorted(unknown))}; known: {', '.join(FILTERS)}")
    parts = [f"{k}={quote(str(v), safe='')}" for k, v in filters.items() if v not in (None, "")]
    return QUESTIONS_FILE + ("#" + "&".join(parts) if parts else "")


def _json(payload: Any) -> str:
    """JSON safe inside a <script> element, read by JSON.parse or as a script (`</` and `<!--` escaped)."""
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return text.replace("</", "<\\/").replace("<!--", "\\u003c!--")


@dataclass
class Viewer:
    """The viewer cut into its page's index and its parts (each part's rows as JSON)."""

    index: dict[str, Any]
    parts: list[str] = field(default_factory=list)
    search: list[str] = field(default_factory=list)  # each held question's searchable text
    questions: int = 0  # in the rows
    held: int = 0  # in the viewer (all but past PAGE_MAX_BYTES of index)

    @property
    def inline(self) -> bool:
        return sum(map(len, self.parts)) + len(_json(self.index)) <= ONE_FILE_BYTES


def _local(q: dict[str, Any], texts: list[str], table: dict[int, int], local: list[str]) -> dict[str, Any]:
    """`q` with its text ids moved from the rows' string table into a part's own (`table`: old id -> new)."""
    def tid(i: int) -> int:
        if i not in table:
            table[i] = len(local)
            local.append(texts[i])
        return table[i]

    answers = []
    for a in q["a"]:
        a = dict(a)
        for key in ("ch", "dr"):
            if a.get(key):
                a[key] = [[c[0], tid(c[1]), c[2]] for c in a[key]]
        if a.get("w"):
            a["w"] = [tid(a["w"][0]), *a["w"][1:]]
        answers.append(a)
    return {**q, "a": answers}


def _index_row(q: dict[str, Any], part: int, codes: dict[str, dict[Any, int]], cells: list[str]) -> list[Any]:
    """What the filters read of a question: [id, benchmark, level, task, cell, part, answers' configs, reasons]."""
    reason = {r: i + 1 for i, r in enumerate(REASONS)}
    return [q["id"], codes["bench"][q["bench"]], codes["level"][q["level"]], codes["task"][q.get("task") or ""],
            cells.index(q["cell"]) if q.get("cell") in cells else -1, part, [a["c"] for a in q["a"]],
            [reason.get(a.get("r"), 0) for a in q["a"]]]


def split(payload: dict[str, Any]) -> Viewer:
    """The rows cut into parts of about PART_BYTES, and the index of the questions the page holds."""
    questions, texts, cells = payload["questions"], payload["texts"], list(payload["cells"])
    names = {"bench": list(dict.fromkeys(q["bench"] for q in questions)), "level": list(payload["levels"]),
             "task": sorted({q.get("task") or "" for q in questions})}
    codes = {k: {v: i for i, v in enumerate(vs)} for k, vs in names.items()}
    rows: list[Any] = []
    parts: list[str] = []
    starts: list[int] = []
    search: list[str] = []
    index_bytes, budget = 0, PAGE_MAX_BYTES - len(SCRIPT) - len(STYLE) - 50_000
    chunk: list[str] = []
    local: list[str] = []
    table: dict[int, int] = {}
    size = 0
    for i, q in enumerate(questions):
        row = _index_row(q, len(parts), codes, cells)
        index_bytes += len(_json(row).encode("utf-8")) + 1
        if index_bytes > budget:
            break
        if not chunk:
            starts.append(i)
        chunk.append(_json(_local(q, texts, table, local)))
        rows.append(row)
        search.append(_searchable(q))
        size += len(chunk[-1])
        if size + sum(map(len, local)) >= PART_BYTES:
            parts.append(_part_json(chunk, local))
            chunk, local, table, size = [], [], {}, 0
    if chunk:
        parts.append(_part_json(chunk, local))
    index = {"configs": payload["configs"], "cells": payload["cells"], "levels": names["level"],
             "benches": names["bench"], "tasks": names["task"], "reasons": list(REASONS), "dir": DATA_DIR,
             "nparts": len(parts), "starts": starts, "qs": rows, "search": False}
    return Viewer(index, parts, search, len(questions), len(rows))


def _text(x: Any) -> str:
    """A value as JavaScript's join writes it (null: empty)."""
    return "" if x is None else "true" if x is True else "false" if x is False else str(x)


def _searchable(q: dict[str, Any]) -> str:
    """What a text search reads of a question: id, question, gold answers, evidence and every prediction."""
    predictions = [a["p"] for a in q["a"] if a.get("p")]
    words = [q["id"], q.get("q"), *(q.get("gold") or []), *(q.get("ev") or []), *predictions]
    return " \n ".join(map(_text, words))


def _part_json(questions: list[str], texts: list[str]) -> str:
    return f'{{"questions":[{",".join(questions)}],"texts":{_json(texts)}}}'


def _part_script(k: int | str, data: str, compress: bool) -> str:
    """The script of part `k`: its rows as they are (inline), or gzip-compressed in base64 (a file: text of
    documents shrinks 3-9x, and the page decompresses a part in milliseconds)."""
    if compress:
        data = json.dumps(base64.b64encode(gzip.compress(data.encode("utf-8"), compresslevel=6, mtime=0)).decode())
    return f"rolViewer.part({json.dumps(k)},{data});\n"


def part_name(k: int) -> str:
    return f"{DATA_DIR}/part-{k + 1:05d}.js"


def _page(viewer: Viewer, title: str, inline: bool) -> str:
    viewer.index["search"] = not inline  # a file of the questions' search texts beside the parts
    selects = "".join(f'<label>{html.escape(name)} <select id="{key}"></select></label>'
                      for key, name in (("bench", "benchmark"), ("level", "level"), ("task", "task"),
                                        ("cell", "outcome"), ("reason", "lost to"), ("config", "config")))
    held = "" if viewer.held == viewer.questions else (
        f'<p id="held">This viewer holds the first {viewer.held:,} of {viewer.questions:,} questions; every answer is '
        "in lost_answers.csv and, with <code>--export details</code>, in details/.</p>")
    parts = "".join(f"<script>{_part_script(k, p, False)}</script>\n" for k, p in enumerate(viewer.parts)) \
        if inline else ""
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{html.escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<header>"
            f"<h1>{html.escape(title)} <a href=\"report.html\" style=\"font-size:.7em\">back to the report</a></h1>"
            f"{selects}<label>search <input id=\"q\" type=\"search\" placeholder=\"question, answer, id\"></label>"
            f"<p id=\"count\"></p>{held}</header>\n<main><div id=\"list\"></div>"
            "<button id=\"more\" hidden></button></main>\n"
            f"<script type=\"application/json\" id=\"index\">{_json(viewer.index)}</script>\n"
            f"<script>{BOOT}</script>\n{parts}<script>{SCRIPT}</script>\n</body>\n</html>\n")


def questions_html(payload: dict[str, Any], title: str = TITLE) -> str:
    """The viewer as one self-contained page, every part inside it (what `write_viewer` writes for a small
    report)."""
    return _page(split(payload), title, inline=True)


def write_viewer(payload: dict[str, Any], out: Path, title: str = TITLE) -> dict[str, Any]:
    """Write questions.html into `out` (its parts inside it, or under questions_data/ beside it with the questions'
    search texts, the folder's earlier files removed); return what the report says of it: questions held of how
    many, the files written (relative to `out`) and their sizes."""
    viewer = split(payload)
    inline = viewer.inline
    folder = Path(out) / DATA_DIR
    for old in [*folder.glob("part-*.js"), folder / SEARCH_FILE] if folder.is_dir() else []:
        old.unlink(missing_ok=True)
    scripts: dict[str, str] = {}
    if not inline:
        folder.mkdir(parents=True, exist_ok=True)
        scripts = {part_name(k): _part_script(k, data, compress=True) for k, data in enumerate(viewer.parts)}
        scripts[f"{DATA_DIR}/{SEARCH_FILE}"] = _part_script("search", _json(viewer.search), compress=True)
        for name, script in scripts.items():
            atomic_write_text(Path(out) / name, script)
    page = _page(viewer, title, inline)
    atomic_write_text(Path(out) / QUESTIONS_FILE, page)
    return {"questions": viewer.questions, "held": viewer.held, "page_bytes": len(page.encode("utf-8")),
            "part_files": len(scripts), "parts_bytes": sum(map(len, scripts.values())),
            "folder": None if inline else DATA_DIR, "files": [QUESTIONS_FILE, *scripts]}


_INLINE_PART = re.compile(r"<script>(rolViewer\.part\(.*?\);)\n</script>", re.S)


def _part_data(script: str) -> dict[str, Any]:
    data = json.loads(script[script.index(",") + 1:script.rindex(");")])
    return json.loads(gzip.decompress(base64.b64decode(data))) if isinstance(data, str) else data


def read_viewer(page: Path) -> dict[str, Any]:
    """A written viewer read back into the rows it was written from (each part's string table joined into one)."""
    text = Path(page).read_text(encoding="utf-8")
    found = re.search(r'<script type="application/json" id="index">(.*?)</script>', text, re.S)
    if found is None:
        raise ValueError(f"{page}: not a questions viewer (no index script)")
    index = json.loads(found.group(1))
    scripts = _INLINE_PART.findall(text) or [(Path(page).parent / part_name(k)).read_text(encoding="utf-8")
                                             for k in range(index["nparts"])]
    questions: list[dict[str, Any]] = []
    texts: list[str] = []
    for script in scripts:
        data, shift = _part_data(script), len(texts)
        texts += data["texts"]
        for q in data["questions"]:
            for a in q["a"]:
                for key in [k for k in ("ch", "dr") if k in a]:
                    a[key] = [[c[0], c[1] + shift, c[2]] for c in a[key]]
                if a.get("w"):
                    a["w"] = [a["w"][0] + shift, *a["w"][1:]]
            questions.append({k: v for k, v in q.items() if k != "hay"})
    return {"configs": index["configs"], "questions": questions, "texts": texts, "cells": index["cells"],
            "levels": index["levels"], "held": len(index["qs"])}


__all__ = ["DATA_DIR", "FILTERS", "QUESTIONS_FILE", "questions_html", "questions_link", "read_viewer", "split",
           "write_viewer"]
