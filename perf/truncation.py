"""Long-context truncation and prompt building for one 256k-token context (SmolLM2 tokenizer, 8k window).

    python perf/truncation.py [--tokens 155000] [--model bundled:smollm2]

`--tokens`: the haystack's approximate tokens (words; 155,000 is about 256k SmolLM2 tokens); more than the
8k window, or nothing is cut. `--model`: whose tokenizer (its weights are never loaded).
"""

from __future__ import annotations

import argparse
import time

import common

from eval.benchmarks.synthetic import make_haystack
from llm.factory import build_generator
from longctx.arm import LongContextArm, LongContextConfig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=155_000)
    parser.add_argument("--model", default=common.SMOLLM2, help=common.MODEL_HELP)
    args = parser.parse_args()
    gen = build_generator(common.generator_config(args.model))  # tokenizer only: the weights are never loaded here
    arm = LongContextArm(gen, LongContextConfig())
    sample = make_haystack(seed=0, language="en", tokens=args.tokens, n_questions=1)[0]
    n_tokens = gen.tokenizer.count(sample.context)
    arm.build(make_haystack(seed=1, language="en", tokens=500, n_questions=1)[0])  # warm up
    t0 = time.perf_counter()
    prompt = arm.build(sample)
    seconds = time.perf_counter() - t0
    assert prompt.meta["truncated"] and gen.prompt_tokens(prompt) + prompt.max_new_tokens <= 8192
    common.emit({"context_tokens": n_tokens, "kept_tokens": prompt.meta["context_tokens"],
                 "seconds": round(seconds, 3)})


if __name__ == "__main__":
    main()
