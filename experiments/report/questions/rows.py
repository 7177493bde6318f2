"""The rows of the question viewer (questions.html): one entry per question, each shown config's answer beside
the others, with what it saw.

Everything the page shows is computed here, once, into one JSON-able payload (the page only renders it):

- per question: its benchmark (the report's scope), task, level, question, gold answers, evidence quotes and
  their depth in the context (0-100%), the outcome cell of the agreement pair (long context against the best
  RAG config, as the report's agreement table), and per config its answer;
- per answer: prediction, score, finish reason, status, tokens, latency, cost, and why it was lost (`reasons`);
  RAG: the chunks in the prompt in rank order with the evidence marked, the chunks the prompt budget dropped,
  the rank of the first chunk holding evidence; long context: a window of the context around the evidence, the
  parts truncation cut marked, and whether it did.

Chunk and window texts are kept once in a string table (`texts`): configs with one chunk size share their
chunks, so a sweep of 2,000 questions stays a few megabytes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from eval.answers import shown
from eval.sample import level_sort_key
from experiments.arms import ROLE_LONGCTX, ROLE_RAG
from experiments.report.agreement import Agreement
from experiments.report.questions.reasons import is_wrong, loss_reason
from experiments.report.runs import Run

# the outcome cells, as the agreement table names them; the key is the viewer's URL value
CELLS = {"both_right": "both right", "only_lc": "only long context right", "only_rag": "only RAG right",
         "both_wrong": "both wrong"}


@dataclass
class _Texts:
    """A string table: each distinct text once."""

    items: list[str]
    index: dict[str, int]

    def id(self, text: str) -> int:
        if text not in self.index:
            self.index[text] = len(self.items)
            self.items.append(text)
        return self.index[text]


def _overlaps(start: int, end: int, spans: Iterable[tuple[int, int]]) -> list[list[int]]:
    """The parts of [start, end) inside `spans`, as offsets from `start` (merged, in order)."""
    parts = sorted((max(a, start) - start, min(b, end) - start) for a, b in spans if a < end and b > start)
    merged: list[list[int]] = []
    for a, b in parts:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return merged


def _quote_spans(rec: dict[str, Any]) -> list[tuple[int, int]]:
    return [(int(q["start"]), int(q["end"])) for q in rec.get("evidence_quotes") or []]


def _chunk(entry: dict[str, Any], quotes: list[tuple[int, int]], texts: _Texts) -> list[Any] | None:
    """[rank, text id, evidence marks]: the marks are offsets in the chunk's text as recorded (a title the
    arm put before a chunk shifts them by its length)."""
    text = entry.get("text")
    if not isinstance(text, str):
        return None
    start, end = int(entry.get("start", 0)), int(entry.get("end", 0))
    shift = max(0, len(text) - (end - start))  # the document title headed onto the chunk
    marks = [[a + shift, b + shift] for a, b in _overlaps(start, end, quotes)]
    return [entry.get("rank"), texts.id(text), [m for m in marks if m[0] < len(text)]]


def _window(rec: dict[str, Any], quotes: list[tuple[int, int]], texts: _Texts) -> list[Any] | None:
    """[text id, evidence marks, cut marks]: the long-context window, what truncation removed marked."""
    w = rec.get("evidence_window")
    if not isinstance(w, dict) or not isinstance(w.get("text"), str):
        return None
    start, end = int(w["start"]), int(w["end"])
    kept = rec.get("kept_spans")
    cuts: list[list[int]] = []
    if kept:
        inside = _overlaps(start, end, [(int(a), int(b)) for a, b in kept])
        pos = 0
        for a, b in inside:
            if a > pos:
                cuts.append([pos, a])
            pos = b
        if pos < end - start:
            cuts.append([pos, end - start])
    return [texts.id(w["text"]), _overlaps(start, end, quotes), cuts]


def _depth(rec: dict[str, Any]) -> float | None:
    """Where the evidence starts in the context, 0..100 (a synthetic needle's own depth first)."""
    if rec.get("depth") is not None:
        return round(100 * float(rec["depth"]), 1)
    quotes, chars = rec.get("evidence_quotes") or [], rec.get("context_chars")
    if quotes and chars:
        return round(100 * min(int(q["start"]) for q in quotes) / int(chars), 1)
    return None


def _answer(rec: dict[str, Any], run: Run, ci: int, quotes: list[tuple[int, int]], texts: _Texts,
            correct_threshold: float, evidence_threshold: float) -> dict[str, Any]:
    a: dict[str, Any] = {"c": ci, "st": rec.get("status"), "p": rec.get("prediction"), "s": rec.get("score"),
                         "f": rec.get("finish_reason"), "pt": rec.get("prompt_tokens"),
                         "ct": rec.get("completion_tokens"), "lat": rec.get("latency_s"), "usd": rec.get("cost_usd")}
    if rec.get("reason"):
        a["why"] = rec["reason"]
    if is_wrong(rec, correct_threshold):
        a["r"], a["sig"] = loss_reason(rec, evidence_threshold, run.retrieval_depth)
    if rec.get("answer_in_context") is not None:
        a["aic"] = bool(rec["answer_in_context"])
    if rec.get("route"):
        a["route"] = rec["route"]
    if "retrieved" in rec:
        a["ch"] = [c for c in (_chunk(e, quotes, texts) for e in rec.get("retrieved") or []) if c]
        a["dr"] = [c for c in (_chunk(e, quotes, texts) for e in rec.get("dropped") or []) if c]
        a["fr"] = rec.get("first_evidence_rank")
        a["ip"] = rec.get("evidence_in_prompt")
        a["n"] = len(rec.get("retrieved") or [])
    if "kept_spans" in rec or "evidence_window" in rec:
        a["w"] = _window(rec, quotes, texts)
        a["tr"] = rec.get("truncated")
        a["er"] = rec.get("evidence_retained")
    return {k: v for k, v in a.items() if v is not None}


def _cells(agreements: list[Agreement], threshold: float) -> dict[tuple[str, str], str]:
    """{(scope, question id): outcome cell} from each scope's overall agreement pair."""
    out: dict[tuple[str, str], str] = {}
    for ag in agreements:
        if ag.level != "all":
            continue
        lc, rag = ag.lc.scores(), ag.rag.scores()
        for qid in set(lc) & set(rag):
            ok_lc, ok_rag = lc[qid] >= threshold, rag[qid] >= threshold
            out[(ag.benchmark, qid)] = ("both_right" if ok_lc and ok_rag else "only_lc" if ok_lc
                                        else "only_rag" if ok_rag else "both_wrong")
    return out


def _role(run: Run) -> str:
    return run.spec.role if run.spec.role in (ROLE_LONGCTX, ROLE_RAG) else run.arm


def _in_pair(run: Run, pairs: dict[str, Agreement]) -> bool:
    """Whether the run is one of its scope's agreement pair (the configs the outcome cells compare)."""
    pair = pairs.get(run.scope)
    return pair is not None and (run is pair.lc or run is pair.rag)


def question_rows(runs: list[Run], agreements: list[Agreement], correct_threshold: float,
                  evidence_threshold: float) -> dict[str, Any]:
    """The viewer's payload: configs, questions (each with its answers) and the string table."""
    texts = _Texts([], {})
    pairs = {ag.benchmark: ag for ag in agreements if ag.level == "all"}
    configs = [{"label": r.label, "bench": r.scope, "role": _role(r), "arm": r.arm, "pair": _in_pair(r, pairs)}
               for r in runs]
    cells = _cells(agreements, correct_threshold)
    questions: dict[tuple[str, str], dict[str, Any]] = {}
    for ci, run in enumerate(runs):
        for rec in run.records:
            qid = str(rec["id"])
            key = (run.scope, qid)
            q = questions.get(key)
            if q is None:
                q = questions[key] = {"id": qid, "bench": run.scope, "task": rec.get("task"),
                                      "level": str(rec.get("length_level")), "q": rec.get("question") or "",
                                      "gold": [shown(a) for a in rec.get("answers") or []], "a": []}
            if not q.get("ev") and rec.get("evidence_quotes"):
                q["ev"] = [quote["text"] for quote in rec["evidence_quotes"]]
            if q.get("depth") is None and _depth(rec) is not None:
                q["depth"] = _depth(rec)
            q["a"].append(_answer(rec, run, ci, _quote_spans(rec), texts, correct_threshold, evidence_threshold))
    for key, q in questions.items():
        if key in cells:
            q["cell"] = cells[key]
    ordered = sorted(questions.values(), key=lambda q: (q["bench"], level_sort_key(q["level"]), q["task"] or "",
                                                        q["id"]))
    return {"configs": configs, "questions": ordered, "texts": texts.items, "cells": CELLS,
            "levels": sorted({q["level"] for q in ordered}, key=level_sort_key)}


__all__ = ["CELLS", "question_rows"]
