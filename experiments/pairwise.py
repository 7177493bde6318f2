"""Compare RAG's answers with long context's where questions have no reference (`pairwise_judge`).

    python -m experiments.pairwise multirun/2026-11-25/10-00-00 --judge-model gpt-4o-mini
    python -m experiments.pairwise RUN_DIRS --judge-model Qwen2.5-7B-Instruct --judge-base-url http://gpu:8000/v1

Questions with neither reference answers nor evidence quotes (`benchmark=corpus`) are answered and
recorded unscored by the runner (`scoring: pairwise`). This step then asks a judge, per question,
which of two answers is better: each RAG config's against the sweep's long-context config's, in both
orders and with the arms' names hidden (`eval.metrics.reference_free.compare`). Each RAG run folder
gets `pairwise.jsonl` (one line per question: the outcome for RAG, both orders' choices, the answer
lengths, the judge and the prompt's hash); `python -m experiments.report` reads it, so the verdict,
its interval and the what-if tables work on preference scores (win 1, tie 0.5, loss 0 for RAG;
long context 0.5), and a section gives the win / tie / loss shares and the answer lengths.

One long-context config per benchmark is compared against (several: name one with `--longctx`).
Interrupted, it resumes: questions already judged (by the same judge and prompt) are kept, and the
judge's replies are cached (`<cache-dir>/judgments.sqlite`). Use a judge of another model family
than the answering model: a judge favours its own family's answers (and longer ones).
"""

from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from eval.metrics.reference_free import Comparison, compare, prompt_hash
from experiments import records as schema
from experiments.arms import ROLE_LONGCTX, ROLE_RAG
from experiments.report.loading import load_runs
from experiments.report.runs import Run

log = logging.getLogger(__name__)

PAIRWISE_FILE = schema.PAIRWISE_FILE


@dataclass
class Pair:
    """One RAG run against the long-context run of its benchmark, over the questions both answered."""

    rag: Run
    longctx: Run
    ids: list[str]


def pending(run: Run) -> dict[str, dict[str, Any]]:
    """The run's answered records that wait for a pairwise judgment, by id."""
    return {str(r["id"]): r for r in run.records if schema.is_answered(r) and r.get("scoring") == schema.PAIRWISE}


def pairs(runs: list[Run], longctx: str | None = None) -> list[Pair]:
    """What to compare: every RAG run with pairwise questions against its benchmark's long-context run."""
    out = []
    for scope in sorted({r.scope for r in runs}):
        here = [r for r in runs if r.scope == scope and pending(r)]
        rags = [r for r in here if r.spec.role == ROLE_RAG]
        lcs = [r for r in here if r.spec.role == ROLE_LONGCTX and not r.budget_matched]
        if longctx:
            lcs = [r for r in lcs if longctx in (r.label, r.path.name, str(r.path))]
        if not rags:
            continue
        if len(lcs) != 1:
            names = ", ".join(r.label for r in lcs) or "none"
            raise ValueError(f"{scope}: pairwise comparison needs one long-context run with pairwise questions "
                             f"to compare against; found {names}. Name one with --longctx LABEL")
        lc_ids = pending(lcs[0])
        for rag in rags:
            ids = [i for i in pending(rag) if i in lc_ids]
            out.append(Pair(rag, lcs[0], ids))
    return out


def judged_line(pair: Pair, qid: str, c: Comparison, judge_model: str) -> dict[str, Any]:
    a, b = pending(pair.rag)[qid], pending(pair.longctx)[qid]
    return {"id": qid, "group": a.get("group"), "length_level": a.get("length_level"),
            "against": pair.longctx.metrics.get("config_hash"), "against_label": pair.longctx.label,
            "judge": judge_model, "prompt_hash": prompt_hash(), **c.as_dict(),
            "words_rag": len(str(a.get("prediction") or "").split()),
            "words_longctx": len(str(b.get("prediction") or "").split())}


def _done(store: schema.RecordStore, pair: Pair, judge_model: str) -> set[str]:
    against = pair.longctx.metrics.get("config_hash")
    return {i for i, line in store.load().items() if line.get("outcome") is not None
            and line.get("against") == against and line.get("judge") == judge_model
            and line.get("prompt_hash") == prompt_hash()}


def run_pairwise(pairs_: list[Pair], judge, progress: bool = True) -> dict[str, int]:
    """Judge every pair's questions not yet judged; append each to the RAG run's pairwise.jsonl."""
    counts = {"judged": 0, "kept": 0, "no judgment": 0}
    for pair in pairs_:
        store = schema.RecordStore(pair.rag.path / PAIRWISE_FILE)
        done = _done(store, pair, judge.model)
        counts["kept"] += len(done)
        todo = [i for i in pair.ids if i not in done]
        rag, lc = pending(pair.rag), pending(pair.longctx)
        for qid in tqdm(todo, desc=f"{pair.rag.label} vs {pair.longctx.label}", unit="question",
                        disable=not progress, file=sys.stderr, dynamic_ncols=True):
            c = compare(judge, str(rag[qid].get("question", "")), str(rag[qid].get("prediction") or ""),
                        str(lc[qid].get("prediction") or ""))
            store.append(judged_line(pair, qid, c, judge.model))
            counts["judged" if c.outcome is not None else "no judgment"] += 1
    return counts


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.pairwise", description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", help="multirun or run directories of one sweep")
    p.add_argument("--judge-model", required=True, help="the judge model's name at its endpoint")
    p.add_argument("--judge-base-url", default=None, help="an OpenAI-compatible endpoint (default: OpenAI)")
    p.add_argument("--longctx", default=None, help="the long-context run to compare against (its label or folder)")
    p.add_argument("--cache-dir", default=".cache", help="where judgments are cached (judgments.sqlite)")
    p.add_argument("--timeout-s", type=float, default=120.0)
    p.add_argument("--max-retries", type=int, default=3)
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        todo = pairs(load_runs(args.runs).runs, args.longctx)
    except (ValueError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if not todo:
        print("error: no run in these folders has answers waiting for a pairwise judgment (questions with neither "
              "answers nor evidence, benchmark=corpus)", file=sys.stderr)
        return 2
    questions = sum(len(t.ids) for t in todo)
    print(f"{len(todo)} RAG config(s) x their questions: {questions} comparisons, up to {2 * questions} judge calls "
          f"(cached ones are free)", file=sys.stderr)
    from llm.judge_backend import build_judge

    judge = build_judge(args.judge_model, args.judge_base_url, Path(args.cache_dir) / "judgments.sqlite",
                        timeout_s=args.timeout_s, max_retries=args.max_retries)
    counts = run_pairwise(todo, judge, progress=not args.no_progress)
    print(f"judged {counts['judged']}, kept from before {counts['kept']}, no judgment {counts['no judgment']} "
          f"(failed calls or unreadable replies; rerun to retry); judge calls sent: {judge.calls}")
    for t in todo:
        print(f"  {t.rag.path / PAIRWISE_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
