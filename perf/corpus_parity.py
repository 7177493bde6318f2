"""Same figures through both doors: LooGLE's evidence recall@n read by `benchmark=loogle`, and read from files.

    python perf/corpus_parity.py [--types md,html,pdf,docx] [--headings] [--chunk-size 128] [--documents N]
                                 [--tokenizer SPEC]

The LooGLE sample in ../shared/data/loogle (short- and long-dependency QA: 9 documents, 123 questions)
is loaded as the runner loads it, and written out with `eval.corpus.write` (titles left off the text
unless `--headings`) once per file type, every document as that type, and once as a round-robin mix of
the types. Each folder runs through `benchmark=corpus`, and the original through `benchmark=loogle`,
with the runner itself (`experiments.run.run`, retrieval only: `generator=none`, BM25 over fixed
128-token windows of SmolLM2's tokenizer, 16 overlap), so the recall figures are those of the records
a user's run writes. Prints one row per file type (`mix:TYPE`: that type's documents of the mix): the
questions with evidence, mean recall@1/5/10 through each door, the largest difference of those means,
and how many questions' figures differ at all. The last line is one JSON object.

`--documents N` writes only the first N documents (and their questions) as files, for a quick run;
`--tokenizer` chunks with another copy of SmolLM2's tokenizer (e.g. a tiny model's folder) than its GGUF file.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

import common

from eval.corpus.write import WrittenCorpus, _glyphs, default_pdf_font, load_samples, read_back, write_samples
from eval.sample import Sample

LOOGLE = common.ROOT.parent / "shared" / "data" / "loogle"
TASKS = "[shortdep_qa,longdep_qa]"
NS = ("1", "5", "10")


def retrieval(chunk_size: int, cache: Path, tokenizer: str | None = None) -> list[str]:
    """The overrides of one retrieval-only point: BM25 over fixed token windows, recall at 1, 5 and 10."""
    return ["arm=rag", "retriever=bm25", "chunker=tokens", "generator=none", f"rag.chunk_size={chunk_size}",
            "rag.chunk_overlap=16", "rag.recall_at=[1,5,10]", "run.progress=false", f"run.cache_dir={cache}",
            *([f"generator.tokenizer={tokenizer}"] if tokenizer else [])]


def run_recall(overrides: list[str], run_dir: Path) -> dict[str, dict[str, float]]:
    """{sample id: evidence recall@n} from the records of one run of the runner (samples with evidence)."""
    from hydra import compose, initialize_config_dir

    from experiments.records import RETRIEVED
    from experiments.report.loading import load_runs
    from experiments.run import run

    with initialize_config_dir(config_dir=str(common.ROOT / "conf"), version_base="1.3"):
        cfg = compose(config_name="config", overrides=overrides)
    run_dir.mkdir(parents=True)
    run(cfg, run_dir)
    records = {str(r["id"]): r for run_read in load_runs([run_dir]).runs for r in run_read.records}
    bad = [i for i, r in records.items() if r.get("status") != RETRIEVED]
    if bad:
        raise RuntimeError(f"{run_dir}: {len(bad)} record(s) not retrieved, e.g. {bad[0]}: "
                           f"{records[bad[0]].get('reason')}")
    return {i: r["evidence_recall"] for i, r in records.items() if r.get("evidence_recall")}


def corpus_recall(written: WrittenCorpus, chunk_size: int, cache: Path, run_dir: Path,
                  tokenizer: str | None = None) -> dict[str, dict[str, float]]:
    return run_recall(["benchmark=corpus", f"benchmark.path={written.docs_dir}",
                       f"benchmark.questions={written.questions_path}", f"benchmark.cache_dir={cache}",
                       *retrieval(chunk_size, cache, tokenizer)], run_dir)


def compare(kind: str, ids: list[str], loogle: dict, corpus: dict) -> dict:
    """Mean recall@n of `ids` through each door, the largest difference of the means, questions that differ."""
    missing = [i for i in ids if i not in loogle or i not in corpus]
    if missing:
        raise RuntimeError(f"{kind}: {len(missing)} question(s) without recall through one door, e.g. {missing[0]}")
    mean = {door: {n: sum(rec[i][n] for i in ids) / len(ids) for n in NS}
            for door, rec in (("loogle", loogle), ("corpus", corpus))}
    diff = max(abs(mean["loogle"][n] - mean["corpus"][n]) for n in NS)
    differing = sum(1 for i in ids if any(abs(loogle[i][n] - corpus[i][n]) > 1e-9 for n in NS))
    return {"type": kind, "n": len(ids), "loogle": mean["loogle"], "corpus": mean["corpus"], "max_diff": diff,
            "differing": differing}


def printable(samples: list[Sample]) -> list[Sample]:
    """The samples whose context the default PDF font can show (an all-PDF folder has no other type to fall
    back on; in the mix, `write_samples` writes such a document as the next other type)."""
    glyphs = _glyphs(default_pdf_font())
    return [s for s in samples if all(ch.isspace() or ord(ch) in glyphs for ch in set(s.context))]


def by_type(written: WrittenCorpus) -> dict[str, list[str]]:
    """Question ids by the file type of their (single) document."""
    kinds = {d.path: d.kind for d in written.documents}
    out: dict[str, list[str]] = {}
    for q in written.questions:
        out.setdefault(kinds[q["documents"][0]], []).append(q["id"])
    return out


def print_table(rows: list[dict]) -> None:
    print("\n| file type | n | " + " | ".join(f"loogle R@{n}" for n in NS) + " | "
          + " | ".join(f"corpus R@{n}" for n in NS) + " | max abs diff | questions differing |")
    print("|---|---|" + "---|" * (2 * len(NS)) + "---|---|")
    for r in rows:
        cells = [f"{r['loogle'][n]:.3f}" for n in NS] + [f"{r['corpus'][n]:.3f}" for n in NS]
        print(f"| {r['type']} | {r['n']} | " + " | ".join(cells) + f" | {r['max_diff']:.3f} | {r['differing']} |")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--types", default="md,html,pdf,docx")
    parser.add_argument("--headings", action="store_true", help="write each title as the document's first line")
    parser.add_argument("--chunk-size", type=int, default=128)
    parser.add_argument("--documents", type=int, default=None, help="only the first N documents (a quick run)")
    parser.add_argument("--tokenizer", default=None, help="generator=none's tokenizer (default: SmolLM2's GGUF)")
    args = parser.parse_args()
    if not LOOGLE.is_dir():
        raise SystemExit(f"{LOOGLE}: no LooGLE sample here (../shared/data is not part of a fresh clone)")
    types = [t.strip() for t in args.types.split(",") if t.strip()]
    options = [f"path={LOOGLE}", f"tasks={TASKS}"]
    samples = load_samples("loogle", options)
    if args.documents is not None:
        first = list(dict.fromkeys(s.group for s in samples))[:args.documents]
        samples = [s for s in samples if s.group in first]
    work = Path(tempfile.mkdtemp(prefix="corpus_parity_"))
    cache = work / "cache"
    rows, figures = [], {}
    try:
        loogle = run_recall(["benchmark=loogle", *(f"benchmark.{o}" for o in options),
                             *retrieval(args.chunk_size, cache, args.tokenizer)], work / "run-loogle")
        layouts = [(t, [t]) for t in types] + [("mix", types)]
        for name, kinds in layouts:
            chosen = printable(samples) if kinds == ["pdf"] else samples
            if len(chosen) < len(samples):
                print(f"{name}: left out {len(samples) - len(chosen)} questions whose document has characters "
                      "the PDF font lacks")
            written = write_samples(chosen, work / name, kinds, headings=args.headings)
            check = read_back(written)
            print(f"{name}: {len(written.documents)} documents, {len(written.questions)} questions; "
                  + "; ".join(check.lines()[:2]))
            corpus = corpus_recall(written, args.chunk_size, cache, work / f"run-{name}", args.tokenizer)
            for kind, ids in by_type(written).items():
                ids = [i for i in ids if i in loogle]
                label = kind if name != "mix" else f"mix:{kind}"
                rows.append(compare(label, ids, loogle, corpus))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print_table(rows)
    for r in rows:
        for n in NS:
            figures[f"{r['type']}/recall@{n}/loogle"] = round(r["loogle"][n], 4)
            figures[f"{r['type']}/recall@{n}/corpus"] = round(r["corpus"][n], 4)
        figures[f"{r['type']}/max_diff"] = round(r["max_diff"], 4)
        figures[f"{r['type']}/differing"] = r["differing"]
    common.emit(figures)


if __name__ == "__main__":
    main()
