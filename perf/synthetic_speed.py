"""How long the synthetic benchmark takes to build haystacks, up to 256k tokens.

    python perf/synthetic_speed.py [--tokens 4000,128000,256000]
"""

from __future__ import annotations

import argparse
import time

import common  # sets up the path

from eval.benchmarks.common import approx_tokens
from eval.benchmarks.synthetic import make_haystack


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", default="4000,128000,256000", help="haystack sizes, comma-separated")
    args = parser.parse_args()
    figures = {}
    for lang in ("en", "zh"):
        for tokens in (int(t) for t in args.tokens.split(",")):
            t0 = time.perf_counter()
            samples = make_haystack(seed=0, language=lang, tokens=tokens, n_questions=8)
            dt = time.perf_counter() - t0
            assert approx_tokens(samples[0].context) >= tokens
            figures[f"{lang}_{tokens // 1000}k_seconds"] = round(dt, 3)
    figures["seconds"] = round(sum(figures.values()), 3)
    common.emit(figures)


if __name__ == "__main__":
    main()
