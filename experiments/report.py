"""Many run directories -> report.md, summary.csv and plots, written beside the runs.

    python -m experiments.report outputs/demo
    python -m experiments.report outputs/multirun/2026-01-01_10-00-00 outputs/runs/other_run --out my_report
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
from pathlib import Path
from typing import Any

from experiments.aggregate import _level_key
from experiments.plots import score_by_level, score_vs_tokens
from experiments.runs import Run, dedupe, find_runs

KNOB_COLUMNS = ["arm", "retriever", "chunk_size", "chunk_overlap", "top_k", "order", "truncation"]


def _fmt(v: Any, digits: int = 2) -> str:
    if v is None or v == "":
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def summary_rows(runs: list[Run]) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    levels = sorted({lvl for r in runs for lvl in r.metrics.get("score_by_length_level", {})}, key=_level_key)
    ns = sorted({n for r in runs for n in (r.metrics.get("evidence_recall") or {})}, key=int)
    rows = []
    for r in runs:
        m = r.metrics
        row: dict[str, Any] = {"config": r.label}
        row.update({k: r.knobs.get(k, "") for k in KNOB_COLUMNS})
        row["benchmark"] = r.knobs.get("benchmark", "")
        row["generator"] = r.knobs.get("generator", "")
        row["score"] = m.get("score")
        row.update({f"score_{lvl}": m.get("score_by_length_level", {}).get(lvl) for lvl in levels})
        row.update({f"recall@{n}": (m.get("evidence_recall") or {}).get(n) for n in ns})
        row["evidence_retained"] = m.get("evidence_retained")
        row["prompt_tokens_mean"] = m.get("prompt_tokens_mean")
        row["latency_s_mean"] = m.get("latency_s_mean")
        row.update(n=m.get("n"), skipped=m.get("n_skipped"), failed=m.get("n_failed"), run_dir=str(r.path))
        rows.append(row)
    return rows, levels, ns


def default_out_dir(paths: list[str]) -> Path:
    resolved = [Path(p).resolve() for p in paths]
    if len(resolved) == 1 and not (resolved[0] / "metrics.json").exists():
        return resolved[0]  # a multirun folder: the report sits beside its runs
    return Path(os.path.commonpath([p.parent if (p / "metrics.json").exists() else p for p in resolved]))


def write_report(paths: list[str], out_dir: Path | None = None) -> Path:
    runs, dupes = dedupe(find_runs(paths))
    runs.sort(key=lambda r: (r.knobs.get("arm", ""), r.metrics.get("prompt_tokens_mean") or 0))
    out = Path(out_dir) if out_dir else default_out_dir(paths)
    out.mkdir(parents=True, exist_ok=True)
    rows, levels, ns = summary_rows(runs)

    with open(out / "summary.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)

    plots = [score_vs_tokens(runs, out / "score_vs_prompt_tokens.png"), score_by_level(runs, out / "score_by_length_level.png")]

    benchmarks = sorted({r["benchmark"] for r in rows})
    lines = [
        "# RAG vs long context",
        "",
        f"{len(runs)} config points on {', '.join(benchmarks)} with {', '.join(sorted({r['generator'] for r in rows}))}."
        + (f" {sum(len(v) for v in dupes.values())} duplicate run(s) of the same config point were merged." if dupes else ""),
        "Scores are the benchmark's primary metric x100; a sample an arm could not serve counts 0.",
        "",
        "## Score by length level",
        "",
    ]
    head = ["config", "score", *[f"score {lvl}" for lvl in levels], *[f"recall@{n}" for n in ns], "retained",
            "prompt tokens", "latency s", "n", "skipped", "failed"]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        cells = [row["config"], _fmt(row["score"]), *[_fmt(row[f"score_{lvl}"]) for lvl in levels],
                 *[_fmt(row[f"recall@{n}"]) for n in ns], _fmt(row["evidence_retained"]),
                 _fmt(row["prompt_tokens_mean"], 0), _fmt(row["latency_s_mean"]), _fmt(row["n"]),
                 _fmt(row["skipped"]), _fmt(row["failed"])]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "recall@n: share of gold evidence in the top-n retrieved chunks (RAG). retained: share of gold evidence "
        "that survived truncation (long context).",
        "",
        "## Evidence by length level",
        "",
    ]
    head2 = ["config", "level", "prompt tokens", "retained", *[f"recall@{n}" for n in ns]]
    lines += ["| " + " | ".join(head2) + " |", "|" + "---|" * len(head2)]
    for r in runs:
        for lvl, d in r.metrics.get("by_length_level", {}).items():
            lines.append("| " + " | ".join([r.label, lvl, _fmt(d.get("prompt_tokens"), 0), _fmt(d.get("retained")),
                                            *[_fmt(d.get(f"recall@{n}")) for n in ns]]) + " |")
    lines += ["", "## Plots", ""]
    lines += [f"![{p.stem}]({p.name})" for p in plots]
    lines += ["", "## Runs", ""] + [f"- `{r['config']}`: `{r['run_dir']}`" for r in rows]
    report = out / "report.md"
    report.write_text("\n".join(lines) + "\n")
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.report", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dirs", nargs="+", help="multirun folders and/or run folders (each with metrics.json)")
    ap.add_argument("--out", type=Path, default=None, help="where to write (default: beside the runs)")
    args = ap.parse_args(argv)
    try:
        report = write_report(args.dirs, args.out)
    except (FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"report: {report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
