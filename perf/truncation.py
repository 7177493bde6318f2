"""Long-context truncation and prompt building for one 256k-token context (SmolLM2 tokenizer, 8k window).

    python perf/truncation.py
"""

from __future__ import annotations

import time

import common

from eval.benchmarks.synthetic import make_haystack
from llm.factory import build_generator
from longctx.arm import LongContextArm, LongContextConfig

SMOLLM2 = {"backend": "transformers", "model": "bundled:smollm2", "context_window": 8192}


def main() -> None:
    gen = build_generator(SMOLLM2)  # tokenizer only: the weights are never loaded here
    arm = LongContextArm(gen, LongContextConfig())
    sample = make_haystack(seed=0, language="en", tokens=155_000, n_questions=1)[0]
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
