"""The subsection "All configs" (under the verdict): every config point's scores, recall, tokens, latency and cost
(summary.csv's rows: experiments.report.summary), the oracle router beside them, then what may understate a
config."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from experiments import records as schema
from experiments.report.page.cells import fmt, pct, usd
from experiments.report.page.contents import Outline
from experiments.report.page.document import Document, Heading, Paragraph, Table
from experiments.report.page.report_summary import Facts, Summary
from experiments.report.summary import SHARE_COLUMNS, config_rows
from experiments.report.verdict.lookups import oracle_rows
from experiments.report.verdict.row import VerdictRow

ANCHOR, TITLE = "configs", None

EXPLAINED = (
    "Scores are the benchmark's primary metric x100; a sample an arm could not serve (skipped) counts 0, failed "
    "samples are left out. recall@n: share of gold evidence spans in the top-n retrieved chunks; in prompt: share "
    "of gold evidence in the RAG prompt; retained: share that survived long-context truncation. Where a "
    "benchmark's evidence is whole documents (Loong), the same figures count gold documents and are named doc "
    "recall@n, docs in prompt and docs retained: a document counts when any chunk of it does. Retrieval-only "
    "runs (no generator) show recall without a score.")


@dataclass(frozen=True)
class ConfigTable:
    """One row per config point (summary.csv), the length levels and the recall depths its columns name."""
    rows: list[dict[str, Any]]
    levels: list[str]
    recall_ns: list[str]


def rows(f: Facts) -> ConfigTable:
    return ConfigTable(*config_rows(f.runs, f.pricing))


def render(doc: Document, s: Summary, outline: Outline) -> None:
    table: ConfigTable = s.sections[ANCHOR]
    columns = Columns.of(table.rows, table.levels, table.recall_ns)
    cells = [columns.cells(row) for row in table.rows] + [columns.oracle_cells(v) for v in oracle_rows(s.vrows)]
    doc.add(Heading(3, "All configs"), Paragraph(EXPLAINED), Table(columns.head(), cells))
    doc.add(*[Paragraph(note) for note in (official_note(table.rows), cut_answers_note(table.rows),
                                           embedder_note(table.rows)) if note])


@dataclass
class Columns:
    """The table's optional columns: the official aggregate, scores per level, recall@n (of spans, of documents)
    and the evidence shares some runs have."""
    levels: list[str]
    ns: list[str]
    doc_ns: list[str]
    shares: list[str]
    official: bool

    @classmethod
    def of(cls, summary: list[dict[str, Any]], levels: list[str], ns: list[str]) -> Columns:
        doc_ns = [c.split("@")[1] for c in (summary[0] if summary else {}) if c.startswith("doc_recall@")]
        return cls(levels, ns, doc_ns, [k for k in schema.SHARE_KEYS if any(k in row for row in summary)],
                   any(row.get("official_rule") for row in summary))

    def head(self) -> list[str]:
        return ["config", "benchmark", "score", *(["official"] if self.official else []),
                *[f"score {lvl}" for lvl in self.levels], *[f"recall@{n}" for n in self.ns],
                *[f"doc recall@{n}" for n in self.doc_ns], *[SHARE_COLUMNS[k] for k in self.shares],
                "prompt tokens", "latency s", "cost/answer", "n", "skipped", "failed"]

    def cells(self, row: dict[str, Any]) -> list[str]:
        return [row["config"], row["benchmark"], fmt(row["score"], 1),
                *([fmt(row["official"], 1) if row["official_rule"] else ""] if self.official else []),
                *[fmt(row[f"score_{lvl}"], 1) for lvl in self.levels],
                *[fmt(row[f"recall@{n}"]) for n in self.ns], *[fmt(row[f"doc_recall@{n}"]) for n in self.doc_ns],
                *[fmt(row.get(k)) for k in self.shares], fmt(row["prompt_tokens_mean"], 0), fmt(row["latency_s_mean"]),
                usd(row["cost_per_answer_usd"]), fmt(row["n"]), fmt(row["skipped"]), fmt(row["failed"])]

    def oracle_cells(self, v: VerdictRow) -> list[str]:
        """The oracle router, a virtual config: its score and n, the other columns empty."""
        empty = len(self.levels) + len(self.ns) + len(self.doc_ns) + len(self.shares)
        return [f"oracle router (virtual: {v.best_rag.label} | {v.lc.label})", v.benchmark, fmt(v.oracle.score, 1),
                *([""] if self.official else []), *[""] * empty, "", "", "", str(v.oracle.n), "", ""]


def official_note(summary: list[dict[str, Any]]) -> str:
    """The benchmarks' own aggregates, by rule ("" when no benchmark has one)."""
    rules = sorted({(row["benchmark"], row["official_rule"]) for row in summary if row.get("official_rule")})
    if not rules:
        return ""
    return ("official: the benchmark's own aggregate beside the sample mean (score), which the verdict compares. "
            + " ".join(f"{rule}." for _, rule in rules)
            + " A dash: the benchmark defines no single figure for this mix of tasks (per-task figures in "
              "summary.csv).")


def cut_answers_note(summary: list[dict[str, Any]]) -> str:
    """The configs whose answers were cut at the token limit or after a bare lead-in ("" when none)."""
    capped = [row for row in summary if row.get("answers_cut_share")]
    if not capped:
        return ""
    return ("Answers cut at the token limit or after a bare lead-in (finish_reason length: the generator stopped at "
            "the benchmark's max_new_tokens; lead_in: the answer ended after \"The two rules:\" and before any "
            "content): " + "; ".join(f"{row['config']} {pct(row['answers_cut_share'])}{_lead_in(row)}"
                                     for row in capped)
            + ". A cut answer may miss what it was about to say, so such a config's score can understate it; "
            "compare arms only where their shares are alike, or raise benchmark.max_new_tokens.")


def embedder_note(summary: list[dict[str, Any]]) -> str:
    """The configs whose embedder read only the start of some chunks ("" when none)."""
    cut = [row for row in summary if row.get("embedder_truncated_share")]
    if not cut:
        return ""
    return ("Embedder input limit: in these configs the embedder read only the start of some chunks, so their "
            "retrieval ranks chunks by their first tokens (share of chunks longer than the embedder's limit, in "
            "its own tokens): " + "; ".join(
                f"{row['config']} {pct(row['embedder_truncated_share'])} over {row['embedder_input_limit']} tokens"
                for row in cut) + ". Smaller chunks, or an embedder that reads more, compare chunk sizes fairly.")


def _lead_in(row: dict[str, Any]) -> str:
    """" (8% after a lead-in)" where some of a config's cut answers ended after a bare lead-in."""
    share = row.get("answers_lead_in_share")
    return f" ({pct(share)} after a lead-in)" if share else ""
