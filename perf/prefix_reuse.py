"""Prefix reuse: 8 questions over one shared ~3k-token context with SmolLM2 on CPU.

Times answering them with the context's KV cache computed once and reused, against answering
each from scratch, and checks the greedy answers are identical.

    python perf/prefix_reuse.py
"""

from __future__ import annotations

import time

import common

from eval.benchmarks.synthetic import make_haystack
from llm.factory import build_generator
from llm.prompt import Prompt
from longctx.arm import LongContextArm, LongContextConfig

SMOLLM2 = {"backend": "transformers", "model": "bundled:smollm2", "context_window": 8192}


def main() -> None:
    gen = build_generator(SMOLLM2)
    samples = make_haystack(seed=0, language="en", tokens=1600, n_questions=8)
    arm = LongContextArm(gen, LongContextConfig())
    prompts = [arm.build(s) for s in samples]
    solo = [Prompt(p.user, p.system, p.max_new_tokens, prefix_chars=0) for p in prompts]
    gen.generate(solo[:1])  # load weights, warm up

    t0 = time.perf_counter()
    without = gen.generate(solo)
    t_without = time.perf_counter() - t0
    t0 = time.perf_counter()
    with_reuse = gen.generate(prompts)
    t_with = time.perf_counter() - t0
    common.emit({
        "questions": len(prompts),
        "context_tokens": prompts[0].meta["context_tokens"],
        "prompt_tokens_mean": round(sum(g.prompt_tokens for g in without) / len(without), 1),
        "seconds_without_reuse": round(t_without, 2),
        "seconds_with_reuse": round(t_with, 2),
        "speedup": round(t_without / t_with, 2),
        "answers_identical": [g.text for g in without] == [g.text for g in with_reuse],
    })


if __name__ == "__main__":
    main()
