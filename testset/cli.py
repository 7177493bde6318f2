"""`python -m testset`: the command, its run (batches, resuming, the estimate before it starts) and its outputs
(JSONL, a CSV to review, a summary); see the package docstring."""

from __future__ import annotations

import argparse
import csv
import io
import json
import logging
import os
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval.corpus.folder import read_folder
from eval.corpus.parsers import ParsedDocument
from eval.lexical_overlap import BUCKETS
from eval.storage import atomic_write_text
from testset.asking import CLOSED_BOOK_TOKENS, LOCAL_BATCH, MAX_NEW_TOKENS, Asker, GeneratorFailed, generator_config
from testset.checks import REASONS, Candidate, Checker, contains, record
from testset.plan import PASSAGE_CHARS, TYPES, Task, plan
from testset.prompts import CLOSED_BOOK, example_block, prompt_hash, task_prompt

log = logging.getLogger(__name__)


log = logging.getLogger(__name__)




@dataclass
class Outputs:
    jsonl: Path

    @property
    def csv(self) -> Path:
        return self.jsonl.with_suffix(".csv")

    @property
    def summary(self) -> Path:
        return self.jsonl.with_suffix(".summary.json")

    @property
    def partial(self) -> Path:
        """Where kept items are appended while the run goes; moved onto `jsonl` when it ends or is interrupted,
        so a reader of `jsonl` never sees half a file."""
        return self.jsonl.with_name(self.jsonl.name + ".partial")


@dataclass
class Tally:
    planned: int
    kept: int = 0
    dropped: dict[str, int] = field(default_factory=lambda: {r: 0 for r in REASONS})
    kept_by_type: dict[str, int] = field(default_factory=dict)
    planned_by_type: dict[str, int] = field(default_factory=dict)
    overlap: dict[str, int] = field(default_factory=lambda: {b: 0 for b in BUCKETS})

    def drop(self, reason: str) -> None:
        self.dropped[reason] += 1

    def take(self, row: dict) -> None:
        self.kept += 1
        self.kept_by_type[row["type"]] = self.kept_by_type.get(row["type"], 0) + 1
        self.overlap[row["overlap_bucket"]] += 1

    def line(self) -> str:
        dropped = ", ".join(f"{r} {c}" for r, c in self.dropped.items() if c) or "none"
        share = f" ({100 * self.kept / self.planned:.0f}%)" if self.planned else ""
        return f"kept {self.kept} of {self.planned}{share}; dropped: {dropped}"


def load_documents(root: Path, leave_out: Iterable[Path], cache_dir: str | Path | None) -> list[ParsedDocument]:
    """The folder's documents (parsed as `benchmark=corpus` parses them); unreadable files are named in a warning."""
    from eval.corpus.cache import ParsedDocumentCache

    if not root.is_dir():
        raise FileNotFoundError(f"--docs {str(root)!r} is not a folder")
    parsed, bad = read_folder(root, leave_out=leave_out, cache=ParsedDocumentCache.in_folder(cache_dir))
    if bad:
        listed = "; ".join(f"{b.path}: {b.reason}" for b in bad[:5]) + (f" (+{len(bad) - 5} more)"
                                                                       if len(bad) > 5 else "")
        log.warning("%s: left out %d file(s) that could not be read: %s", root, len(bad), listed)
    parsed = [d for d in parsed if d.text.strip()]
    if not parsed:
        raise ValueError(f"--docs {str(root)!r}: no document could be read"
                         + (f" ({len(bad)} file(s) could not: {bad[0].path}: {bad[0].reason})" if bad else
                            " (the folder holds no .txt, .md, .html, .pdf, .docx or corpus.jsonl file)"))
    return parsed


def estimate(tasks: list[Task], asker: Asker, prompts: list[Any], closed_book: bool) -> str:
    cached = asker.cached(prompts)
    answerable = sum(t.type != "unanswerable" for t in tasks)
    text = f"{len(prompts)} generation calls ({cached} already cached, {len(prompts) - cached} to ask)"
    if closed_book:
        text += f" + up to {answerable} closed-book calls (one per item that passes the other checks)"
    return f"estimate: {text}, generator {asker.label['generator']} ({asker.label['backend']})"


def confirm(message: str, assume_yes: bool) -> bool:
    """Print the estimate; on a terminal, ask to go on (unless --yes)."""
    print(message, file=sys.stderr)
    if assume_yes or not sys.stdin.isatty():
        return True
    return input("Go on? [y/N] ").strip().lower() in ("y", "yes")


def _write_csv(path: Path, rows: list[dict]) -> None:
    columns = ["id", "approve", "type", "question", "answers", "documents", "evidence", "task", "lexical_overlap",
               "overlap_bucket", "source"]
    fh = io.StringIO(newline="")
    writer = csv.DictWriter(fh, fieldnames=columns)
    writer.writeheader()
    for r in rows:
        src = r["provenance"]["source"]
        writer.writerow({
            "id": r["id"], "approve": "", "type": r["type"], "question": r["question"],
            "answers": json.dumps(r["answers"], ensure_ascii=False),
            "documents": json.dumps(r["documents"], ensure_ascii=False),
            "evidence": json.dumps(r["evidence"], ensure_ascii=False), "task": r["task"],
            "lexical_overlap": r["lexical_overlap"], "overlap_bucket": r["overlap_bucket"],
            "source": f"{src['document']}:{src['start']}-{src['end']}"})
    atomic_write_text(path, fh.getvalue())


def _batches(items: list, size: int) -> Iterable[list]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


@dataclass
class Run:
    """One generation run: documents, tasks, the asker and the outputs."""

    docs: dict[str, ParsedDocument]
    tasks: list[Task]
    asker: Asker
    out: Outputs
    seed: int
    closed_book: bool = False
    batch: int = 1
    max_new_tokens: int = MAX_NEW_TOKENS
    progress: bool = True
    tally: Tally = field(init=False)
    checker: Checker = field(init=False)
    rows: list[dict] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.tally = Tally(len(self.tasks))
        for t in self.tasks:
            self.tally.planned_by_type[t.type] = self.tally.planned_by_type.get(t.type, 0) + 1
        self.checker = Checker(self.docs)

    def prompts(self) -> list[tuple[Task, str, Any]]:
        out = []
        for t in self.tasks:
            system, user = task_prompt(t, self.docs, self.checker.language(t.document))
            shared = len(example_block(t.type, self.checker.language(t.document)))
            out.append((t, prompt_hash(system, user), self.asker.prompt(system, user, self.max_new_tokens, shared)))
        return out

    def go(self, prompts: list[tuple[Task, str, Any]]) -> None:
        """Ask, check and write every task, appending each kept item to the JSONL as it is kept."""
        from tqdm import tqdm

        self.out.jsonl.parent.mkdir(parents=True, exist_ok=True)
        bar = tqdm(total=len(prompts), desc="questions", unit="item", disable=not self.progress, file=sys.stderr,
                   dynamic_ncols=True)
        with self.out.partial.open("w", encoding="utf-8") as fh:
            for batch in _batches(prompts, self.batch):
                first = batch[0][0]
                replies = self.asker.ask([p for _, _, p in batch], f"item {first.index} ({first.document})")
                for row in self._judge(batch, replies):
                    fh.write(json.dumps(row, ensure_ascii=False) + "\n")
                    fh.flush()
                bar.update(len(batch))
                bar.set_postfix(kept=self.tally.kept)
        bar.close()

    def _judge(self, batch: list[tuple[Task, str, Any]], replies: list[str]) -> list[dict]:
        """The kept rows of one batch, in task order; every other item counted under its reason."""
        pending: list[Candidate] = []
        for (task, phash, _), reply in zip(batch, replies, strict=True):
            candidate, reason = self.checker.check(task, reply, phash)
            if candidate is None:
                self.tally.drop(reason or "not_json")
            elif self.checker.duplicate(candidate):
                self.tally.drop("duplicate")
            else:
                self.checker.keep(candidate)
                pending.append(candidate)
        if self.closed_book:
            pending = self._closed_book(pending)
        rows = [record(c, self.docs, self.asker.label, self.seed) for c in pending]
        for r in rows:
            self.tally.take(r)
        self.rows += rows
        return rows

    def _closed_book(self, pending: list[Candidate]) -> list[Candidate]:
        """Drop the items the generator answers without the document (unanswerable ones are not asked)."""
        ask = [c for c in pending if c.task.type != "unanswerable"]
        if not ask:
            return pending
        prompts = [self.asker.prompt(None, CLOSED_BOOK[c.language].format(question=c.question), CLOSED_BOOK_TOKENS,
                                     CLOSED_BOOK[c.language].index("{question}")) for c in ask]
        replies = self.asker.ask(prompts, f"the closed-book check of item {ask[0].task.index}")
        answered = set()
        for c, reply in zip(ask, replies, strict=True):
            c.closed_book = reply
            if contains(reply, c.answer, c.language):
                answered.add(id(c))
                self.tally.drop("answerable_closed_book")
        return [c for c in pending if id(c) not in answered]

    def summary(self, seconds: float, interrupted: bool = False) -> dict[str, Any]:
        t = self.tally
        return {"planned": t.planned, "kept": t.kept, "dropped": t.dropped, "dropped_total": sum(t.dropped.values()),
                "planned_by_type": t.planned_by_type, "kept_by_type": t.kept_by_type, "overlap_buckets": t.overlap,
                "calls": {"asked": self.asker.asked, "answered_by_backend": self.asker.calls,
                          "answered_from_cache": self.asker.asked - self.asker.calls},
                **self.asker.label, "seed": self.seed, "documents": len(self.docs), "seconds": round(seconds, 2),
                "seconds_per_kept": round(seconds / t.kept, 2) if t.kept else None, "interrupted": interrupted,
                "reasons": REASONS}

    def finish(self, seconds: float, interrupted: bool = False) -> dict[str, Any]:
        summary = self.summary(seconds, interrupted)
        if not interrupted:
            _write_csv(self.out.csv, self.rows)
        if self.out.partial.exists():
            os.replace(self.out.partial, self.out.jsonl)
        atomic_write_text(self.out.summary, json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
        return summary


def _types(text: str) -> list[str]:
    types = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [t for t in types if t not in TYPES]
    if unknown or not types:
        raise ValueError(f"--types {text!r}: unknown {unknown}; allowed: {', '.join(TYPES)}")
    return list(dict.fromkeys(types))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m testset", description=__doc__.split("\n\n")[0])
    p.add_argument("--docs", required=True, help="the folder of documents (as benchmark.path)")
    p.add_argument("--out", required=True, help="the questions file to write (.jsonl); a .csv and a "
                                                ".summary.json are written beside it")
    p.add_argument("--generator", default="smollm2", help="a conf/generator name or a .yaml file (default smollm2)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="change one generator setting, e.g. --set base_url=http://localhost:8000/v1")
    p.add_argument("--n", type=int, default=100, help="items to generate (generation calls); default 100")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--types", default=",".join(TYPES), help=f"question types to mix (default {','.join(TYPES)})")
    p.add_argument("--drop-closed-book", action="store_true",
                   help="drop questions the generator answers without the document")
    p.add_argument("--passage-chars", type=int, default=PASSAGE_CHARS)
    p.add_argument("--max-new-tokens", type=int, default=MAX_NEW_TOKENS)
    p.add_argument("--batch", type=int, default=None,
                   help=f"requests sent together (default: the generator's max_concurrency, else {LOCAL_BATCH}: a "
                        "local model decodes the items of one type in a batch together)")
    p.add_argument("--cache-dir", default=os.environ.get("RAGLC_CACHE_DIR", ".cache"),
                   help="response and parsed-document caches (default $RAGLC_CACHE_DIR or .cache): a rerun "
                        "asks no call twice")
    p.add_argument("--yes", action="store_true", help="do not ask before running")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    if args.n < 1:
        p.error(f"--n must be >= 1, got {args.n}")
    if args.passage_chars < 100:
        p.error(f"--passage-chars must be >= 100, got {args.passage_chars}")
    return args


def run(args: argparse.Namespace) -> dict[str, Any] | None:
    """Generate, check and write; the summary (None when the user declined)."""
    types = _types(args.types)
    out = Outputs(Path(args.out))
    if out.jsonl.suffix.lower() != ".jsonl":
        raise ValueError(f"--out {args.out!r}: the questions file must end in .jsonl")
    root = Path(args.docs)
    docs = load_documents(root, (out.jsonl, out.partial, out.csv, out.summary), args.cache_dir)
    cfg = generator_config(args.generator, args.set)
    tasks = plan(docs, args.n, types, args.seed, args.passage_chars)
    asker = Asker(cfg, args.cache_dir)
    batch = args.batch or int(cfg.get("max_concurrency") or LOCAL_BATCH)
    job = Run({d.doc_id: d for d in docs}, tasks, asker, out, args.seed, args.drop_closed_book, max(1, batch),
              args.max_new_tokens, not args.no_progress)
    prompts = job.prompts()
    if not confirm(f"{len(docs)} documents, {len(tasks)} items ({', '.join(types)}); "
                   + estimate(tasks, asker, [p for _, _, p in prompts], args.drop_closed_book), args.yes):
        print("cancelled", file=sys.stderr)
        return None
    t0 = time.perf_counter()
    try:
        job.go(prompts)
    except (KeyboardInterrupt, GeneratorFailed) as err:
        job.finish(time.perf_counter() - t0, interrupted=True)
        where = (f"{job.tally.kept} kept item(s) so far are in {out.jsonl}; run the same command again to go on "
                 "(answered calls are cached)")
        if isinstance(err, KeyboardInterrupt):
            print(f"interrupted: {where}", file=sys.stderr)
            raise
        raise GeneratorFailed(f"{err}. {where}") from err
    summary = job.finish(time.perf_counter() - t0)
    print(job.tally.line(), file=sys.stderr)
    print(f"overlap buckets: {summary['overlap_buckets']}; wrote {out.jsonl}, {out.csv}, {out.summary}",
          file=sys.stderr)
    return summary


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    args = parse_args(argv)
    try:
        return 0 if run(args) is not None else 1
    except (GeneratorFailed, FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
