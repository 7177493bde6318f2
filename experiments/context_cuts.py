"""What a run's prompts cut to fit the model's window: which documents lost text (and which characters of each
were kept), and which questions lost their evidence with it. The runner logs it as one line and writes it to
metrics.json (`context_cuts`); the report's first screen says it (experiments/report/losses.py).

Read off the records' `truncated`, `kept_spans` and `evidence_retained` (the long-context arm writes them; an
arm that writes none has nothing to say here), mapped onto each sample's documents (its char spans in the
context; a sample without them is one document named by its group)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from eval.sample import Sample
from experiments import records as schema

EPS = 1e-9
MAX_NAMED = 50


def _kept_in(kept: list[list[int]], start: int, end: int) -> list[tuple[int, int]]:
    """The parts of [start, end) inside the kept spans, as offsets from `start`."""
    out = []
    for a, b in kept:
        lo, hi = max(a, start), min(b, end)
        if lo < hi:
            out.append((lo - start, hi - start))
    return out


def _documents(sample: Sample) -> list[tuple[str, int, int]]:
    """(name, body start, body end) of each document of the sample's context."""
    if sample.documents:
        return [(d.doc_id, d.start + len(d.header), d.end) for d in sample.documents]
    return [(str(sample.group or sample.id), 0, len(sample.context))]


def _context_key(sample: Sample) -> tuple:
    """What a sample's documents depend on: its context and documents (the same objects for every question over
    them), or, without documents, its context and the group it is named by."""
    return (id(sample.context), id(sample.documents)) if sample.documents else \
        (id(sample.context), str(sample.group or sample.id))


def context_cuts(samples: Iterable[Sample], records: Iterable[dict[str, Any]], window: int | None) -> dict | None:
    """{"window", "questions", "questions_cut", "documents", "documents_cut": [{"document", "chars", "kept"}],
    "evidence_lost": [ids], "evidence_gone": [ids]} for the records that say whether they were truncated;
    None when none does. Each context's documents are read once, and each of its cuts once (questions over a
    whole folder share both)."""
    by_id = {s.id: s for s in samples}
    told = [r for r in records if schema.has_context(r) and r.get("truncated") is not None and r.get("id") in by_id]
    if not told:
        return None
    names: set[str] = set()
    cut: dict[str, dict[str, Any]] = {}
    documents: dict[tuple, list[tuple[str, int, int]]] = {}  # by context (the samples outlive this call)
    cuts_seen: set[tuple] = set()
    lost, gone, cut_questions, with_evidence = [], [], 0, 0
    for r in told:
        sample = by_id[r["id"]]
        context = _context_key(sample)
        if context not in documents:
            documents[context] = _documents(sample)
            names.update(name for name, _, _ in documents[context])
        if r.get("truncated"):
            cut_questions += 1
            kept = tuple(tuple(span) for span in r.get("kept_spans") or [])
            if (context, kept) not in cuts_seen:
                cuts_seen.add((context, kept))
                _add_cut(cut, documents[context], [list(span) for span in kept])
        retained = r.get("evidence_retained")
        with_evidence += retained is not None
        if retained is not None and retained < 1 - EPS:
            lost.append(str(r["id"]))
            if retained <= EPS:
                gone.append(str(r["id"]))
    return {"window": window, "questions": len(told), "questions_cut": cut_questions,
            "questions_with_evidence": with_evidence, "documents": len(names),
            "documents_cut": list(cut.values())[:MAX_NAMED], "n_documents_cut": len(cut),
            "evidence_lost": lost[:MAX_NAMED], "n_evidence_lost": len(lost), "evidence_gone": gone[:MAX_NAMED],
            "n_evidence_gone": len(gone)}


def _add_cut(cut: dict[str, dict[str, Any]], docs: list[tuple[str, int, int]], kept: list[list[int]]) -> None:
    """Each document the cut `kept` left incomplete, added to `cut` unless a question before named it."""
    for name, start, end in docs:
        parts = _kept_in(kept, start, end)
        if parts != [(0, end - start)] and name not in cut:
            cut[name] = {"document": name, "chars": end - start, "kept": [list(p) for p in parts]}


def kept_words(doc: dict[str, Any]) -> str:
    """"kept chars 0-12,849 and 57,073-70,774 of 70,774", or "dropped whole (70,774 chars)"."""
    kept = doc.get("kept") or []
    if not kept:
        return f"dropped whole ({doc['chars']:,} chars)"
    spans = [f"{a:,}-{b:,}" for a, b in kept]
    joined = spans[0] if len(spans) == 1 else ", ".join(spans[:-1]) + " and " + spans[-1]
    return f"kept chars {joined} of {doc['chars']:,}"


def cuts_line(cuts: dict[str, Any] | None, shown: int = 3) -> str | None:
    """One sentence: the documents cut and the questions whose evidence was lost; None when nothing was cut."""
    if not cuts or not cuts.get("n_documents_cut"):
        return None
    window = f"the {cuts['window']:,}-token window" if cuts.get("window") else "the window"
    docs = cuts["documents_cut"]
    listed = "; ".join(f"{d['document']} ({kept_words(d)})" for d in docs[:shown])
    more = f"; +{cuts['n_documents_cut'] - shown} more" if cuts["n_documents_cut"] > shown else ""
    lost = cuts["n_evidence_lost"]
    if lost:
        ids = ", ".join(cuts["evidence_lost"][:8]) + (f" (+{lost - 8} more)" if lost > 8 else "")
        evidence = (f"the evidence of {lost} of {cuts['questions_with_evidence']} questions was cut away "
                    f"({cuts['n_evidence_gone']} of them wholly): {ids}")
    elif cuts.get("questions_with_evidence"):
        evidence = f"no question's evidence was cut away ({cuts['questions_with_evidence']} questions with evidence)"
    else:
        evidence = "no question has evidence quotes to say what was lost"
    return (f"{cuts['n_documents_cut']} of {cuts['documents']} documents cut to fit {window}: {listed}{more}; "
            f"{evidence}")


__all__ = ["context_cuts", "cuts_line", "kept_words"]
