"""How long the synthetic benchmark takes to build haystacks, up to 256k tokens.

    python perf/synthetic_speed.py
"""

from __future__ import annotations

import time

import common  # sets up the path

from eval.benchmarks.common import approx_tokens
from eval.benchmarks.synthetic import make_haystack


def main() -> None:
    figures = {}
    for lang in ("en", "zh"):
        for tokens in (4_000, 128_000, 256_000):
            t0 = time.perf_counter()
            samples = make_haystack(seed=0, language=lang, tokens=tokens, n_questions=8)
            dt = time.perf_counter() - t0
            assert approx_tokens(samples[0].context) >= tokens
            figures[f"{lang}_{tokens // 1000}k_seconds"] = round(dt, 3)
    figures["seconds"] = round(sum(figures.values()), 3)
    common.emit(figures)


if __name__ == "__main__":
    main()
