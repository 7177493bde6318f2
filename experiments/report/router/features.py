"""Per-question features a router can know before it answers, from one long-context run and one RAG
run over the same samples (issue 26: route, don't only choose).

The two runs' records are paired by sample id; a question counts when both records are scored
(`experiments.records.is_scored`: answered, or skipped with score 0). Two kinds of features:

The features and how each is read are experiments.arms.router_model's (`feature_row`), so the live
`arm=router` computes them the same way: pre-route (document tokens, whether long context truncates,
question tokens, one indicator per question type `task=<type>`, one per wording cue `cue=<name>` when
the records carry `question`) and post-retrieval (top retrieval score, top-1/top-2 margin, spread of
the scores, only when the RAG records carry `retrieved` with scores; the question's overlap with the
retrieved chunks, when they carry `retrieved_overlap`).

Fallback for missing values: a feature missing for any one question is dropped for the whole set
(a model cannot route a question on a value it does not have, and imputing would let the missing
ones pile up on one side of the boundary); a feature equal on every question is dropped too (it
cannot separate anything, and it cannot be standardised). `RouterFeatures.used` names the features
kept and `RouterFeatures.dropped` says why each other one went. No feature left is allowed: the router
then falls back to its intercept (the better arm on its training documents).

Costs per question, for the router's cost weight: `cost_usd` when both records of every pair have
one, else `prompt_tokens` when they all have that (`cost_unit` says which; `router_features(...,
cost_unit="prompt_tokens")` asks for one), else None.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from experiments.arms.router_model import (
    CUE_FEATURES,
    POST_RETRIEVAL,
    PRE_ROUTE,
    feature_row,
    is_cue_feature,
    is_task_feature,
    number,
)
from experiments.records import is_scored

SAME_EVERYWHERE = "the same on every question"


@dataclass
class RouterFeatures:
    """The paired questions, in sample-id order, and what a router may read about each.

    `X`: questions x len(used), raw (unstandardised) values; `s_lc` / `s_rag`: scores 0..1;
    `cost_lc` / `cost_rag`: per-question cost in `cost_unit` ("usd" or "prompt_tokens"), None when
    neither is known for every pair; `groups`: each question's document (its record's `group`, else
    its own id)."""

    ids: list[str]
    groups: list[str]
    X: np.ndarray
    used: list[str]
    dropped: dict[str, str] = field(default_factory=dict)  # feature -> why it is not in X
    s_lc: np.ndarray = field(default_factory=lambda: np.zeros(0))
    s_rag: np.ndarray = field(default_factory=lambda: np.zeros(0))
    cost_lc: np.ndarray | None = None
    cost_rag: np.ndarray | None = None
    cost_unit: str | None = None
    kinds: dict[str, str] = field(default_factory=dict)  # question id -> its task (the oracle's finest cell)

    @property
    def n(self) -> int:
        return len(self.ids)


def _by_id(records: Mapping[str, dict[str, Any]] | Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    if isinstance(records, Mapping):
        return {str(k): v for k, v in records.items()}
    return {str(r["id"]): r for r in records}


COST_KEYS = {"usd": "cost_usd", "prompt_tokens": "prompt_tokens"}  # cost unit -> the record key that holds it


def _costs(
    lc_recs: list[dict[str, Any]], rag_recs: list[dict[str, Any]], unit: str | None = None
) -> tuple[np.ndarray | None, np.ndarray | None, str | None]:
    units = [unit] if unit else list(COST_KEYS)
    for key, unit in ((COST_KEYS[u], u) for u in units):
        lc = [number(r.get(key)) for r in lc_recs]
        rag = [number(r.get(key)) for r in rag_recs]
        if lc and all(v is not None for v in lc + rag):
            return np.array(lc, dtype=float), np.array(rag, dtype=float), unit
    return None, None, None


def router_features(
    longctx: Mapping[str, dict[str, Any]] | Iterable[dict[str, Any]],
    rag: Mapping[str, dict[str, Any]] | Iterable[dict[str, Any]],
    post_retrieval: bool = True,
    cost_unit: str | None = None,
) -> RouterFeatures:
    """The features of every question both runs scored (records by id, as `read_records` gives them,
    or a list). `post_retrieval=False` keeps only the pre-route features (a router that must decide
    before retrieving)."""
    lc_by, rag_by = _by_id(longctx), _by_id(rag)
    ids = sorted(i for i in set(lc_by) & set(rag_by) if is_scored(lc_by[i]) and is_scored(rag_by[i]))
    lc_recs, rag_recs = [lc_by[i] for i in ids], [rag_by[i] for i in ids]
    rows = [feature_row(lc, rg) for lc, rg in zip(lc_recs, rag_recs, strict=True)]
    tasks = sorted({k for row in rows for k in row if is_task_feature(k)})
    names = [*PRE_ROUTE, *tasks, *CUE_FEATURES, *POST_RETRIEVAL]
    columns = {name: [row.get(name, 0.0 if name in tasks else None) for row in rows] for name in names}
    used: list[str] = []
    dropped: dict[str, str] = {}
    for name in names:
        values = columns[name]
        if name in POST_RETRIEVAL and not post_retrieval:
            dropped[name] = "post-retrieval features not asked for"
        elif not values:
            dropped[name] = "no paired question"
        elif any(v is None for v in values):
            missing = sum(v is None for v in values)
            why = " (records without `question`)" if is_cue_feature(name) else ""
            dropped[name] = f"missing on {missing} of {len(values)} questions{why}"
        elif np.ptp(np.array(values, dtype=float)) == 0:
            dropped[name] = SAME_EVERYWHERE
        else:
            used.append(name)
    X = np.array([[columns[name][q] for name in used] for q in range(len(ids))], dtype=float).reshape(
        len(ids), len(used)
    )
    groups = [str(r.get("group") or r["id"]) for r in lc_recs]
    cost_lc, cost_rag, unit = _costs(lc_recs, rag_recs, cost_unit)
    return RouterFeatures(
        ids=ids,
        kinds={i: str(rg.get("task") or "") for i, rg in zip(ids, rag_recs, strict=True)},
        groups=groups,
        X=X,
        used=used,
        dropped=dropped,
        s_lc=np.array([float(r["score"]) for r in lc_recs]),
        s_rag=np.array([float(r["score"]) for r in rag_recs]),
        cost_lc=cost_lc,
        cost_rag=cost_rag,
        cost_unit=unit,
    )
