"""LooGLE's automatic metrics, as its released code (bigai-nlco/LooGLE `Evaluation/automatic_metrics.py`,
`automatic_eval.py`, `Reorder/`) computes them.

* `loogle_auto` (shortdep_qa, longdep_qa, longdep_summarization): per sample
  - `bleu1`, `bleu4`: nltk `sentence_bleu` on whitespace tokens with weights (1,0,0,0) and
    (0,0,0,1), **unsmoothed** ("BLEU-4" is the 4-gram precision alone, times the brevity penalty);
  - `rouge1`, `rouge2`, `rougeL`: the `rouge` package's **recall** (see `eval.metrics.rouge`);
  - `meteor`: nltk `single_meteor_score` on the **sets** of whitespace tokens, with WordNet
    synonyms when WordNet is available (see `wordnet()`), exact and Porter-stem matches otherwise;
  - `score` (primary) = `rougeL`.
  An empty prediction is scored as the text "None", as the released `automatic_eval.py` does.
* `loogle_cloze` (shortdep_cloze): the prediction is a mapping mask -> entity (JSON or a Python
  literal, parsed with `json`/`ast.literal_eval`, **never `eval`** as the released code does);
  `exact_match` and `partial_match` are the shares of the sample's masks answered exactly / with at
  least one shared whitespace token; the paper's aggregate is micro (`aggregate_cloze`).
* `loogle_reorder` (timeline reorder): deviations from the paper's definitions, see
  `reorder_deviations`; the released scorer replaces each deviation by its maximum and is not used.
* BERTScore (`bertscore_recall`) needs a local model (`roberta-large` in the paper), configured by
  path; without one it is skipped with a message by the CLI.

Differences from the released code (both variants):

* METEOR on Python sets depends on the process's string-hash seed (the order of a set's items
  changes the chunk count), so the released value is not reproducible from run to run; here the
  sets are ordered by first occurrence, which makes the value deterministic. The parity fixtures
  run the released function with the same ordering.
* The released code crashes on a prediction that leaves no ROUGE "sentence" (e.g. "..."); here
  such a sample scores 0 on ROUGE with a warning.
"""

from __future__ import annotations

import ast
import json
import logging
import os
import re
import shutil
import warnings
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from eval.metrics import register
from eval.metrics.rouge import rouge_scores
from eval.registry import UnknownName
from eval.sample import Reference

log = logging.getLogger(__name__)

LOOGLE_TASK_METRIC = {
    "shortdep_qa": "loogle_auto",
    "longdep_qa": "loogle_auto",
    "longdep_summarization": "loogle_auto",
    "shortdep_cloze": "loogle_cloze",
    "longdep_qa_reorder": "loogle_reorder",
}

# ---------------------------------------------------------------------------------------------
# WordNet for METEOR

# WordNet 3.0's lexicographer file names (from the `lexnames(5WN)` manual): nltk's reader needs
# this file, which Debian's wordnet-base package does not ship.
_LEXNAMES = (
    "adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute noun.body "
    "noun.cognition noun.communication noun.event noun.feeling noun.food noun.group noun.location "
    "noun.motive noun.object noun.person noun.phenomenon noun.plant noun.possession noun.process "
    "noun.quantity noun.relation noun.shape noun.state noun.substance noun.time verb.body verb.change "
    "verb.cognition verb.communication verb.competition verb.consumption verb.contact verb.creation "
    "verb.emotion verb.motion verb.perception verb.possession verb.social verb.stative verb.weather adj.ppl"
).split()
_SYSTEM_WORDNET = Path("/usr/share/wordnet")


class NoWordNet:
    """Stands in for WordNet when none is installed: no synonyms (METEOR's exact and stem stages only)."""

    def synsets(self, *_args, **_kwargs) -> list:
        return []


@lru_cache(maxsize=1)
def wordnet():
    """WordNet 3.0 for METEOR: nltk's own data if installed, else Debian's `wordnet-base` files
    (the same database) through nltk's reader, else `NoWordNet` with a warning."""
    import nltk
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    try:
        from nltk.corpus import wordnet as wn

        wn.ensure_loaded()
        return wn
    except LookupError:
        pass
    source = Path(os.environ.get("WORDNET_DICT", _SYSTEM_WORDNET))
    if (source / "data.noun").is_file() and (source / "index.sense").is_file():
        root = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "rag-or-longctx" / "nltk_data"
        target = root / "corpora" / "wordnet"
        target.mkdir(parents=True, exist_ok=True)
        for name in ("adj.exc", "adv.exc", "noun.exc", "verb.exc", "data.adj", "data.adv", "data.noun", "data.verb",
                     "index.adj", "index.adv", "index.noun", "index.verb", "index.sense"):
            copy = target / name
            if not copy.exists():  # a copy: nltk refuses symlinks that leave its data root
                tmp = copy.with_suffix(copy.suffix + ".part")
                shutil.copyfile(source / name, tmp)
                tmp.replace(copy)
        lexnames = target / "lexnames"
        if not lexnames.exists():
            lexnames.write_text("".join(f"{i:02d}\t{n}\t{_lex_pos(n)}\n" for i, n in enumerate(_LEXNAMES)))
        if str(root) not in nltk.data.path:
            nltk.data.path.append(str(root))
        # Debian's files carry no multilingual data; nltk warns about it once: irrelevant here.
        warnings.filterwarnings("ignore", message="The multilingual functions are not available")
        return WordNetCorpusReader(str(target), None)
    log.warning(
        "WordNet not found (nltk data or %s; on Debian: apt-get install wordnet-base wordnet-sense-index): "
        "METEOR runs without synonym matching and can be lower than the released numbers",
        source,
    )
    return NoWordNet()


def _lex_pos(name: str) -> int:
    return {"adj": 3, "adv": 4, "noun": 1, "verb": 2}[name.split(".")[0]]


# ---------------------------------------------------------------------------------------------
# Similarity metrics


def _whitespace_tokens(text: str) -> list[str]:
    return text.replace("\n", " ").split()


def bleu(reference: str, hypothesis: str) -> tuple[float, float]:
    """(BLEU-1, "BLEU-4") as nltk's unsmoothed sentence_bleu with weights (1,0,0,0) and (0,0,0,1)."""
    from nltk.translate.bleu_score import sentence_bleu

    ref, hyp = _whitespace_tokens(reference), _whitespace_tokens(hypothesis)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nltk warns on zero n-gram counts; the value is what we want
        return (
            float(sentence_bleu([ref], hyp, weights=(1, 0, 0, 0))),
            float(sentence_bleu([ref], hyp, weights=(0, 0, 0, 1))),
        )


def meteor(reference: str, hypothesis: str, wn: Any = None) -> float:
    from nltk.translate.meteor_score import single_meteor_score

    ref = list(dict.fromkeys(_whitespace_tokens(reference)))
    hyp = list(dict.fromkeys(_whitespace_tokens(hypothesis)))
    return float(single_meteor_score(ref, hyp, wordnet=wn if wn is not None else wordnet()))


def rouge_recall(reference: str, hypothesis: str) -> tuple[float, float, float]:
    try:
        s = rouge_scores(hypothesis, reference)
    except ValueError as exc:
        log.warning("ROUGE failed (%s; the released code crashes here): scoring 0", exc)
        return 0.0, 0.0, 0.0
    return s["rouge-1"]["r"], s["rouge-2"]["r"], s["rouge-l"]["r"]


@register("loogle_auto")
def loogle_auto(prediction: str, ref: Reference) -> dict[str, float]:
    hypothesis = prediction if prediction != "" else "None"  # as the released automatic_eval.py
    reference = str(ref.answers[0]) if ref.answers else ""
    b1, b4 = bleu(reference, hypothesis)
    r1, r2, rl = rouge_recall(reference, hypothesis)
    return {
        "score": rl,
        "bleu1": b1,
        "bleu4": b4,
        "rouge1": r1,
        "rouge2": r2,
        "rougeL": rl,
        "meteor": meteor(reference, hypothesis),
    }


# ---------------------------------------------------------------------------------------------
# Cloze


def parse_mapping(text: Any) -> dict | None:
    """A mask -> entity mapping from a dict, JSON text or a Python literal; None if it is none."""
    if isinstance(text, dict):
        return text
    if not isinstance(text, str):
        return None
    for parse in (json.loads, ast.literal_eval):
        try:
            value = parse(text.strip())
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(value, dict):
            return value
    return None


@register("loogle_cloze")
def loogle_cloze(prediction: str, ref: Reference) -> dict[str, float]:
    gold = ref.extra.get("masks") if ref.extra else None
    if gold is None:
        gold = parse_mapping(ref.answers[0] if ref.answers else None)
    if not gold:
        raise ValueError("a LooGLE cloze reference needs a non-empty mask -> entity mapping")
    hyp = parse_mapping(prediction if prediction != "" else "None") or {}
    exact = sum(1 for k, v in gold.items() if k in hyp and hyp[k] == v)
    partial = 0
    for k, v in gold.items():
        if k in hyp:
            partial += int(bool(set(str(v).split()) & set(str(hyp[k]).split())))
    n = len(gold)
    return {"score": exact / n, "exact_match": exact / n, "partial_match": partial / n, "masks": float(n)}


def aggregate_cloze(rows: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """The paper's micro average over masks (100 x matched masks / all masks, 2 decimals)."""
    rows = [r for r in rows if "masks" in r]
    masks = sum(r["masks"] for r in rows)
    if not masks:
        return {}
    exact = sum(r["exact_match"] * r["masks"] for r in rows)
    partial = sum(r["partial_match"] * r["masks"] for r in rows)
    return {"exact_match_micro": round(100 * exact / masks, 2), "partial_match_micro": round(100 * partial / masks, 2)}


# ---------------------------------------------------------------------------------------------
# Timeline reorder

_ROMAN = re.compile(r"\b[IVXLCDM]+\b")


def reorder_positions(gold: list[str], predicted: list[str]) -> list[int]:
    """p[i] = predicted position of the i-th gold item. Predicted items are deduplicated (first
    occurrence wins), items not in the gold list are dropped, and gold items the prediction leaves
    out are appended in gold order (so a missing item costs its displacement)."""
    seen = [x for x in dict.fromkeys(predicted) if x in gold]
    seen += [x for x in gold if x not in seen]
    where = {x: i for i, x in enumerate(seen)}
    return [where[x] for x in gold]


def reorder_deviations(positions: list[int]) -> dict[str, Any]:
    """The paper's four deviations of a permutation from the identity, and their maxima over n:

    LSD  = mean (p_i - i)^2               (max (n^2 - 1) / 3, reached by the reversal)
    LMD  = mean |p_i - i|                 (max floor(n^2 / 2) / n)
    SD   = fewest swaps = n - #cycles     (max n - 1)
    SDD  = least total distance of swaps = sum |p_i - i| / 2  (max floor(n^2 / 4))
    """
    n = len(positions)
    if n == 0:
        raise ValueError("no items to order")
    lsd = sum((p - i) ** 2 for i, p in enumerate(positions)) / n
    lmd = sum(abs(p - i) for i, p in enumerate(positions)) / n
    seen = [False] * n
    cycles = 0
    for i in range(n):
        if not seen[i]:
            cycles += 1
            j = i
            while not seen[j]:
                seen[j] = True
                j = positions[j]
    sd = n - cycles
    sdd = sum(abs(p - i) for i, p in enumerate(positions)) / 2
    maxima = {"lsd": (n * n - 1) / 3, "lmd": (n * n // 2) / n, "sd": n - 1, "sdd": n * n // 4}
    return {"lsd": lsd, "lmd": lmd, "sd": float(sd), "sdd": sdd, "max": maxima}


@register("loogle_reorder")
def loogle_reorder(prediction: str, ref: Reference) -> dict[str, float]:
    """score = 1 - LMD / max LMD (1 for a perfect order); raw deviations as secondary values."""
    gold = [x.strip() for x in str(ref.answers[0]).split(",") if x.strip()]
    dev = reorder_deviations(reorder_positions(gold, _ROMAN.findall(prediction)))
    maxima = dev.pop("max")
    score = 1.0 if maxima["lmd"] == 0 else 1.0 - dev["lmd"] / maxima["lmd"]
    return {"score": score, **dev, "exact_order": float(dev["sd"] == 0)}


# ---------------------------------------------------------------------------------------------
# BERTScore (optional, needs a local model)


class BertScorer:
    """BERTScore as LooGLE calls it: `bert_score.score([reference], [hypothesis], lang="EN")[1]`,
    i.e. roberta-large layer 17, no idf, no baseline rescaling, and -- because LooGLE passes the
    reference as the candidate -- the "recall" is the mean over *prediction* tokens of their best
    cosine similarity to a reference token."""

    def __init__(self, model_path: str | os.PathLike, layer: int = 17, device: str = "cpu"):
        from transformers import AutoModel, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(str(model_path))
        self.model = AutoModel.from_pretrained(str(model_path)).to(device).eval()
        self.layer = min(layer, self.model.config.num_hidden_layers)
        self.device = device

    def _embed(self, text: str):
        import torch

        enc = self.tokenizer(text, return_tensors="pt", truncation=True,
                             max_length=self.tokenizer.model_max_length if self.tokenizer.model_max_length < 100000
                             else 512)
        with torch.no_grad():
            out = self.model(**{k: v.to(self.device) for k, v in enc.items()}, output_hidden_states=True)
        emb = out.hidden_states[self.layer][0, 1:-1]  # drop the special tokens at both ends
        return torch.nn.functional.normalize(emb, dim=-1)

    def recall(self, reference: str, hypothesis: str) -> float:
        cand, refs = self._embed(reference), self._embed(hypothesis)
        if cand.shape[0] == 0 or refs.shape[0] == 0:
            return 0.0
        sim = refs @ cand.T
        return float(sim.max(dim=1).values.mean())


# ---------------------------------------------------------------------------------------------


def loogle_metric(task: str, judge: bool = False) -> str:
    if task not in LOOGLE_TASK_METRIC:
        raise UnknownName(f"unknown LooGLE task {task!r}; known: {', '.join(LOOGLE_TASK_METRIC)}")
    if judge:
        if task not in ("shortdep_qa", "longdep_qa", "longdep_summarization"):
            raise UnknownName(f"the LooGLE judge scores QA and summaries, not {task!r}")
        return "loogle_judge"
    return LOOGLE_TASK_METRIC[task]


def loogle_reference(task: str, rec: Mapping[str, Any], variant: str = "official") -> Reference:
    """A Reference from a JSON line: `answers`/`answer`/`output` (a mapping for cloze), `question`/`Q`.

    Raises ValueError for a line without a usable reference (the CLI reports it as malformed).
    """
    if "answers" in rec and isinstance(rec["answers"], list) and rec["answers"]:
        answer = rec["answers"][0]
    elif "answer" in rec:
        answer = rec["answer"]
    elif "output" in rec:
        answer = rec["output"]
    else:
        raise ValueError("no reference: expected `answers` (list) or `answer`")
    extra: dict[str, Any] = {"variant": variant, "question": str(rec.get("question", rec.get("Q", "")))}
    if LOOGLE_TASK_METRIC.get(task) == "loogle_cloze":
        masks = parse_mapping(answer)
        if not masks:
            raise ValueError("a cloze answer must be a non-empty mask -> entity mapping")
        extra["masks"] = masks
        answer = json.dumps(masks, ensure_ascii=False)
    elif not isinstance(answer, str):
        raise ValueError(f"answer must be text, not {type(answer).__name__}")
    return Reference([answer], None, "en", task, extra)


def bertscore_available(path: str | None) -> str | None:
    """The configured BERTScore model path, or None (then the CLI reports BERTScore as skipped)."""
    path = path or os.environ.get("LOOGLE_BERTSCORE_MODEL")
    return path if path and Path(path).exists() else None


# ---------------------------------------------------------------------------------------------
# rescoring a prediction file (eval.benchmarks.loogle.LooGLEBenchmark.rescoring puts these together)

BERTSCORE_SKIPPED = "skipped: no BERTScore model configured (--bertscore-model or $LOOGLE_BERTSCORE_MODEL)"


def bertscore_model(path: str | None) -> str | None:
    """The BERTScore model folder to score with (`path`, else $LOOGLE_BERTSCORE_MODEL); None: none configured.
    A folder named but missing is refused (ValueError naming it)."""
    found = bertscore_available(path)
    if path and not found:
        raise ValueError(f"BERTScore model folder {path} not found")
    return found


def cloze_as_text(prediction: Any) -> Any:
    """Cloze answers given as a mapping (mask -> entity), as the JSON text the cloze metric parses."""
    return json.dumps(prediction, ensure_ascii=False) if isinstance(prediction, dict) else prediction


def bertscore_values(model_path: str) -> Callable[[str, Reference], dict[str, float]]:
    """A line's BERTScore beside its automatic metrics (an empty prediction is scored as "None", as LooGLE does)."""
    scorer = BertScorer(model_path)
    return lambda prediction, ref: {"bertscore": scorer.recall(str(ref.answers[0]), prediction or "None")}


def rescoring_summary(metric: str, bertscore: bool, scored: list[dict[str, Any]]) -> dict[str, Any]:
    """What a LooGLE summary adds to the means: why BERTScore is missing, or the cloze task's micro averages."""
    if metric == "loogle_auto" and not bertscore:
        return {"bertscore": BERTSCORE_SKIPPED}
    return aggregate_cloze(scored) if metric == "loogle_cloze" else {}
