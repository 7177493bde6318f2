"""The subsection "All configs" (under the verdict): every config point's scores, recall, tokens, latency and cost
(configs.csv's rows), the oracle router beside them, then what may understate a config.

The per-config table (configs.csv and the report's "All configs"): one row per config point, computed
from its records (metrics.json as a fallback for old runs): scores overall and per length level, the
benchmark's official aggregate, evidence figures (span-level and document-level under their own
names), tokens, latency, cost, statuses, and how much of its chunks the embedder read."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from eval.benchmarks import official_aggregate
from experiments import records as schema
from experiments.arms import ROLE_LONGCTX, specs
from experiments.report.page.cells import fmt, pct, usd
from experiments.report.page.contents import Outline
from experiments.report.page.document import Document, Heading, Paragraph, Table
from experiments.report.page.report_summary import Facts, Summary
from experiments.report.pricing import Pricing
from experiments.report.runs import Run, levels_of
from experiments.report.verdict_row import VerdictRow, oracle_rows
from experiments.run_metrics import quantile

ANCHOR, TITLE = "configs", None

EXPLAINED = (
    "Scores are the benchmark's primary metric x100; a sample an arm could not serve (skipped) counts 0, failed "
    "samples are left out. recall@n: share of gold evidence spans in the top-n retrieved chunks; in prompt: share "
    "of gold evidence in the RAG prompt; retained: share that survived long-context truncation. Where a "
    "benchmark's evidence is whole documents (Loong), the same figures count gold documents and are named doc "
    "recall@n, docs in prompt and docs retained: a document counts when any chunk of it does. Retrieval-only "
    "runs (no generator) show recall without a score.")


def knob_columns() -> list[str]:
    """`arm`, then each registered arm's columns (experiments.arms.base.ArmSpec.columns), once each."""
    return list(dict.fromkeys(["arm", *(c for spec in specs() for c in spec.columns)]))


def _recall_ns(runs: list[Run], key: str = "evidence_recall") -> list[str]:
    return sorted({n for run in runs for r in run.records for n in (r.get(key) or {})}, key=int)


# column prefix of each evidence figure; document-level ones only appear when some run has them
RECALL_COLUMNS = {"evidence_recall": "recall", "doc_recall": "doc_recall"}
SHARE_COLUMNS = {"evidence_in_prompt": "in prompt", "evidence_retained": "retained",
                 "docs_in_prompt": "docs in prompt", "docs_retained": "docs retained"}


def _mean(vals: list[float]) -> float:
    """The mean of some values (every caller has some)."""
    return sum(vals) / len(vals)


def config_rows(runs: list[Run], pricing: Pricing) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """One row per config point, computed from its records (metrics.json as a fallback for old runs)."""
    levels, ns, doc_ns = levels_of(runs), _recall_ns(runs), _recall_ns(runs, "doc_recall")
    shares = [k for k in schema.SHARE_KEYS
              if not k.startswith("docs_") or any(x.get(k) is not None for run in runs for x in run.records)]
    columns = knob_columns()
    rows = [{"config": r.label, **{k: r.knobs.get(k, "") for k in columns}, "benchmark": r.benchmark,
             "generator": r.knobs.get("generator", ""), **_scores(r, levels), **_evidence(r, ns, doc_ns, shares),
             **_means(r), **_costs(r, pricing), **_how_answers_ended(r), **_counts(r)} for r in runs]
    return rows, levels, ns


def _scores(r: Run, levels: list[str]) -> dict[str, Any]:
    """The mean score (x100), the benchmark's official aggregate, and the score per length level."""
    score = r.score_at()
    official = official_aggregate(r.benchmark, [x for x in r.records if schema.is_scored(x)])
    row = {"score": round(score, 2) if score is not None else (None if r.records else r.metrics.get("score")),
           "official": official["value"] if official else None, "official_rule": official["rule"] if official else ""}
    for lvl in levels:
        s = r.score_at(lvl)
        row[f"score_{lvl}"] = round(s, 2) if s is not None else None
    return row


def _evidence(r: Run, ns: list[str], doc_ns: list[str], shares: list[str]) -> dict[str, Any]:
    """Recall@n of the gold evidence (spans, then documents) and the evidence shares, over the answers with a
    context."""
    answered = [x for x in r.records if schema.has_context(x)]
    row: dict[str, Any] = {}
    for key in schema.RECALL_KEYS:
        for n in (ns if key == "evidence_recall" else doc_ns):
            vals = [x[key][n] for x in answered if (x.get(key) or {}).get(n) is not None]
            row[f"{RECALL_COLUMNS[key]}@{n}"] = round(_mean(vals), 4) if vals else None
    for key in shares:
        vals = [x[key] for x in answered if x.get(key) is not None]
        row[key] = round(_mean(vals), 4) if vals else None
    return row


def _means(r: Run) -> dict[str, Any]:
    """Mean prompt and completion tokens and latency, and the latency's 95th percentile."""
    row: dict[str, Any] = {}
    for key in ("prompt_tokens", "completion_tokens", "latency_s"):
        v = r.mean_of(key)
        if v is None and key == "prompt_tokens":  # retrieval-only: the prompt a generator would have received
            vals = [x[key] for x in r.records if schema.has_context(x) and x.get(key) is not None]
            v = _mean(vals) if vals else None
        row[f"{key}_mean"] = round(v, 4) if v is not None else (None if r.records else r.metrics.get(f"{key}_mean"))
    lats = [x["latency_s"] for x in r.answered() if x.get("latency_s") is not None]
    p95 = quantile(lats, 0.95)
    row["latency_s_p95"] = round(p95, 4) if p95 is not None else None
    return row


def _costs(r: Run, pricing: Pricing) -> dict[str, Any]:
    c = pricing.mean_answer_cost(r)
    return {"cost_per_answer_usd": round(c, 8) if c is not None else None,
            "index_cost_per_doc_usd": round(pricing.index_cost_per_doc(r), 8)}


def _how_answers_ended(r: Run) -> dict[str, Any]:
    """The shares of answers cut (at the token limit or after a lead-in), of chunks the embedder cut, and of
    questions a routing arm sent to long context."""
    ended = [x["finish_reason"] for x in r.answered() if x.get("finish_reason")]
    cut = r.metrics.get("embedder_truncation") or {}
    routes = [x["route"] for x in r.answered() if x.get("route")]
    return {"answers_cut_share": round(sum(e in schema.CUT for e in ended) / len(ended), 4) if ended else None,
            "answers_lead_in_share": round(ended.count(schema.LEAD_IN) / len(ended), 4) if ended else None,
            "embedder_truncated_share": cut.get("share"), "embedder_input_limit": cut.get("max_input_tokens"),
            "route_longctx_share": round(routes.count(ROLE_LONGCTX) / len(routes), 4) if routes else None}


def _counts(r: Run) -> dict[str, Any]:
    """The records by status, the config hash and the run folder."""
    status = Counter(schema.status_of(x) for x in r.records)
    return {"n": len(r.records) or r.metrics.get("n"), "ok": status[schema.OK], "skipped": status[schema.SKIPPED],
            "failed": status[schema.FAILED], "retrieved": status[schema.RETRIEVED],
            "config_hash": r.metrics.get("config_hash", ""), "run_dir": str(r.path)}


@dataclass(frozen=True)
class ConfigTable:
    """One row per config point (configs.csv), the length levels and the recall depths its columns name."""
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
    def of(cls, rows: list[dict[str, Any]], levels: list[str], ns: list[str]) -> Columns:
        doc_ns = [c.split("@")[1] for c in (rows[0] if rows else {}) if c.startswith("doc_recall@")]
        return cls(levels, ns, doc_ns, [k for k in schema.SHARE_KEYS if any(k in row for row in rows)],
                   any(row.get("official_rule") for row in rows))

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
        oracle, best_rag, lc = v.oracle, v.comparison.best_rag, v.lc
        assert oracle is not None and best_rag is not None and lc is not None  # a row with an oracle has both arms
        return [f"oracle router (virtual: {best_rag.label} | {lc.label})", v.benchmark, fmt(oracle.score, 1),
                *([""] if self.official else []), *[""] * empty, "", "", "", str(oracle.n), "", ""]


def official_note(rows: list[dict[str, Any]]) -> str:
    """The benchmarks' own aggregates, by rule ("" when no benchmark has one)."""
    rules = sorted({(row["benchmark"], row["official_rule"]) for row in rows if row.get("official_rule")})
    if not rules:
        return ""
    return ("official: the benchmark's own aggregate beside the sample mean (score), which the verdict compares. "
            + " ".join(f"{rule}." for _, rule in rules)
            + " A dash: the benchmark defines no single figure for this mix of tasks (per-task figures in "
              "configs.csv).")


def cut_answers_note(rows: list[dict[str, Any]]) -> str:
    """The configs whose answers were cut at the token limit or after a bare lead-in ("" when none)."""
    capped = [row for row in rows if row.get("answers_cut_share")]
    if not capped:
        return ""
    return ("Answers cut at the token limit or after a bare lead-in (finish_reason length: the generator stopped at "
            "the benchmark's max_new_tokens; lead_in: the answer ended after \"The two rules:\" and before any "
            "content): " + "; ".join(f"{row['config']} {pct(row['answers_cut_share'])}{_lead_in(row)}"
                                     for row in capped)
            + ". A cut answer may miss what it was about to say, so such a config's score can understate it; "
            "compare arms only where their shares are alike, or raise benchmark.max_new_tokens.")


def embedder_note(rows: list[dict[str, Any]]) -> str:
    """The configs whose embedder read only the start of some chunks ("" when none)."""
    cut = [row for row in rows if row.get("embedder_truncated_share")]
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
