"""A GPU check anyone can run: both arms, with and without prefix reuse, and a raw prefill, on a random-weight
model of a named shape (its answers are noise on purpose: this times the path).

    python perf/gpu_check.py --shape 1.7b --levels 4k,16k,32k              # on a GPU (default device cuda)
    python perf/gpu_check.py --shape tiny --device cpu                     # under a minute on a laptop
    python perf/gpu_check.py --write-tokenizer build/tok                   # here, for a GPU machine with no network

It builds a random-weight Llama of the shape (`tiny`, `135m`, `1.7b` SmolLM2-1.7B's, `8b` Llama-3-8B's body;
testsupport/random_models.py) with SmolLM2's tokenizer (written from the bundled SmolLM2, or `--tokenizer DIR`
from a folder `--write-tokenizer` wrote: tokenizer.json with a plain fast-tokenizer config, which loads the same
under transformers 4 and 5), then on the synthetic benchmark's English haystacks at each level (`--haystacks`
x `--questions`, `--new-tokens` per answer) answers every question:

- long context with prefix reuse (the document read once per haystack, its questions decoded over it),
- long context without it (one prefill per question),
- RAG (BM25, 256-token chunks, top 4; needs the pure-Python package bm25s, else skipped and said so),

then times one plain forward (the raw prefill) at each level's long-context prompt length and a dense matrix
product (the card's practical peak). It needs only torch, transformers, the project and its pure-Python
dependencies (no Hydra, no model hub, no network). The last line is one JSON object:

- `levels.<level>.<arm>`: n answers, `charged_s_per_question` (the machine time one answer costs: with reuse
  its share of the shared prefill and of the batched decode), `user_s_p50` / `user_s_p90` (what one user waits),
  `prefill_s` (reuse: the shared prefill of a haystack), `first_user_s` / `others_user_s_p50` (a first answer
  much slower than the others carried a warm-up);
- `levels.<level>.reuse_speedup`: charged seconds per question without reuse over with reuse (above 1: reuse
  pays), `reuse_bound_s`: one raw prefill shared by the haystack's questions plus one decode each (a decode
  taken as no-reuse's per-question time less the raw prefill), and `reuse_within_bound`;
- `prefill`: tokens, seconds, tokens/s, TFLOP/s (2 x non-embedding parameters x tokens + 2 x layers x hidden x
  tokens^2) and `share_of_peak` against `matmul_tflops` (a dense product in the same dtype on the same device);
- `warmups`: the untimed warm-ups of each decoding path (outside every figure above), `reuse_not_slower`.

Every timed region waits for the device first (llm/timing.py). docs/cost-and-latency.md ("The GPU check") says
how to read it.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path
from statistics import mean, median

import common

from testsupport.random_models import SHAPES, random_llama, shape_of, write_tokenizer

DEFAULT_LEVELS = {"cuda": "4k,16k,32k", "cpu": "1k,2k"}


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python perf/gpu_check.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--shape", default="tiny", choices=sorted(SHAPES), help="the random model's shape")
    ap.add_argument("--device", default=None, help="cuda (default when torch sees a GPU), cuda:N or cpu")
    ap.add_argument("--dtype", default=None, help="bfloat16 on a GPU, float32 on a CPU (default)")
    ap.add_argument("--levels", default=None, help="synthetic levels, comma-separated (default: 4k,16k,32k on a GPU, "
                                                  "1k,2k on a CPU)")
    ap.add_argument("--haystacks", type=int, default=2, help="haystacks per level")
    ap.add_argument("--questions", type=int, default=4, help="questions per haystack (shared by prefix reuse)")
    ap.add_argument("--new-tokens", type=int, default=32, help="tokens per answer (the limit; noise seldom stops)")
    ap.add_argument("--context-window", type=int, default=65536)
    ap.add_argument("--threads", type=int, default=None, help="CPU threads for torch")
    ap.add_argument("--tokenizer", default=None, help="a folder --write-tokenizer wrote (default: from the bundled "
                                                      "SmolLM2)")
    ap.add_argument("--work", default=None, help="where the model is written (default: a temporary folder)")
    ap.add_argument("--no-rag", action="store_true", help="skip the RAG arm")
    ap.add_argument("--write-tokenizer", default=None, metavar="DIR",
                    help="only write SmolLM2's tokenizer to DIR (for a machine without the bundled model), then stop")
    return ap.parse_args(argv)


def _sync(device: str):
    from llm.timing import DeviceClock

    return DeviceClock(device)


def matmul_tflops(device: str, dtype) -> float:
    """A dense square product's rate (the card's practical peak in this dtype): 8192 on a GPU, 1024 on a CPU."""
    import torch

    n = 8192 if device.startswith("cuda") else 1024
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    clock = _sync(device)
    for _ in range(3):
        a @ b
    reps = 10 if device.startswith("cuda") else 3
    t0 = clock.now()
    for _ in range(reps):
        a @ b
    return 2 * n ** 3 * reps / clock.since(t0) / 1e12


def raw_prefill(model, device: str, tokens: int, clock) -> float:
    """Seconds of one plain forward over `tokens` random tokens (after a 512-token warm-up)."""
    import torch

    ids = torch.randint(10, 40000, (1, tokens), device=device)
    with torch.inference_mode():
        model(ids[:, :512], logits_to_keep=1)
        t0 = clock.now()
        model(ids, logits_to_keep=1)
        return clock.since(t0)


def run_arm(arm, gen, samples, reuse: bool) -> list[dict]:
    """Answer every group of `samples` (consecutive questions over one haystack) in order; one row per answer."""
    from experiments.arms.base import answer_with_prompts

    gen.reuse_prefix = reuse
    groups: list[list] = []
    for s in samples:
        if groups and groups[-1][0].group == s.group:
            groups[-1].append(s)
        else:
            groups.append([s])
    rows = []
    for group in groups:
        for ans in answer_with_prompts(arm, gen, group):
            if ans.text is None:
                continue
            u = ans.usage
            rows.append({"level": ans.sample.length_level, "prompt_tokens": u["prompt_tokens"],
                         "charged_s": u["generation_s"], "user_s": u["latency_s"], "prefill_s": u["prefill_s"],
                         "completion_tokens": u["completion_tokens"]})
    return rows


def quantile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    pos = q * (len(xs) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def stats(rows: list[dict]) -> dict:
    user = [r["user_s"] for r in rows]
    out = {"n": len(rows), "prompt_tokens": round(mean(r["prompt_tokens"] for r in rows)),
           "completion_tokens": round(mean(r["completion_tokens"] for r in rows), 1),
           "charged_s_per_question": round(mean(r["charged_s"] for r in rows), 4),
           "user_s_p50": round(quantile(user, 0.5), 4), "user_s_p90": round(quantile(user, 0.9), 4)}
    prefills = [r["prefill_s"] for r in rows if r["prefill_s"] is not None]
    if prefills:
        out["prefill_s"] = round(mean(prefills), 4)
    if len(user) > 1:
        out["first_user_s"], out["others_user_s_p50"] = round(user[0], 4), round(median(user[1:]), 4)
    return out


def main(argv: list[str] | None = None) -> None:
    args = arguments(argv)
    if args.write_tokenizer:
        print(f"tokenizer written to {write_tokenizer(args.write_tokenizer)}")
        return
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    import torch
    import transformers

    from eval.benchmarks import load_benchmark
    from llm.transformers_backend import TransformersGenerator
    from longctx.arm import LongContextArm, LongContextConfig

    start = time.perf_counter()
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    dtype = args.dtype or ("bfloat16" if device.startswith("cuda") else "float32")
    levels = (args.levels or DEFAULT_LEVELS["cuda" if device.startswith("cuda") else "cpu"]).split(",")
    work = Path(args.work or tempfile.mkdtemp(prefix="gpu_check_"))
    model_dir = random_llama(work / f"model_{args.shape}", args.shape, device=device, dtype=dtype,
                             tokenizer=args.tokenizer)
    gen = TransformersGenerator(str(model_dir), context_window=args.context_window, dtype=dtype, device=device,
                                threads=args.threads)
    model = gen.model
    n_params = sum(p.numel() for p in model.parameters())
    n_embed = model.get_input_embeddings().weight.numel()
    samples = load_benchmark({"name": "synthetic", "languages": ["en"], "levels": levels,
                              "haystacks_per_level": args.haystacks, "questions_per_haystack": args.questions,
                              "max_new_tokens": args.new_tokens}).samples
    lc = LongContextArm(gen, LongContextConfig())
    rows = {"longctx_reuse": run_arm(lc, gen, samples, True), "longctx_no_reuse": run_arm(lc, gen, samples, False)}
    rag_note = None
    if not args.no_rag:
        try:
            import bm25s  # noqa: F401
        except ImportError:
            rag_note = "skipped: the package bm25s is not installed (carry it: ../shared/gpu/prepare.sh site/)"
        else:
            from rag.build import build_rag_arm

            rag = build_rag_arm(gen, {"chunk_size": 256, "chunk_overlap": 16, "top_k": 4, "cache": False},
                                {"kind": "bm25"})
            rows["rag"] = run_arm(rag, gen, samples, True)
    clock = _sync(device)
    peak = matmul_tflops(device, getattr(torch, dtype))
    layers, hidden = shape_of(args.shape)[:2]
    out_levels, prefill = {}, []
    for level in levels:
        mine = {arm: [r for r in rs if r["level"] == level] for arm, rs in rows.items()}
        entry: dict = {arm: stats(rs) for arm, rs in mine.items() if rs}
        n = entry["longctx_reuse"]["prompt_tokens"]
        seconds = raw_prefill(model, device, n, clock)
        flops = 2 * (n_params - n_embed) * n + 2 * layers * hidden * n * n
        prefill.append({"level": level, "tokens": n, "seconds": round(seconds, 4), "tokens_per_s": round(n / seconds),
                        "tflops": round(flops / seconds / 1e12, 3),
                        "share_of_peak": round(flops / seconds / 1e12 / peak, 3)})
        reuse = entry["longctx_reuse"]["charged_s_per_question"]
        solo = entry["longctx_no_reuse"]["charged_s_per_question"]
        entry["reuse_speedup"] = round(solo / reuse, 2) if reuse > 0 else None
        # one prefill shared by the haystack's questions plus one decode each
        bound = seconds / args.questions + max(solo - seconds, 0.0)
        entry["reuse_bound_s"], entry["reuse_within_bound"] = round(bound, 4), reuse <= bound
        out_levels[level] = entry
    figures = {
        "shape": args.shape, "params": n_params, "device": device,
        "device_name": torch.cuda.get_device_name(device) if device.startswith("cuda") else "cpu",
        "dtype": dtype, "torch": torch.__version__, "transformers": transformers.__version__,
        "threads": torch.get_num_threads(), "haystacks": args.haystacks, "questions": args.questions,
        "new_tokens": args.new_tokens, "levels": out_levels, "prefill": prefill, "matmul_tflops": round(peak, 3),
        "warmups": [{"path": p, "seconds": round(s, 4)} for p, s in gen.warmups],
        "reuse_not_slower": all((e.get("reuse_speedup") or 0) >= 1.0 for e in out_levels.values()),
        "seconds": round(time.perf_counter() - start, 1),
    }
    if rag_note:
        figures["rag"] = rag_note
    common.emit(figures)


if __name__ == "__main__":
    sys.exit(main())
