"""`python -m experiments.score`: rescore prediction files from any source with the benchmarks' official
metrics (eval/score.py says what it reads and prints); judge-scored tasks get their judge from llm/."""

import sys

from eval.score import main as score
from llm.judge_backend import judge_from_options


def main(argv: list[str] | None = None) -> int:
    return score(argv, make_judge=judge_from_options)


if __name__ == "__main__":
    sys.exit(main())
