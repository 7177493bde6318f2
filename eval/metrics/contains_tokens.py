"""`contains_tokens`: every reference answer appears in the prediction as whole tokens, punctuation kept as
tokens and code exact: `benchmark=corpus`'s default for questions with reference answers.

`contains_all` (eval/metrics/contains.py) normalises as SQuAD does and so deletes punctuation: on a team's
technical documents that scores `the magic string "MIME-Magic\\0\\n"` against `mimemagic0n`, lets `&str` match
`str`, `Option<T>` match `Option<&T>` and `1.2` match `12`. Here punctuation splits tokens instead of vanishing:

- Tokens are runs of letters, digits and underscores, and every other non-space character on its own
  (`Option<&T>` is `Option < & T >`). Quotation marks and backticks only delimit and are dropped.
- A reference answer is read as **code** parts and **prose** parts. Code: a backticked or quoted segment, or a
  word, holding a code character (`< > { } [ ] \\ | & * = + # @ $ % ^ ~ _`), `::`, `->`, `=>` or a call `f(`;
  the sentence punctuation that ends such a word is left to the prose. Prose: the rest.
- A code part must appear in the prediction as the same tokens in a row, case included.
- A prose part must appear as the same tokens in a row once both sides are lower-cased, the articles a/an/the
  are dropped and sentence punctuation (`. , ; : ! ?`) is dropped where it does not sit between two letters or
  digits (`1.2`, `3:00` and `e.g` keep theirs). So "the magic string" is found in "The magic string is ...".
- A reference answer matches when all its parts do, in any order; the score is 1 when every reference answer
  matches (as `contains_all`), and `contains_share` the share that do. Chinese prose parts are matched as
  `contains_all` matches Chinese (punctuation and spaces removed, as a substring); code parts as above.

A benchmark's official metric is never this one: the benchmarks keep theirs (the parity tests hold them).
"""

from __future__ import annotations

import re

from eval.metrics import register
from eval.metrics.contains import all_answers_found
from eval.metrics.text import normalize_zh
from eval.sample import Reference

_TOKEN = re.compile(r"\w+|[^\w\s]")
_QUOTES = frozenset("\"'`“”‘’«»„")
_SENTENCE = frozenset(".,;:!?")
_ARTICLES = frozenset({"a", "an", "the"})
_CODE_CHARS = re.compile(r"[<>{}\[\]\\|&*=+#@$%^~_`]|::|->|=>|\w\(")
_SEGMENT = re.compile(r"`[^`]+`|\"[^\"]+\"|“[^”]+”")  # backticked or double-quoted


def _tokens(text: str) -> list[tuple[str, int, int]]:
    """(token, start, end) of `text`, quotation marks and backticks left out."""
    return [(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(text) if m.group() not in _QUOTES]


def code_tokens(text: str) -> list[str]:
    """The tokens of `text` as code compares them: every character kept, case too."""
    return [t for t, _, _ in _tokens(text)]


def prose_tokens(text: str) -> list[str]:
    """The tokens of `text` as prose compares them: lower case, no articles, no sentence punctuation except
    between two letters or digits."""
    out = []
    for tok, start, end in _tokens(text):
        if tok in _SENTENCE and not (0 < start and end < len(text) and text[start - 1].isalnum()
                                     and text[end].isalnum()):
            continue
        tok = tok.lower()
        if tok not in _ARTICLES:
            out.append(tok)
    return out


def answer_parts(answer: str) -> tuple[list[str], list[str]]:
    """(code parts, prose parts) of a reference answer, each as text."""
    code: list[str] = []
    prose: list[str] = []
    at = 0
    for m in _SEGMENT.finditer(answer):
        inner = m.group()[1:-1]
        if m.group().startswith("`") or _CODE_CHARS.search(inner):
            _words(answer[at:m.start()], code, prose)
            code.append(inner)
            at = m.end()
    _words(answer[at:], code, prose)
    return code, [p for p in prose if p.strip()]


def _words(text: str, code: list[str], prose: list[str]) -> None:
    """Split `text` into code words (those with a code character; their closing sentence punctuation goes to
    the prose) and runs of prose between them."""
    run: list[str] = []
    for word in text.split():
        core = word.rstrip(".,;:!?")
        if _CODE_CHARS.search(core):
            prose.append(" ".join(run))
            run = [word[len(core):]] if word[len(core):] else []
            code.append(core)
        else:
            run.append(word)
    prose.append(" ".join(run))


def _contains(haystack: list[str], needle: list[str]) -> bool:
    n = len(needle)
    return n > 0 and any(haystack[i:i + n] == needle for i in range(len(haystack) - n + 1))


def answer_found(prediction: str, answer: str, language: str = "en") -> bool:
    """Whether one reference answer is in the prediction: every code part as tokens in a row, case included,
    and every prose part as normalised tokens in a row (Chinese: as a normalised substring)."""
    code, prose = answer_parts(answer)
    pred_code = code_tokens(prediction)
    if not all(_contains(pred_code, code_tokens(c)) for c in code if code_tokens(c)):
        return False
    if language == "zh":
        said = normalize_zh(prediction)
        return all(normalize_zh(p) in said for p in prose if normalize_zh(p)) and bool(code or any(
            normalize_zh(p) for p in prose))
    pred_prose = prose_tokens(prediction)
    parts = [prose_tokens(p) for p in prose]
    parts = [p for p in parts if p]
    return bool(parts or any(code_tokens(c) for c in code)) and all(_contains(pred_prose, p) for p in parts)


@register("contains_tokens")
def contains_tokens(prediction: str, ref: Reference) -> dict[str, float]:
    return all_answers_found(prediction, ref, answer_found)


__all__ = ["answer_found", "answer_parts", "code_tokens", "contains_tokens", "prose_tokens"]
