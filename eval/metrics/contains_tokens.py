"""`contains_tokens`: every reference answer appears in the prediction as whole tokens, punctuation kept as
tokens, numbers whole and code exact: `benchmark=corpus`'s default for questions with reference answers.

`contains_all` (eval/metrics/contains.py) normalises as SQuAD does and so deletes punctuation: on a team's
technical documents that scores `the magic string "MIME-Magic\\0\\n"` against `mimemagic0n`, lets `&str` match
`str`, `Option<T>` match `Option<&T>` and `1.2` match `12`. Here punctuation splits tokens instead of vanishing:

- Tokens are runs of letters, digits and underscores, and every other non-space character on its own
  (`Option<&T>` is `Option < & T >`). Quotation marks and backticks only delimit and are dropped.
- **Numbers are whole.** A dotted or colon-separated number (`4.8.2`, `10.6`, `3:00`) and a number grouped in
  thousands (`1,000`) is ONE token: the answer `10` is not in `10.6` nor in `4.8.10` (a section number the model
  echoed), but is in "10 items" and in "10." at a sentence end; `1.2` is not `12`.
- A reference answer is read as **code** parts and **prose** parts. Code:
  - a quoted or backticked segment (`'a'`, `"utf-8"`, `` `len` ``): a **quoted literal**, compared exactly; a
    literal of at most three letters (`'a'`, `'rb'`), which reads as a prose word when bare, must be quoted or
    backticked in the prediction too (`Use mode 'a'.`, not "a file");
  - a word holding a code character (`< > { } [ ] \\ | & * = + # @ $ % ^ ~ _`), `::`, `->`, `=>` or a call `f(`;
  - a command-line option name (`-x`, `-X`, `--dry-run`): git's `clean -x` and `clean -X` differ;
  - an **identifier** without backticks: camelCase or CamelCase (`ValueError`, `NaN`), a dotted name whose parts
    have two characters or more (`os.path`, `__init__.py`; not `e.g`), and an answer that is one capitalised
    word (`Decimal`, `None`: the name of a class or constant, never "the decimal module");
  the sentence punctuation that ends such a word is left to the prose. Prose: the rest.
- A code part must appear in the prediction as the same tokens in a row, case included.
- A prose part must appear as the same tokens in a row once both sides are lower-cased, the articles a/an/the
  are dropped and sentence punctuation (`. , ; : ! ?`) is dropped where it does not sit between two letters or
  digits (`e.g` keeps its). So "the magic string" is found in "The magic string is ...".
- A reference answer matches when all its parts do, in any order; the score is 1 when every reference answer
  matches (as `contains_all`), and `contains_share` the share that do. An answer that lists alternatives
  (`["twice", "2"]`, eval/answers.py) matches when any of them does. Chinese prose parts are matched as
  `contains_all` matches Chinese (punctuation and spaces removed, as a substring); code parts as above.

What no rule on the reply can see is checked when the questions load (eval/benchmarks/corpus.py): an answer
that can never match, one the question itself holds (an echo of the question would score 1), and a bare
number that the numbering of its document also holds are named in a warning and on the report's first screen;
`benchmark.strict_answers=true` refuses them.

A benchmark's official metric is never this one: the benchmarks keep theirs (the parity tests hold them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from eval.metrics import register
from eval.metrics.contains import all_answers_found
from eval.metrics.text import normalize_zh
from eval.sample import Reference

# a dotted / colon-separated number or one grouped in thousands is one token; then words; then any other character
_TOKEN = re.compile(r"\d+(?:[.:]\d+)+|\d{1,3}(?:,\d{3})+(?!\d)|\w+|[^\w\s]")
_QUOTES = frozenset("\"'`“”‘’«»„")
_SENTENCE = frozenset(".,;:!?")
_ARTICLES = frozenset({"a", "an", "the"})
_CODE_CHARS = re.compile(r"[<>{}\[\]\\|&*=+#@$%^~_`]|::|->|=>|\w\(")
# backticked, double-quoted, or single-quoted where the quotes are not apostrophes inside a word
_SEGMENT = re.compile(r"`[^`]+`|\"[^\"]+\"|“[^”]+”|‘[^’]+’|(?<![\w'])'[^'\n]+'(?![\w'])")
_CAMEL = re.compile(r"[a-z][A-Z]")
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.\w+)+(?:\(\))?")
_CAPITALISED = re.compile(r"[A-Z][a-z]+")
_OPTION = re.compile(r"--?[A-Za-z][\w-]*")  # a command-line option name: -x, -X, --dry-run
SHORT_LITERAL = 3  # a quoted literal of at most this many letters must be quoted in the prediction too
_OPEN_QUOTES = "\"'`“‘«„"
_CLOSE_QUOTES = "\"'`”’»“"


@dataclass(frozen=True)
class CodePart:
    """A part of a reference answer compared exactly; `quoted`: it must be quoted in the prediction too."""

    text: str
    quoted: bool = False


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


def is_identifier(word: str, whole_answer: bool = False) -> bool:
    """A name compared case-sensitively without backticks: camelCase or CamelCase, a dotted name whose parts have
    two characters or more (`os.path`, not `e.g`), or (as the whole answer) one capitalised word (`Decimal`)."""
    if _CAMEL.search(word):
        return True
    if _DOTTED.fullmatch(word) and all(len(p) >= 2 for p in word.removesuffix("()").split(".")):
        return True
    return whole_answer and bool(_CAPITALISED.fullmatch(word))


def _literal(inner: str) -> CodePart:
    short = inner.isalpha() and len(inner) <= SHORT_LITERAL
    return CodePart(inner, quoted=short)


def answer_code_parts(answer: str) -> tuple[list[CodePart], list[str]]:
    """(code parts, prose parts) of a reference answer (the module doc says which is which)."""
    code: list[CodePart] = []
    prose: list[str] = []
    at = 0
    for m in _SEGMENT.finditer(answer):
        _words(answer[at:m.start()], code, prose)
        code.append(_literal(m.group()[1:-1]))
        at = m.end()
    _words(answer[at:], code, prose)
    single = len(answer.split()) == 1 and not code
    if single and is_identifier(answer.strip().rstrip(".,;:!?"), whole_answer=True):
        return [CodePart(answer.strip().rstrip(".,;:!?"))], []
    return code, [p for p in prose if p.strip()]


def answer_parts(answer: str) -> tuple[list[str], list[str]]:
    """(code parts, prose parts) of a reference answer, each as text."""
    code, prose = answer_code_parts(answer)
    return [c.text for c in code], prose


def _words(text: str, code: list[CodePart], prose: list[str]) -> None:
    """Split `text` into code words (those with a code character, and identifiers; their closing sentence
    punctuation goes to the prose) and runs of prose between them."""
    run: list[str] = []
    for word in text.split():
        core = word.rstrip(".,;:!?")
        if _CODE_CHARS.search(core) or is_identifier(core) or _OPTION.fullmatch(core):
            prose.append(" ".join(run))
            run = [word[len(core):]] if word[len(core):] else []
            code.append(CodePart(core))
        else:
            run.append(word)
    prose.append(" ".join(run))


def _contains(haystack: list[str], needle: list[str]) -> bool:
    n = len(needle)
    return n > 0 and any(haystack[i:i + n] == needle for i in range(len(haystack) - n + 1))


def _quoted_in(prediction: str, literal: str) -> bool:
    """Whether `literal` stands between quotation marks or backticks in the prediction."""
    pattern = f"[{re.escape(_OPEN_QUOTES)}]{re.escape(literal)}[{re.escape(_CLOSE_QUOTES)}]"
    return re.search(pattern, prediction) is not None


def _code_found(prediction: str, pred_code: list[str], part: CodePart) -> bool:
    if part.quoted:
        return _quoted_in(prediction, part.text)
    return _contains(pred_code, code_tokens(part.text))


def answer_found(prediction: str, answer: str, language: str = "en") -> bool:
    """Whether one reference answer is in the prediction: every code part as tokens in a row, case included
    (a short quoted literal quoted), and every prose part as normalised tokens in a row (Chinese: as a
    normalised substring)."""
    code, prose = answer_code_parts(answer)
    code = [c for c in code if code_tokens(c.text)]
    pred_code = code_tokens(prediction)
    if not all(_code_found(prediction, pred_code, c) for c in code):
        return False
    if language == "zh":
        said = normalize_zh(prediction)
        return all(normalize_zh(p) in said for p in prose if normalize_zh(p)) and bool(code or any(
            normalize_zh(p) for p in prose))
    pred_prose = prose_tokens(prediction)
    parts = [prose_tokens(p) for p in prose]
    parts = [p for p in parts if p]
    return bool(parts or code) and all(_contains(pred_prose, p) for p in parts)


@register("contains_tokens", alternatives=True)
def contains_tokens(prediction: str, ref: Reference) -> dict[str, float]:
    return all_answers_found(prediction, ref, answer_found)


__all__ = ["CodePart", "answer_code_parts", "answer_found", "answer_parts", "code_tokens", "contains_tokens",
           "is_identifier", "prose_tokens"]
