"""Prefix reuse: 8 questions over one shared ~3k-token context with SmolLM2 on CPU.

Times answering them with the context's KV cache computed once and reused, against answering
each from scratch, and checks the greedy answers are identical.

    python perf/prefix_reuse.py [--questions 8] [--tokens 1600] [--model bundled:smollm2]
"""

from __future__ import annotations

import argparse
import time

import common

from eval.benchmarks.synthetic import make_haystack
from llm.factory import build_generator
from llm.prompt import Prompt
from longctx.arm import LongContextArm, LongContextConfig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=8, help="questions over the one context")
    parser.add_argument("--tokens", type=int, default=1600, help="the context's approximate tokens (words)")
    parser.add_argument("--model", default=common.SMOLLM2, help=common.MODEL_HELP)
    args = parser.parse_args()
    gen = build_generator(common.generator_config(args.model))
    samples = make_haystack(seed=0, language="en", tokens=args.tokens, n_questions=args.questions)
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
