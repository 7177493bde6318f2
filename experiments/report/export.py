"""`python -m experiments.report RUNS --export details`: the records as a dataset.

One Parquet file per run under `<out>/details/` (one row per question and answer; the config's knobs as
columns), and a `README.md` card saying what each column holds and how to load them:

    datasets.load_dataset("parquet", data_files="details/<run>.parquet")
    pandas.read_parquet("details/<run>.parquet")

Written through `datasets` (a core dependency), so what `load_dataset` reads back is what was written.
The files of different runs may differ in columns (each arm records its own fields): load them one by one,
or with pandas and `concat`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from eval.answers import shown
from eval.storage import atomic_write_text
from experiments import records as schema
from experiments.report.questions.reasons import is_wrong, loss_reason
from experiments.report.runs import Run

EXPORTS = ("details",)
DETAILS_DIR = "details"

# record fields copied as they are (absent: null), in this order
FIELDS = ("id", "benchmark", "task", "language", "length_level", "group", "question", "answers", "status", "reason",
          "prediction", "score", "finish_reason", "prompt_tokens", "completion_tokens", "latency_s", "cost_usd",
          "context_tokens", "evidence_in_prompt", "evidence_in_top_k", "first_evidence_rank", "docs_in_prompt",
          "evidence_retained", "docs_retained", "truncated", "answer_in_context", "depth", "route")
COLUMNS = {
    "config": "the config's label, as the report names it", "config_hash": "the runner's hash of the config",
    "knob_*": "each knob of the config (arm, retriever, chunk_size, top_k, ...), one column each",
    "id ... route": "the record's own fields (docs/sweeps.md: what a run writes)",
    "evidence_recall_at_N": "share of the gold evidence in the top N chunks (RAG)",
    "correct": "score >= the report's correct_threshold",
    "loss_reason": "why a wrong answer was lost (retrieval miss, cut by the prompt budget, truncated away, "
                   "reading miss, no evidence known, not served); null when right",
    "loss_signal": "what the reason was read from: evidence, or answer in context",
}


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "run"


def detail_rows(run: Run, correct_threshold: float, evidence_threshold: float) -> list[dict[str, Any]]:
    """One row per record of the run: its fields, the config's knobs, recall@n, correct and the loss reason."""
    knobs = {f"knob_{k}": (v if isinstance(v, (int, float, bool)) or v is None else str(v))
             for k, v in sorted(run.knobs.items())}
    ns = sorted({n for r in run.records for n in (r.get("evidence_recall") or {})}, key=int)
    rows = []
    for rec in run.records:
        row: dict[str, Any] = {"config": run.label, "config_hash": str(run.metrics.get("config_hash", "")), **knobs}
        row.update({k: rec.get(k) for k in FIELDS})
        row["id"] = str(rec.get("id"))
        row["answers"] = [shown(a) for a in rec.get("answers") or []]  # alternatives: "twice or 2"
        for n in ns:
            row[f"evidence_recall_at_{n}"] = (rec.get("evidence_recall") or {}).get(n)
        row["correct"] = float(rec["score"]) >= correct_threshold if schema.is_scored(rec) else None
        reason, signal = (loss_reason(rec, evidence_threshold, run.retrieval_depth)
                          if is_wrong(rec, correct_threshold) else (None, None))
        row["loss_reason"], row["loss_signal"] = reason, signal
        rows.append(row)
    return rows


def _card(files: list[tuple[Path, Run, int]]) -> str:
    lines = ["---", "configs:"]
    for path, _, _ in files:
        lines += [f"- config_name: {path.stem}", "  data_files:", "  - split: train", f"    path: {path.name}"]
    lines += ["---", "", "# Per-question results of a RAG vs long-context sweep", "",
              "One Parquet file per run (config point): one row per question and answer. Written by "
              "`python -m experiments.report ... --export details`.", "",
              "```python", "import datasets, pandas",
              f'ds = datasets.load_dataset("parquet", data_files="{files[0][0].name}")["train"]',
              f'df = pandas.read_parquet("{files[0][0].name}")', "```", "",
              "| file | config | rows |", "|---|---|---|"]
    lines += [f"| {p.name} | {run.label} | {n} |" for p, run, n in files]
    lines += ["", "## Columns", ""] + [f"- `{k}`: {v}" for k, v in COLUMNS.items()]
    return "\n".join(lines) + "\n"


def export_details(runs: list[Run], out: Path, correct_threshold: float, evidence_threshold: float) -> list[Path]:
    """Write `<out>/details/<run>.parquet` for each run and the README.md card; return the files."""
    from datasets import Dataset, disable_progress_bars  # imported here: the report itself does not need it

    disable_progress_bars()  # one bar per file says nothing the printed folder does not
    folder = Path(out) / DETAILS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    written: list[tuple[Path, Run, int]] = []
    seen: set[str] = set()
    for run in runs:
        rows = detail_rows(run, correct_threshold, evidence_threshold)
        if not rows:
            continue
        name = _slug(run.label)
        if name in seen:
            name += "_" + str(run.metrics.get("config_hash", ""))[:6]
        seen.add(name)
        path = folder / f"{name}.parquet"
        Dataset.from_list(rows).to_parquet(str(path))
        written.append((path, run, len(rows)))
    if not written:
        return []
    card = folder / "README.md"
    atomic_write_text(card, _card(written))
    return [p for p, _, _ in written] + [card]


__all__ = ["EXPORTS", "detail_rows", "export_details"]
