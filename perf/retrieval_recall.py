"""Evidence recall@n of BM25, MiniLM and hybrid (RRF) on the synthetic benchmark at 32k and 128k tokens,
and on the LooGLE sample in ../shared/data/loogle (short- and long-dependency QA) when present.

    python perf/retrieval_recall.py [--chunk-size 128] [--languages en zh] [--levels 32k 128k] [--questions 12]
                                    [--no-loogle] [--model bundled:smollm2]

Retrieval only (no generation): 128-token chunks (SmolLM2 tokenizer) with 16 overlap. Prints one
table row per (dataset, retriever): mean recall@1/3/5/10 over the samples with gold evidence, the
share of known distractors (confusing facts) among the top 4, and the index build time. The last
line is one JSON object keyed `dataset/retriever/recall@n`.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import common

from eval.benchmarks import load_benchmark
from llm.factory import build_generator
from rag.build import build_rag_arm

MINILM = {"kind": "dense", "backend": "sentence_transformers", "model": "bundled:all-MiniLM-L6-v2", "index": "flat",
          "batch_size": 64, "normalize": True, "device": "cpu", "query_instruction": "", "passage_instruction": ""}
RETRIEVERS = {
    "bm25": {"name": "bm25", "kind": "bm25", "k1": 1.5, "b": 0.75},
    "minilm": {"name": "minilm", **MINILM},
    "hybrid": {"name": "hybrid", "kind": "hybrid", "rrf_k": 60, "depth": 100,
               "retrievers": [{"kind": "bm25", "k1": 1.5, "b": 0.75}, MINILM]},
}
NS = [1, 3, 5, 10]
LOOGLE = common.ROOT.parent / "shared" / "data" / "loogle"


def datasets(languages: list[str], use_loogle: bool, levels: list[str] = ("32k", "128k"),
             questions: int = 12) -> dict[str, list]:
    out = {}
    for lang in languages:
        for level in levels:
            cfg = {"name": "synthetic", "seed": 0, "languages": [lang], "levels": [level], "haystacks_per_level": 1,
                   "questions_per_haystack": questions, "two_hop_share": 0.25, "confusing_share": 0.5}
            out[f"synthetic_{lang}_{level}"] = load_benchmark(cfg).samples
    if use_loogle and LOOGLE.exists():
        try:
            import eval.benchmarks.loogle  # noqa: F401
        except ImportError:
            print("LooGLE loader (eval.benchmarks.loogle) missing: synthetic only")
        else:
            cfg = {"name": "loogle", "path": str(LOOGLE), "tasks": ["shortdep_qa", "longdep_qa"]}
            samples = load_benchmark(cfg).samples
            for task in ("shortdep_qa", "longdep_qa"):
                out[f"loogle_{task}"] = [s for s in samples if s.task == task]
    return out


def mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 3) if values else None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunk-size", type=int, default=128)
    parser.add_argument("--languages", nargs="+", default=["en", "zh"])
    parser.add_argument("--levels", nargs="+", default=["32k", "128k"], help="the synthetic benchmark's levels")
    parser.add_argument("--questions", type=int, default=12, help="questions per synthetic haystack")
    parser.add_argument("--no-loogle", action="store_true")
    parser.add_argument("--model", default=common.SMOLLM2, help=common.MODEL_HELP + " (its tokenizer only)")
    args = parser.parse_args()
    gen = build_generator(common.generator_config(args.model))
    rag = {"chunk_size": args.chunk_size, "chunk_overlap": 16, "top_k": 4, "order": "document", "recall_at": NS}
    cache = Path(tempfile.mkdtemp(prefix="retrieval_recall_"))
    figures: dict = {}
    rows = []
    try:
        for name, samples in datasets(args.languages, not args.no_loogle, args.levels, args.questions).items():
            for rname, rcfg in RETRIEVERS.items():
                arm = build_rag_arm(gen, rag, rcfg, {"kind": "tokens"}, {"kind": "none"}, cache)
                t0 = time.perf_counter()
                metas = [arm.retrieve(s) for s in samples]
                seconds = time.perf_counter() - t0
                with_ev = [m for m in metas if m["evidence_recall"] is not None]
                recall = {n: mean([m["evidence_recall"][str(n)] for m in with_ev]) for n in NS}
                distract = mean([m["distractors_retrieved"] for m in metas if m["distractors_retrieved"] is not None])
                rows.append((name, rname, len(with_ev), recall, distract, seconds))
                for n in NS:
                    figures[f"{name}/{rname}/recall@{n}"] = recall[n]
                figures[f"{name}/{rname}/distractors_top4"] = distract
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    print("\n| dataset | retriever | n | " + " | ".join(f"R@{n}" for n in NS) + " | distractors@4 | seconds |")
    print("|---|---|---|" + "---|" * len(NS) + "---|---|")
    for name, rname, n, recall, distract, seconds in rows:
        cells = " | ".join("-" if recall[k] is None else f"{recall[k]:.3f}" for k in NS)
        print(f"| {name} | {rname} | {n} | {cells} | "
              f"{'-' if distract is None else f'{distract:.3f}'} | {seconds:.1f} |")
    print()
    common.emit(figures)


if __name__ == "__main__":
    main()
