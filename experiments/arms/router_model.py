"""The learned router's model, its features per question and its file: what the report trains
(experiments/report/router/fit.py) and what the live arm runs (experiments/arms/router.py, `arm=router`).

A question's features come from what its two paths put in front of the model, before either answers:
- pre-route (from the document and the question): `log_doc_tokens` (ln of the document's tokens, the
  long-context `context_tokens_full`, else its `prompt_tokens`, else for imported predictions without
  token counts the tokens its `length_level` names), `lc_truncated` (1 when long context
  must cut the document), `question_tokens` (the RAG prompt's tokens less its retrieved context: the
  question and the template around it);
  `task=<type>` (1 when the question is of that type: the benchmark's task label, which a
  deployment must know or classify before it routes); and the question's wording cues `cue=<name>`
  (1 when the question's text matches the cue's English or Chinese pattern in `CUES`: `count` "how
  many", `compare` "more than", `reason` "why", `entity` "who / when / which", `summary`
  "summarise"), read from the record's `question`;
- post-retrieval (once RAG has retrieved, before it generates): `top1_score`, `top_margin` (top-1
  minus top-2 score), `top_spread` (standard deviation of the retrieved chunks' scores), and
  `retrieved_overlap` (the share of the question's content words found in the chunks RAG put in its
  prompt, `eval.lexical_overlap`; the RAG arm records it).
`feature_row(longctx, rag)` reads them from two records, or from two prompts' metadata in the same
keys (the live arm), so training and deployment compute them one way.

The model is a ridge regression of the gain d = s_rag - s_lc (score 0..1) on standardised features;
the route is RAG when `gain(x) + cost_weight x (cost_lc - cost_rag) > 0`, costs in `cost_unit`.

The file (`router.json`): plain JSON, never a pickle, so a deployment can read and audit it:

    {"format": "rag-vs-lc-router", "version": 1, "features": [...], "mean": [...], "sd": [...],
     "weights": [...], "intercept": 0.03, "cost_weight": 0.0, "cost_unit": null, "trained_on": {...},
     "estimate": {...}}

`load_router(path)` checks every field and names the one that is wrong.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from eval.storage import atomic_write_text
from experiments.arms.base import ROLE_LONGCTX, ROLE_RAG

PRE_ROUTE = ("log_doc_tokens", "lc_truncated", "question_tokens")
POST_RETRIEVAL = ("top1_score", "top_margin", "top_spread", "retrieved_overlap")
TASK_PREFIX = "task="  # pre-route indicators of the question's type, one per task: "task=comparison"
CUE_PREFIX = "cue="  # pre-route indicators of the question's wording, one per cue in CUES: "cue=count"
# wording cues: (English pattern on the lower-cased question, Chinese pattern); a cue is 1 when either matches
CUES: dict[str, tuple[str, str]] = {
    "count": (r"\bhow (many|much)\b|\bnumber of\b|\bcount\b", r"多少|几个|几位|几次|几年|几种|数量"),
    "compare": (r"\bcompar|\bdiffer|\b(more|less|fewer|greater|larger|smaller|higher|lower|better|worse) than\b"
                r"|\bversus\b|\bvs\b", r"比较|相比|区别|不同|差异|更多|更少|更高|更低"),
    "reason": (r"\bwhy\b|\bhow (did|does|do|is|was|were|can|could|would)\b|\bexplain|\breasons?\b",
               r"为什么|为何|怎么|怎样|如何|原因"),
    "entity": (r"\b(who|whom|whose|when|where|which)\b", r"谁|何时|什么时候|哪里|哪儿|哪一|哪个|哪年|哪位"),
    "summary": (r"\bsummar|\boverall\b|\bmain (idea|point|theme|topic)s?\b|\bin general\b",
                r"总结|概括|概述|主要内容|大意"),
}
CUE_FEATURES = tuple(f"{CUE_PREFIX}{name}" for name in CUES)
FEATURES = PRE_ROUTE + CUE_FEATURES + POST_RETRIEVAL
COST_UNITS = ("usd", "prompt_tokens")
FORMAT, VERSION = "rag-vs-lc-router", 1
RAG, LONGCTX = ROLE_RAG, ROLE_LONGCTX  # a route is the role of the path it takes


# ---------------------------------------------------------------- features of one question
def number(value: Any) -> float | None:
    """A finite float, or None (booleans, text and NaN are not numbers here)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def level_tokens(level: Any) -> float | None:
    """The tokens a length level names ("16k" -> 16000, "1.5k" -> 1500, "2m" -> 2e6, "900" -> 900); None
    for a level that is not a length ("short", "sim")."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([km]?)\s*", str(level or "").lower())
    if not match:
        return None
    return float(match.group(1)) * {"": 1, "k": 1e3, "m": 1e6}[match.group(2)]


def _doc_tokens(lc: Mapping[str, Any]) -> float | None:
    tokens = number(lc.get("context_tokens_full"))
    if tokens is None:
        tokens = number(lc.get("prompt_tokens"))
    if tokens is None:  # imported predictions without token counts: the benchmark's length level
        tokens = level_tokens(lc.get("length_level"))
    return math.log(tokens) if tokens is not None and tokens > 0 else None


def _truncated(lc: Mapping[str, Any]) -> float | None:
    value = lc.get("truncated")
    return float(value) if isinstance(value, bool) else None


def _question_tokens(rag: Mapping[str, Any]) -> float | None:
    prompt, context = number(rag.get("prompt_tokens")), number(rag.get("context_tokens"))
    return prompt - context if prompt is not None and context is not None else None


def retrieval_scores(rag: Mapping[str, Any]) -> list[float] | None:
    """The retrieved chunks' scores, best rank first (highest first when ranks are missing); None when
    there are none or any chunk lacks a score."""
    chunks = rag.get("retrieved")
    if not isinstance(chunks, list) or not chunks or not all(isinstance(c, dict) for c in chunks):
        return None
    scores = [s for s in (number(c.get("score")) for c in chunks) if s is not None]
    if len(scores) < len(chunks):
        return None
    ranks = [r for r in (number(c.get("rank")) for c in chunks) if r is not None]
    if len(ranks) == len(chunks):
        return [s for _, s in sorted(zip(ranks, scores, strict=True), key=lambda rs: rs[0])]
    return sorted(scores, reverse=True)


def task_feature(task: Any) -> str:
    """The indicator feature of a question type: 1 for questions of `task`, 0 for the others."""
    return f"{TASK_PREFIX}{task}"


def is_task_feature(name: str) -> bool:
    return name.startswith(TASK_PREFIX) and len(name) > len(TASK_PREFIX)


def is_cue_feature(name: str) -> bool:
    return name in CUE_FEATURES


def wording_cues(question: Any) -> dict[str, float | None]:
    """Each `cue=<name>` of CUES: 1.0 when the question's text matches it, else 0.0; all None when there
    is no question text (records written before records carried `question`, imports without it)."""
    if not isinstance(question, str) or not question.strip():
        return {name: None for name in CUE_FEATURES}
    text = question.lower()
    return {f"{CUE_PREFIX}{cue}": float(bool(re.search(en, text) or re.search(zh, text)))
            for cue, (en, zh) in CUES.items()}


def feature_row(longctx: Mapping[str, Any], rag: Mapping[str, Any]) -> dict[str, float | None]:
    """Every feature of one question (None where its inputs are missing), from its long-context and RAG
    records (or prompt metadata with `prompt_tokens` and the sample's `task` and `question` added). The
    question's type (`task`, when either side names one) is one indicator `task=<type>` set to 1; the
    other types' are 0, which `Router.gain` assumes for any type the row does not name."""
    scores = retrieval_scores(rag)
    task = longctx.get("task") or rag.get("task")
    return {**({task_feature(task): 1.0} if task else {}),
        "log_doc_tokens": _doc_tokens(longctx),
        "lc_truncated": _truncated(longctx),
        "question_tokens": _question_tokens(rag),
        **wording_cues(longctx.get("question") or rag.get("question")),
        "top1_score": scores[0] if scores else None,
        "top_margin": scores[0] - scores[1] if scores and len(scores) > 1 else None,
        "top_spread": float(np.std(scores)) if scores else None,
        "retrieved_overlap": number(rag.get("retrieved_overlap")),
    }


# ---------------------------------------------------------------- the model
@dataclass
class RidgeModel:
    """gain(x) ≈ intercept + weights · (x - mean) / sd, in score units (0..1)."""
    names: list[str]
    mean: np.ndarray
    sd: np.ndarray
    weights: np.ndarray
    intercept: float

    def predict(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=float)
        if not self.names:
            return np.full(len(X), self.intercept)
        X = X.reshape(-1, len(self.names))
        return self.intercept + ((X - self.mean) / self.sd) @ self.weights


def fit_ridge(X: np.ndarray, d: np.ndarray, names: list[str], ridge: float = 1.0,
              weights: np.ndarray | None = None) -> RidgeModel:
    """Ridge regression of `d` on the standardised columns of `X` (intercept not penalised); `weights`:
    how often each question counts (a bootstrap's document draws), 1 when None."""
    d = np.asarray(d, dtype=float)
    X = np.asarray(X, dtype=float).reshape(len(d), len(names))
    w = np.ones(len(d)) if weights is None else np.asarray(weights, dtype=float)
    total = float(w.sum())
    if total <= 0:
        return RidgeModel(list(names), np.zeros(len(names)), np.ones(len(names)), np.zeros(len(names)), 0.0)
    intercept = float(w @ d / total)
    mean = w @ X / total
    sd = np.sqrt(w @ (X - mean) ** 2 / total)
    sd = np.where(sd > 0, sd, 1.0)
    Z = (X - mean) / sd
    k = len(names)
    Zw = Z * w[:, None]
    coef = np.linalg.solve(Zw.T @ Z + ridge * np.eye(k), Zw.T @ (d - intercept)) if k else np.zeros(0)
    return RidgeModel(list(names), mean, sd, coef, intercept)


# ---------------------------------------------------------------- the deployable router
@dataclass
class Router:
    """A trained router as a deployment runs it: the model, the cost trade, and what it was trained on."""
    model: RidgeModel
    cost_weight: float = 0.0
    cost_unit: str | None = None
    trained_on: dict[str, Any] = field(default_factory=dict)  # runs, questions, documents
    estimate: dict[str, Any] = field(default_factory=dict)  # the report's cross-fitted figures

    @property
    def features(self) -> list[str]:
        return self.model.names

    def gain(self, row: Mapping[str, float | None]) -> float:
        """Predicted score gain of RAG over long context (0..1) for one question's `feature_row`."""
        row = {**{n: 0.0 for n in self.features if is_task_feature(n)}, **row}
        values = [number(row.get(n)) for n in self.features]
        known = [v for v in values if v is not None]
        if len(known) < len(values):
            missing = [n for n, v in zip(self.features, values, strict=True) if v is None]
            raise ValueError(f"router needs feature(s) {', '.join(missing)}, missing for this question "
                             f"(known: {', '.join(k for k, v in row.items() if v is not None) or 'none'})")
        return float(self.model.predict(np.array([known]))[0])

    def choose(self, row: Mapping[str, float | None], cost_lc: float | None = None,
               cost_rag: float | None = None) -> tuple[str, float]:
        """("rag" | "longctx", utility of RAG over long context) for one question."""
        utility = self.gain(row)
        if self.cost_weight:
            if cost_lc is None or cost_rag is None:
                raise ValueError(f"router has cost_weight {self.cost_weight} per {self.cost_unit}: "
                                 "it needs both paths' costs")
            utility += self.cost_weight * (cost_lc - cost_rag)
        return (RAG if utility > 0 else LONGCTX), utility

    def to_json(self) -> dict[str, Any]:
        m = self.model
        return {"format": FORMAT, "version": VERSION, "features": list(m.names),
                "mean": [float(x) for x in m.mean], "sd": [float(x) for x in m.sd],
                "weights": [float(x) for x in m.weights], "intercept": float(m.intercept),
                "cost_weight": float(self.cost_weight), "cost_unit": self.cost_unit,
                "trained_on": self.trained_on, "estimate": self.estimate}


def save_router(router: Router, path: str | Path) -> Path:
    path = Path(path)
    atomic_write_text(path, json.dumps(router.to_json(), indent=2, sort_keys=True) + "\n")
    return path


def _floats(data: dict[str, Any], key: str, n: int, where: str) -> np.ndarray:
    values = data.get(key)
    if not isinstance(values, list) or len(values) != n or any(number(v) is None for v in values):
        raise ValueError(f"{where}: {key!r} must be a list of {n} finite numbers (one per feature), got {values!r}")
    return np.array(values, dtype=float)


def router_from_json(data: Any, where: str = "router") -> Router:
    """A Router from the parsed file; a ValueError naming `where` and the wrong field otherwise."""
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(data).__name__}")
    if data.get("format") != FORMAT:
        raise ValueError(f"{where}: 'format' is {data.get('format')!r}, not {FORMAT!r}: not a router file")
    if data.get("version") != VERSION:
        raise ValueError(f"{where}: 'version' {data.get('version')!r} is not supported (this code reads {VERSION})")
    names = data.get("features")
    if (not isinstance(names, list) or any(not isinstance(n, str) or (n not in FEATURES and not is_task_feature(n))
                                           for n in names) or len(set(names)) != len(names)):
        raise ValueError(f"{where}: 'features' must list distinct names from {', '.join(FEATURES)} or "
                         f"{TASK_PREFIX}<type>, got {names!r} (a newer router file than this code?)")
    n = len(names)
    mean, sd, weights = (_floats(data, k, n, where) for k in ("mean", "sd", "weights"))
    if (sd <= 0).any():
        raise ValueError(f"{where}: 'sd' must be positive, got {data['sd']!r}")
    intercept, cost_weight = number(data.get("intercept")), number(data.get("cost_weight", 0.0))
    if intercept is None:
        raise ValueError(f"{where}: 'intercept' must be a finite number, got {data.get('intercept')!r}")
    if cost_weight is None or cost_weight < 0:
        raise ValueError(f"{where}: 'cost_weight' must be a number >= 0, got {data.get('cost_weight')!r}")
    unit = data.get("cost_unit")
    if cost_weight and unit not in COST_UNITS:
        raise ValueError(f"{where}: 'cost_unit' must be one of {', '.join(COST_UNITS)} with a cost_weight, "
                         f"got {unit!r}")
    return Router(RidgeModel(list(names), mean, sd, weights, intercept), cost_weight, unit,
                  dict(data.get("trained_on") or {}), dict(data.get("estimate") or {}))


def load_router(path: str | Path) -> Router:
    """The router in `path` (written by `save_router`, e.g. the report's router.json)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"router file {path} does not exist (the report writes router.json beside "
                                "report.md when it can train one)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not JSON ({err})") from err
    return router_from_json(data, str(path))
