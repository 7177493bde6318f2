"""Bring your own predictions: prediction files from any harness become run directories the report reads.

    python -m experiments.import --format jsonl --path preds.jsonl --benchmark loogle \\
        --benchmark-path ../shared/data/loogle --out runs/mine
    python -m experiments.import --format lara --path <LaRA clone> --model gpt-4o --out runs/lara-gpt-4o
    python -m experiments.report runs/lara-gpt-4o

Formats
- `jsonl`: one prediction per line: `id`, `arm` (a registered arm: `rag`, `longctx`, ...), `config` (a
  label naming the setting), `prediction`; optional `model` (the generator; the report separates
  models), `answers`, `group` (the document: intervals resample documents), `task`, `level`,
  `language`, `question` (its wording is a router's feature), `prompt_tokens`, `completion_tokens`,
  `latency_s`, `cost_usd`. With `--benchmark-path` the benchmark's loader supplies answers, group, task,
  level, question and metric for every id (an id it does not have is an error); without it each line
  carries `answers` and `--metric` names the metric.
- `lara`: LaRA's released predictions,
  `evaluation/prediction/<model>/{full,rag}_preds_<model>_<len>_<domain>_<type>.jsonl`
  (`question`, `prediction`, `ground_truth`, and the query's `file`): `full` is arm `longctx`, `rag`
  is arm `rag`. Each line is matched to its sample id through the clone's query files by (length,
  domain, task, document file, question) (`eval.benchmarks.lara.lara_index`; a question asked twice
  about one document matches in order). Group: the document; level: the length. A prediction of
  `false` (the release's failed model call) is recorded as failed.

Scores come from the shared metric module (`eval.metrics`): the benchmark's metric, or `--metric`;
LaRA's official `lara_judge` when `--judge-model` is given (an OpenAI-compatible endpoint, key from
`JUDGE_API_KEY` / `OPENAI_API_KEY`), else its judge-free `lara_auto`. A judgment that fails or cannot be
parsed is recorded as failed, as in a run, never as 0.

Ids are checked, never guessed: a duplicate id within one config, a line that matches no sample,
and ids present in some configs but not others are reported (counts and examples) and stop the
import; `--allow-mismatch` keeps only the ids every config has and records how many were dropped.
Tokens, latency and cost are recorded only when given (the report then says "-", not 0).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, overload

from eval import metrics
from eval.answers import Answer
from eval.sample import Reference
from experiments import records as schema
from experiments.arms import ARMS, ROLE_LONGCTX, ROLE_RAG
from experiments.folder_names import safe_dirname
from experiments.logs import set_log_level
from experiments.run_writer import write_run_dir

log = logging.getLogger(__name__)

FORMATS = ("jsonl", "lara")
USAGE_KEYS = ("prompt_tokens", "completion_tokens", "latency_s", "cost_usd")
LARA_ARMS = {"full": ROLE_LONGCTX, "rag": ROLE_RAG}  # LaRA's file prefix -> the arm of that role


@dataclass
class Prediction:
    where: str  # file:line, for errors
    id: str
    arm: str
    config: str
    prediction: str
    model: str = "imported"
    benchmark: str = "imported"
    task: str = ""
    level: str = "all"
    language: str = "en"
    group: str | None = None
    answers: list[Answer] = field(default_factory=list)
    reference: Reference | None = None
    metric: str | None = None
    usage: dict[str, float] = field(default_factory=dict)
    failed: str | None = None  # the harness recorded no answer: a failed record, not a zero
    question: str | None = None  # the question's text, when known (a router reads its wording)


class ImportError_(ValueError):
    """A prediction file that cannot be imported as it is (the message names file, line and field)."""


def _lines(path: Path) -> Iterable[tuple[int, dict[str, Any]]]:
    with path.open(encoding="utf-8") as fh:
        for n, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                row = json.loads(raw)
            except ValueError as err:
                raise ImportError_(f"{path}:{n}: not a JSON line ({err})") from None
            if not isinstance(row, dict):
                raise ImportError_(f"{path}:{n}: a JSON object expected, got {type(row).__name__}")
            yield n, row


@overload
def _text(row: dict[str, Any], key: str, where: str, required: Literal[True] = True) -> str: ...
@overload
def _text(row: dict[str, Any], key: str, where: str, required: bool) -> str | None: ...
def _text(row: dict[str, Any], key: str, where: str, required: bool = True) -> str | None:
    value = row.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and key != "prediction" and not value.strip()):
        raise ImportError_(f"{where}: field `{key}` must be text, got {value!r:.80}")
    return value


# ------------------------------------------------------------------ the generic JSON lines format
def read_jsonl(path: Path, benchmark: str, samples: dict[str, Any] | None, metric: str | None) -> list[Prediction]:
    """Predictions of a JSON-lines file; `samples` (id -> Sample from the benchmark's loader) supply what
    a line leaves out."""
    known_arms = set(ARMS.names())
    out = []
    for n, row in _lines(path):
        where = f"{path}:{n}"
        pid, arm, config = (_text(row, k, where) for k in ("id", "arm", "config"))
        if arm not in known_arms:
            raise ImportError_(f"{where}: field `arm` is {arm!r}; registered arms: {', '.join(sorted(known_arms))}")
        p = Prediction(where, pid, arm, config, _text(row, "prediction", where), benchmark=benchmark,
                       model=_text(row, "model", where, required=False) or "imported")
        for key in USAGE_KEYS:
            if row.get(key) is not None:
                if not isinstance(row[key], (int, float)) or isinstance(row[key], bool) or row[key] < 0:
                    raise ImportError_(f"{where}: field `{key}` must be a non-negative number, got {row[key]!r:.40}")
                p.usage[key] = row[key]
        if samples is not None:
            sample = samples.get(pid)
            if sample is None:
                raise ImportError_(f"{where}: id {pid!r} is not a sample of benchmark {benchmark} at the given path")
            p.task, p.level, p.language, p.group = sample.task, sample.length_level, sample.language, sample.group
            p.answers, p.reference, p.metric = list(sample.answers), sample.reference(), metric or sample.metric
            p.question = sample.question
        else:
            answers = row.get("answers")
            if not (isinstance(answers, list) and answers and all(isinstance(a, str) for a in answers)):
                raise ImportError_(f"{where}: field `answers` must be a non-empty list of text (or give "
                                   "--benchmark-path so the benchmark supplies the answers)")
            p.task = _text(row, "task", where, required=False) or ""
            p.level = str(row.get("level") or "all")
            p.language = _text(row, "language", where, required=False) or "en"
            p.group = _text(row, "group", where, required=False)
            p.question = _text(row, "question", where, required=False)
            p.answers, p.metric = answers, metric
            p.reference = Reference(answers=answers, language=p.language, task=p.task)
        if p.metric is None:
            raise ImportError_(f"{where}: no metric: give --metric (or --benchmark-path for the benchmark's own)")
        out.append(p)
    if not out:
        raise ImportError_(f"{path}: no predictions")
    return out


# ------------------------------------------------------------------ LaRA's released prediction files
def read_lara(clone: Path, model: str, metric: str, allow_mismatch: bool = False) -> tuple[list[Prediction], int]:
    """The model's predictions matched to sample ids, and how many lines matched none (left out only
    with `allow_mismatch`)."""
    from eval.benchmarks.lara import lara_index, parse_query_file_name
    from eval.metrics.lara import lara_reference

    folder = clone / "evaluation" / "prediction" / model
    if not folder.is_dir():
        have = sorted(p.name for p in (clone / "evaluation" / "prediction").glob("*") if p.is_dir())
        raise ImportError_(f"{folder}: no such prediction folder; models here: {', '.join(have) or 'none'}")
    index = lara_index(clone)
    out: list[Prediction] = []
    unmatched: list[str] = []
    for path in sorted(folder.glob("*_preds_*.jsonl")):
        kind = path.name.split("_preds_", 1)[0]
        parsed = parse_query_file_name(path.name)
        if kind not in LARA_ARMS or parsed is None:
            raise ImportError_(f"{path}: not a LaRA prediction file name "
                               "({full,rag}_preds_<model>_<len>_<domain>_<type>.jsonl)")
        length, domain, task = parsed
        taken: Counter = Counter()
        for n, row in _lines(path):
            where = f"{path}:{n}"
            question, doc = _text(row, "question", where), _text(row, "file", where)
            key = (length, domain, task, doc, question)
            ids = index.get(key, [])
            if taken[key] >= len(ids):
                unmatched.append(f"{where} ({question[:60]!r})")
                continue
            pid = ids[taken[key]]
            taken[key] += 1
            failed = None
            if row.get("prediction") is False:  # the release's API call failed (eval_full.py returns False)
                row, failed = {**row, "prediction": ""}, "no prediction: the released run's model call failed (false)"
            try:
                reference = lara_reference(task, row)
            except ValueError as err:
                raise ImportError_(f"{where}: {err}") from None
            out.append(Prediction(where, pid, LARA_ARMS[kind], f"{model} {LARA_ARMS[kind]}",
                                  _text(row, "prediction", where), model=model, benchmark="lara", task=task,
                                  level=length, group=f"lara/{length}/{domain}/{doc}", answers=list(reference.answers),
                                  reference=reference, metric=metric, failed=failed, question=question))
    if unmatched:
        more = f" (+{len(unmatched) - 3} more)" if len(unmatched) > 3 else ""
        what = (f"{len(unmatched)} LaRA predictions match no question of the clone's query files (same length, "
                f"domain, task, file and question): {'; '.join(unmatched[:3])}{more}")
        if not allow_mismatch:
            raise ImportError_(what + ". A query file missing from the clone? --allow-mismatch leaves them out")
        log.warning("--allow-mismatch: left out %s", what)
    if not out:
        raise ImportError_(f"{folder}: no prediction files")
    return out, len(unmatched)


# ------------------------------------------------------------------ checks, scores, run directories
def check_ids(preds: list[Prediction], allow_mismatch: bool) -> tuple[list[Prediction], dict[str, Any]]:
    """Every config must hold each id once, and all configs the same ids. Returns the predictions kept
    and what was found (`dropped`: predictions left out by --allow-mismatch)."""
    by_config: dict[tuple[str, str, str], dict[str, Prediction]] = defaultdict(dict)
    for p in preds:
        seen = by_config[(p.model, p.arm, p.config)]
        if p.id in seen:
            raise ImportError_(f"{p.where}: id {p.id!r} again for arm {p.arm}, config {p.config!r} "
                               f"(first at {seen[p.id].where}): one prediction per id and config")
        seen[p.id] = p
    everywhere = set.intersection(*(set(d) for d in by_config.values()))
    problems = []
    for (_, arm, config), d in sorted(by_config.items()):
        missing = sorted(set().union(*by_config.values()) - set(d))
        if missing:
            problems.append(f"{arm} / {config!r} lacks {len(missing)} of the ids others have "
                            f"(e.g. {', '.join(missing[:3])})")
    if problems and not allow_mismatch:
        raise ImportError_("the configs do not cover the same samples: " + "; ".join(problems)
                           + ". Fix the files, or pass --allow-mismatch to keep only the ids every config has")
    kept = [p for p in preds if p.id in everywhere]
    return kept, {"configs": len(by_config), "ids": len(everywhere), "dropped": len(preds) - len(kept),
                  "mismatches": problems}


def _record(p: Prediction, chash: str, judge) -> dict[str, Any]:
    """The record of one prediction, through the schema's constructors as the runner's (reasons masked there)."""
    base = schema.base_fields(id=p.id, benchmark=p.benchmark, task=p.task, language=p.language,
                              length_level=p.level, group=p.group, arm=p.arm, config_hash=chash, answers=p.answers,
                              question=p.question)
    if p.failed:
        return schema.failed_record(base, p.failed)
    if p.metric is None or p.reference is None:  # (every reader sets both on a prediction it keeps)
        raise ImportError_(f"{p.where}: no metric or reference answers to score this prediction with")
    values = metrics.score(p.metric, p.prediction, p.reference, judge=judge)
    usage = {k: v for k, v in p.usage.items() if k != "cost_usd"}
    return schema.scored_record(base, p.prediction, values, usage, p.usage.get("cost_usd"), {})


def write_runs(preds: list[Prediction], out: Path, source: dict[str, Any], judge=None,
               progress: bool = False) -> list[Path]:
    """One run directory per (model, arm, config) under `out`, as the runner lays them out."""
    from tqdm import tqdm

    groups: dict[tuple[str, str, str], list[Prediction]] = defaultdict(list)
    for p in preds:
        groups[(p.model, p.arm, p.config)].append(p)
    dirs = []
    bar = tqdm(total=len(preds), desc="scoring", unit="prediction", disable=not progress, file=sys.stderr)
    for (model, arm, config), items in sorted(groups.items()):
        first = items[0]
        knobs = {"arm": arm, "benchmark": first.benchmark, "generator": model, "label": config}
        chash = hashlib.sha256(json.dumps({**knobs, "metric": first.metric, "source": source}, sort_keys=True)
                               .encode()).hexdigest()[:12]
        records = []
        for p in items:
            records.append(_record(p, chash, judge))
            bar.update(1)
        run_dir = out / safe_dirname(f"{model}-{arm}-{config}".replace("/", "_"))
        config_yaml = {"benchmark": {"name": first.benchmark}, "generator": {"model": model}, "arm": {"name": arm},
                       "imported_from": source}
        write_run_dir(run_dir, knobs, records, config_yaml, [f"arm={arm}", f"label={config}"], chash,
                      extra_metrics={"imported_from": {**source, "metric": first.metric}})
        dirs.append(run_dir)
    bar.close()
    return dirs


def _judge(args: argparse.Namespace):
    if not args.judge_model:
        return None
    from llm.judge_backend import build_judge

    return build_judge(args.judge_model, args.judge_base_url, Path(args.out) / "judgments.sqlite",
                       timeout_s=args.judge_timeout_s, max_retries=args.judge_max_retries)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m experiments.import", description=__doc__.split("\n\n")[0],
                                epilog="Formats and checks: see experiments/importers/predictions.py.")
    p.add_argument("--format", choices=FORMATS, required=True)
    p.add_argument("--path", type=Path, required=True, help="jsonl: the predictions file; lara: the LaRA clone")
    p.add_argument("--out", type=Path, required=True, help="folder for the run directories")
    p.add_argument("--model", action="append", default=None, help="lara: a model folder under evaluation/prediction "
                   "(repeat for several)")
    p.add_argument("--benchmark", default=None,
                   help="jsonl: the benchmark the ids belong to (a registered loader name)")
    p.add_argument("--benchmark-path", default=None,
                   help="jsonl: its data; the loader supplies answers, groups, metric")
    p.add_argument("--metric", default=None, help="score with this registered metric instead of the benchmark's")
    p.add_argument("--allow-mismatch", action="store_true", help="keep only the ids every config has (counted)")
    p.add_argument("--judge-model", default=None, help="judge model (OpenAI-compatible); LaRA: lara_judge")
    p.add_argument("--judge-base-url", default=None)
    p.add_argument("--judge-timeout-s", type=float, default=120.0)
    p.add_argument("--judge-max-retries", type=int, default=3)
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True)
    return p


def run_import(args: argparse.Namespace) -> dict[str, Any]:
    t0 = time.perf_counter()
    source: dict[str, Any] = {"format": args.format, "path": str(args.path)}
    if args.format == "lara":
        if not args.model:
            raise ImportError_("--format lara needs --model (a folder under evaluation/prediction)")
        metric = args.metric or ("lara_judge" if args.judge_model else "lara_auto")
        preds = []
        for model in args.model:
            found, unmatched = read_lara(args.path, model, metric, args.allow_mismatch)
            preds += found
            source["unmatched"] = source.get("unmatched", 0) + unmatched
    else:
        if not args.path.is_file():
            raise ImportError_(f"{args.path}: no such predictions file")
        samples = None
        benchmark = args.benchmark or "imported"
        if args.benchmark_path:
            if not args.benchmark:
                raise ImportError_("--benchmark-path needs --benchmark (the loader to read it with)")
            from eval.benchmarks import load_benchmark

            samples = {s.id: s for s in load_benchmark({"name": args.benchmark, "path": args.benchmark_path}).samples}
        preds = read_jsonl(args.path, benchmark, samples, args.metric)
    if any(p.metric and metrics.needs_judge(p.metric) for p in preds) and not args.judge_model:
        raise ImportError_(f"metric {preds[0].metric} asks an LLM judge: give --judge-model (and --judge-base-url), "
                           "or --metric with a judge-free metric")
    load_s = time.perf_counter() - t0
    kept, ids = check_ids(preds, args.allow_mismatch)
    if ids["dropped"]:
        log.warning("--allow-mismatch: %d predictions dropped, %d ids kept in every config: %s", ids["dropped"],
                    ids["ids"], "; ".join(ids["mismatches"]))
    source.update(lines=len(preds), dropped=ids["dropped"])
    dirs = write_runs(kept, args.out, source, _judge(args), progress=args.progress)
    return {"run_dirs": [str(d) for d in dirs], "predictions": len(kept), "ids": ids["ids"], "configs": ids["configs"],
            "dropped": ids["dropped"], "unmatched": source.get("unmatched", 0), "read_s": round(load_s, 2),
            "total_s": round(time.perf_counter() - t0, 2)}


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    set_log_level("info")  # a judge's per-request HTTP lines would drown the progress bar
    args = build_parser().parse_args(argv)
    try:
        summary = run_import(args)
    except (ValueError, FileNotFoundError, KeyError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"imported {summary['predictions']} predictions ({summary['ids']} ids x {summary['configs']} configs, "
          f"{summary['dropped']} dropped, {summary['unmatched']} matching no sample) in {summary['total_s']} s "
          f"into {args.out}\n"
          f"report: python -m experiments.report {args.out}")
    return 0
