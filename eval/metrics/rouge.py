"""ROUGE-N and ROUGE-L exactly as the `rouge` PyPI package (pltrdy, 1.0.1) computes them.

LV-Eval (dureader), LooGLE and CLongEval all score with `Rouge().get_scores`, whose definitions
differ from the textbook ones; this module reproduces them (verified against the package in
tests/fixtures/metrics/):

* The text is cut into "sentences" on every ASCII full stop; empty pieces are dropped, the rest
  have their whitespace collapsed. A piece of only whitespace survives as an empty sentence, which
  contributes one empty-string word.
* Words are the sentences split on single spaces and flattened: n-grams run across sentences.
* N-grams and words are counted as **sets** (the package's default `exclusive=True`): repeated
  n-grams count once, on both sides.
* ROUGE-L is the summary-level variant: for every (reference sentence, hypothesis sentence) pair
  one LCS is reconstructed (ties broken as the package does), and the union of the *words* of
  those LCSs, as a set, is the overlap; recall divides by the number of distinct reference words,
  precision by the number of distinct hypothesis words.
* F = 2PR / (P + R + 1e-8).
* An empty hypothesis or reference (no sentence left) raises `ValueError`, as the package does;
  callers decide what that scores.

One difference: the package rebuilds the LCS recursively, so a sentence pair whose LCS path is
longer than Python's recursion limit (about 1,000 steps by default) raises `RecursionError`
(LV-Eval then scores 0, LooGLE crashes, CLongEval raises the limit to 10,000). This
implementation is iterative and always returns the true value.
"""

from __future__ import annotations


def sentences(text: str) -> list[str]:
    return [" ".join(piece.split()) for piece in text.split(".") if len(piece) > 0]


def words(sents: list[str]) -> list[str]:
    return [w for s in sents for w in s.split(" ")]


def _ngrams(tokens: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


def _prf(overlap: int, hyp_count: int, ref_count: int) -> dict[str, float]:
    p = overlap / hyp_count if hyp_count else 0.0
    r = overlap / ref_count if ref_count else 0.0
    return {"p": p, "r": r, "f": 2.0 * ((p * r) / (p + r + 1e-8))}


def _lcs_words(x: list[str], y: list[str]) -> set[str]:
    """Words of one longest common subsequence of x and y, reconstructed as the package does."""
    n, m = len(x), len(y)
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(1, n + 1):
        xi = x[i - 1]
        row, prev = table[i], table[i - 1]
        for j in range(1, m + 1):
            if xi == y[j - 1]:
                row[j] = prev[j - 1] + 1
            else:
                a, b = prev[j], row[j - 1]
                row[j] = a if a > b else b
    out: set[str] = set()
    i, j = n, m
    while i > 0 and j > 0:
        if x[i - 1] == y[j - 1]:
            out.add(x[i - 1])
            i -= 1
            j -= 1
        elif table[i - 1][j] > table[i][j - 1]:
            i -= 1
        else:
            j -= 1
    return out


def rouge_n(hyp_sents: list[str], ref_sents: list[str], n: int) -> dict[str, float]:
    if not hyp_sents:
        raise ValueError("Hypothesis is empty.")
    if not ref_sents:
        raise ValueError("Reference is empty.")
    hyp, ref = _ngrams(words(hyp_sents), n), _ngrams(words(ref_sents), n)
    return _prf(len(hyp & ref), len(hyp), len(ref))


def rouge_l(hyp_sents: list[str], ref_sents: list[str]) -> dict[str, float]:
    if not hyp_sents or not ref_sents:
        raise ValueError("Collections must contain at least 1 sentence.")
    ref_count = len(set(words(ref_sents)))
    hyp_count = len(set(words(hyp_sents)))
    hyp_words = [s.split(" ") for s in hyp_sents]
    union: set[str] = set()
    for ref_s in ref_sents:
        ref_words = ref_s.split(" ")
        for hw in hyp_words:
            union |= _lcs_words(ref_words, hw)
    return _prf(len(union), hyp_count, ref_count)


def rouge_scores(hypothesis: str, reference: str,
                 metrics: tuple[str, ...] = ("rouge-1", "rouge-2", "rouge-l")) -> dict[str, dict[str, float]]:
    """`Rouge(metrics).get_scores(hypothesis, reference)[0]`: {metric: {"p", "r", "f"}}."""
    hyp, ref = sentences(hypothesis), sentences(reference)
    out: dict[str, dict[str, float]] = {}
    for name in metrics:
        if name == "rouge-l":
            out[name] = rouge_l(hyp, ref)
        else:
            out[name] = rouge_n(hyp, ref, int(name.split("-")[1]))
    return out


def rouge_l_f(hypothesis: str, reference: str) -> float:
    """ROUGE-L F as `Rouge().get_scores(h, r)[0]["rouge-l"]["f"]` (raises ValueError when empty).

    The package computes ROUGE-1 and -2 first, which can only raise for the same empty inputs.
    """
    hyp, ref = sentences(hypothesis), sentences(reference)
    if not hyp:
        raise ValueError("Hypothesis is empty.")
    if not ref:
        raise ValueError("Reference is empty.")
    return rouge_l(hyp, ref)["f"]
