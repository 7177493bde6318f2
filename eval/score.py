"""Rescore prediction files from any source with the benchmarks' official metrics (the command is
`python -m experiments.score`, which hands this module a judge built by llm/; eval/ asks no model).

    python -m experiments.score --benchmark {lveval,loogle,clongeval,loong,synthetic} --task TASK \\
        [--prediction-field FIELD] [--per-sample OUT.jsonl] [--variant official|strict] \\
        [--skip-bad] FILE.jsonl

Input: JSON lines. The prediction is in FIELD (default `prediction`, then `pred`; without
--prediction-field a file whose lines carry exactly one `response_<model>` field, as CLongEval's
released files do, or Loong's `generate_response` / LooGLE's `llm_output`, is read too). The
reference is `answers` (a list: the first is scored where the benchmark does so) or `answer`.
Answer keywords: `answer_keywords` or `gold_ans`. For LV-Eval a length suffix (`cmrc_mixup_16k`) is
accepted and ignored by the metric (it is kept for the per-level table).

Output on stdout: one JSON object with `benchmark`, `task`, `metric`, `variant`, `n`, `score`
(primary metric, 100 x mean, 2 decimals, as the papers report it), `ci95` (bootstrap, same scale;
it resamples whole documents, the `--group-field` of each line (default `group`), when lines carry
one, since questions about one document are correlated; `n_groups` says how many were resampled)
and each secondary metric's mean (same scale, except raw counts and deviations). `--per-sample`
writes one JSON line per non-blank input line, in input order.

Judge-scored tasks (LooGLE with --judge, Loong): a judgment that could not be had (the judge call
failed, or its reply held no verdict: `eval.metrics.NoJudgment`) is no score. Its per-sample line
has no `score` but `no_judgment` ("failed" or "unparsable"), `reason` and, for an unparsable reply,
`reply_excerpt`; the means are over judged lines only, and `n_parsed`, `n_failed`, `n_unparsable`
count each outcome (the released Loong scorer averages parsable judgments only).

A malformed line stops the run with exit code 2 and a message naming the file and line, unless
--skip-bad is given, which skips such lines and counts them (`skipped_bad`).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from inspect import getattr_static
from pathlib import Path
from typing import Any

from eval.benchmarks.base import Rescoring
from eval.data_files import DataError, parse_json_object
from eval.metrics import NoJudgment, get_metric, needs_judge
from eval.metrics import score as run_metric
from eval.metrics.aggregate import mean
from eval.metrics.confidence import bootstrap_ci, n_clusters
from eval.prediction_lines import BadLine
from eval.registry import UnknownName
from eval.sample import Reference

# Per-sample values that are not shares in 0..1: reported as plain means, not x100.
RAW_KEYS = {"lsd", "lmd", "sd", "sdd", "masks", "judge_score", "n_items"}
NO_JUDGMENT = "no_judgment"  # per-sample key of a line the judge gave no judgment for: NoJudgment.kind
# Per-sample keys that are no metric value to average.
NOT_METRIC_KEYS = {"line", "id", "task", "score", "excluded", "error", "group"}


@dataclass
class Task:
    """One benchmark task's prediction file: how its lines are scored (its benchmark's `Rescoring`: the metric,
    each line's reference and the benchmark's quirks) and the judge its metric asks for."""

    benchmark: str
    name: str
    rescoring: Rescoring
    judge: Any = None  # eval.metrics.judge.Judge, for judge-scored metrics

    @property
    def metric(self) -> str:
        return self.rescoring.metric


def rescorable() -> list[str]:
    """The registered benchmarks whose class declares how its prediction files are rescored."""
    from eval.benchmarks import BENCHMARKS, Benchmark, benchmark_class

    return [name for name in BENCHMARKS.names()
            if getattr_static(benchmark_class(name), "rescoring") is not getattr_static(Benchmark, "rescoring")]


def resolve_task(benchmark: str, task: str, options: argparse.Namespace) -> Task:
    """The benchmark's own rescoring of `task` (`Benchmark.rescoring`), with the judge its metric asks for."""
    from eval.benchmarks import benchmark_class

    known = rescorable()
    rescoring = benchmark_class(benchmark).rescoring(task, options) if benchmark in known else None
    if rescoring is None:
        raise UnknownName(f"unknown benchmark {benchmark!r}; known: {', '.join(known)}")
    return Task(benchmark, task, rescoring, _make_judge(options) if needs_judge(rescoring.metric) else None)


def _make_judge(options: argparse.Namespace):
    """The judge of a judge-scored task, from the factory the caller handed to `main(make_judge=...)`:
    eval/ asks no model itself (`python -m experiments.score` hands it llm/judge_backend.py's)."""
    factory = getattr(options, "make_judge", None)
    if factory is None:
        raise ValueError(f"{options.benchmark} {options.task} is scored by a judge model; score it with "
                         "`python -m experiments.score`, which builds the judge")
    return factory(model=options.judge_model, base_url=options.judge_base_url, cache_path=options.judge_cache,
                   max_retries=options.judge_retries, timeout_s=options.judge_timeout)


def _prediction(rec: dict[str, Any], field: str | None, rescoring: Rescoring) -> str:
    if field is not None:
        if field not in rec:
            raise BadLine(f"no prediction field {field!r}")
        value = rec[field]
    else:
        for name in ("prediction", "pred", "generate_response", "llm_output"):
            if name in rec:
                value = rec[name]
                break
        else:
            responses = [k for k in rec if k.startswith("response_")]
            if len(responses) != 1:
                raise BadLine("no prediction: expected `prediction` or `pred` (or --prediction-field)")
            value = rec[responses[0]]
    value = rescoring.as_text(value)
    if not isinstance(value, str):
        raise BadLine(f"prediction must be a string, not {type(value).__name__}")
    return value


def score_file(path: Path, task: Task, options: argparse.Namespace) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Score every line; returns per-sample rows (input order) and counts."""
    rows: list[dict[str, Any]] = []
    counts = {"skipped_bad": 0}
    get_metric(task.metric)  # fail early on an unknown metric
    with path.open("rb") as fh:  # bytes: a line that is not UTF-8 is one bad line, not a crash
        for lineno, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                rec, pred, ref = _read_line(raw, path, lineno, task, options)
            except BadLine as exc:
                message = f"{path}:{lineno}: {exc}"
                if not options.skip_bad:
                    raise BadLine(message) from None
                print(f"skipping {message}", file=sys.stderr)
                counts["skipped_bad"] += 1
                rows.append({"line": lineno, "error": str(exc)})
                continue
            row: dict[str, Any] = {"line": lineno}
            if "id" in rec:
                row["id"] = rec["id"]
            group = rec.get(options.group_field) if options.group_field else None
            if isinstance(group, (str, int)) and not isinstance(group, bool) and str(group):
                row["group"] = str(group)  # the document: the interval resamples documents, not questions
            rows.append(_scored_row(row, pred, ref, task, counts))
    return rows, counts


def _scored_row(row: dict[str, Any], pred: str, ref: Reference, task: Task, counts: dict[str, int]
                ) -> dict[str, Any]:
    """A line's per-sample row: its scores, no judgment, or why its benchmark leaves it out (counted as
    `excluded_<why>s`)."""
    why = task.rescoring.excluded(pred)
    if why:
        counts[f"excluded_{why}s"] = counts.get(f"excluded_{why}s", 0) + 1
        return {**row, "excluded": why}
    row.update(task.rescoring.fields)
    outcome = run_metric(task.metric, pred, ref, judge=task.judge)
    if isinstance(outcome, NoJudgment):
        return {**row, **_no_judgment_fields(outcome)}
    row.update(outcome)
    if task.rescoring.extra is not None:
        row.update(task.rescoring.extra(pred, ref))
    return row


def _read_line(raw: bytes, path: Path, lineno: int, task: Task, options: argparse.Namespace
               ) -> tuple[dict[str, Any], str, Reference]:
    """A line's record, prediction and reference; `BadLine` saying what is wrong with it."""
    try:
        line = raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise BadLine(f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at byte {exc.start + 1} of the line)") from None
    try:
        rec = parse_json_object(line, str(path), lineno)
    except DataError as exc:
        raise BadLine(exc.detail) from None
    pred = _prediction(rec, options.prediction_field, task.rescoring)
    try:
        return rec, pred, task.rescoring.reference(rec)
    except ValueError as exc:
        raise BadLine(str(exc)) from None


def _no_judgment_fields(outcome: NoJudgment) -> dict[str, Any]:
    """The per-sample fields of a line the judge gave no judgment for (no `score`)."""
    fields = {NO_JUDGMENT: outcome.kind, "reason": outcome.reason}
    if outcome.reply_excerpt is not None:
        fields["reply_excerpt"] = outcome.reply_excerpt
    return fields


def _round(x: float, digits: int = 2) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(x, digits)


def summarize(task: Task, rows: list[dict[str, Any]], counts: dict[str, int],
              options: argparse.Namespace) -> dict[str, Any]:
    scored = [r for r in rows if "score" in r]  # a line the judge gave no judgment for has none
    out: dict[str, Any] = {"benchmark": task.benchmark, "task": task.name, "metric": task.metric,
                           "variant": options.variant}
    values = [r["score"] for r in scored]
    if needs_judge(task.metric):
        kinds = [r[NO_JUDGMENT] for r in rows if NO_JUDGMENT in r]
        out["n"] = len(scored) + len(kinds)
        out["n_parsed"] = len(scored)
        out["n_failed"] = kinds.count(NoJudgment.FAILED)
        out["n_unparsable"] = kinds.count(NoJudgment.UNPARSABLE)
    else:
        out["n"] = len(values)
    groups = [r.get("group") for r in scored]
    lo, hi = (bootstrap_ci(values, seed=options.seed, groups=groups) if values else (float("nan"), float("nan")))
    out["n_groups"] = n_clusters(groups, len(values)) if values else 0
    out["score"] = _round(100 * mean(values)) if values else None
    out["ci95"] = [_round(100 * lo), _round(100 * hi)]
    keys = []
    for r in scored:
        for k in r:
            if k not in NOT_METRIC_KEYS and k not in keys:
                keys.append(k)
    for k in keys:
        vals = [r[k] for r in scored if k in r and r[k] is not None]
        if not vals:
            continue
        out[k] = _round(mean(vals), 4) if k in RAW_KEYS else _round(100 * mean(vals))
    if task.rescoring.summary is not None:
        out.update(task.rescoring.summary(scored))
    out.update({k: v for k, v in counts.items() if v})
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m experiments.score", description=__doc__.split("\n\n")[0])
    p.add_argument("--benchmark", required=True, choices=rescorable())
    p.add_argument("--task", required=True, help="dataset or task name (LV-Eval: `_16k` suffixes accepted)")
    p.add_argument("--prediction-field", default=None,
                   help="JSON field holding the prediction (default: prediction, pred)")
    p.add_argument("--per-sample", type=Path, default=None, help="write per-sample scores here (JSON lines)")
    p.add_argument("--variant", choices=("official", "strict"), default="official")
    p.add_argument("--skip-bad", action="store_true", help="skip and count malformed lines instead of stopping")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--group-field", default="group", help="field naming each line's document (the bootstrap resamples "
                   "documents); empty: resample lines")
    p.add_argument(
        "--typo-answer-order",
        choices=("id,correct,typo", "id,typo,correct"),
        default="id,correct,typo",
        help="CLongEval stacked_typo_detection: field order of the gold lines "
             "(GPT-4-Turbo's released files: id,typo,correct)",
    )
    p.add_argument("--judge", action="store_true",
                   help="LooGLE: score with the GPT-4 True/False (QA) or 0-100 (summary) judge")
    p.add_argument("--judge-model", default=os.environ.get("JUDGE_MODEL") or "gpt-4-turbo",
                   help="judge model name (default: $JUDGE_MODEL or gpt-4-turbo)")
    p.add_argument("--judge-base-url", default=os.environ.get("JUDGE_BASE_URL") or os.environ.get("OPENAI_BASE_URL"),
                   help="OpenAI-compatible endpoint (default: $JUDGE_BASE_URL, $OPENAI_BASE_URL or OpenAI)")
    p.add_argument("--judge-retries", type=int, default=3, help="retries of a failed judge call (with backoff)")
    p.add_argument("--judge-timeout", type=float, default=120.0,
                   help="seconds one judge call may take as a whole (connect, wait, read), per attempt")
    p.add_argument("--judge-cache", type=Path, default=None, help="judgment cache (default: .cache/judgments.sqlite)")
    p.add_argument(
        "--bertscore-model",
        default=None,
        help="LooGLE: local BERTScore model folder (roberta-large in the paper; default $LOOGLE_BERTSCORE_MODEL)",
    )
    p.add_argument("file", type=Path)
    return p


def main(argv: list[str] | None = None, make_judge: Callable[..., Any] | None = None) -> int:
    """The CLI. `make_judge(model=, base_url=, cache_path=, max_retries=, timeout_s=) -> Judge` builds the
    judge for judge-scored tasks (none: such a task is refused with a clear error)."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    options = build_parser().parse_args(argv)
    options.make_judge = make_judge
    try:
        task = resolve_task(options.benchmark, options.task, options)
    except (KeyError, ValueError) as exc:
        print(f"error: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 2
    if not options.file.is_file():
        print(f"error: {options.file}: no such file", file=sys.stderr)
        return 2
    try:
        rows, counts = score_file(options.file, task, options)
    except BadLine as exc:
        print(f"error: {exc} (use --skip-bad to skip malformed lines)", file=sys.stderr)
        return 2
    if options.per_sample:
        options.per_sample.parent.mkdir(parents=True, exist_ok=True)
        with options.per_sample.open("w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(json.dumps(summarize(task, rows, counts, options), ensure_ascii=False))
    return 0


if __name__ == "__main__":  # the command moved up a floor, where a judge can be built
    sys.exit("eval.score is the rescoring library, not a command: the command is `rol-score ARGS` "
             "(or `python -m experiments.score ARGS`), with the same arguments")
