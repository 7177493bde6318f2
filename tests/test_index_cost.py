"""A retriever declares how its index is priced (`index_cost`), the run records it, and the report prices by it:
a config's name no longer decides (a BM25 config named `bm25_k1_2` was charged as dense)."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments.report.pricing import Pricing, index_cost_of
from experiments.report.runs import Run
from experiments.report.settings import load_settings
from llm.cost import INDEX_DENSE, INDEX_LEXICAL, IndexingPrice
from rag.retrievers import DenseRetriever, build_retriever

BM25_RENAMED = {"kind": "bm25", "name": "bm25_k1_2", "k1": 1.2, "b": 0.75}


def test_each_retriever_declares_its_index_cost():
    assert build_retriever(BM25_RENAMED).index_cost == INDEX_LEXICAL
    assert DenseRetriever.index_cost == INDEX_DENSE
    two_bm25 = build_retriever({"kind": "hybrid", "retrievers": [BM25_RENAMED, {"kind": "bm25"}]})
    assert two_bm25.index_cost == INDEX_LEXICAL  # a hybrid embeds only when a part of it does


def _rag_run(tmp_path: Path, metrics: dict, config: dict | None = None) -> Run:
    knobs = {"arm": "rag", "retriever": "bm25_k1_2", "chunk_size": 100, "top_k": 2, "benchmark": "b"}
    records = [{"id": f"s{i}", "group": f"d{i}", "n_chunks": 10, "status": "ok", "score": 1.0} for i in range(3)]
    return Run(tmp_path, {"knobs": knobs, **metrics}, records, config or {})


def test_the_report_prices_the_index_by_the_recorded_kind_not_the_name(tmp_path):
    settings = load_settings(price_in=1.0, price_out=1.0)
    lexical = _rag_run(tmp_path, {"index_cost": INDEX_LEXICAL})
    dense = _rag_run(tmp_path, {"index_cost": INDEX_DENSE})
    pricing = Pricing(settings, [lexical, dense])
    tokens = 10 * 100  # chunks x chunk size per document
    assert pricing.index_cost_per_doc(lexical) == tokens * settings.indexing.lexical_usd_per_million / 1e6
    assert pricing.index_cost_per_doc(dense) == pytest.approx(tokens * settings.indexing.embed_usd_per_million / 1e6)
    assert pricing.index_cost_per_doc(dense) > pricing.index_cost_per_doc(lexical)


def test_a_run_from_before_the_declaration_is_read_by_its_retriever_kind(tmp_path):
    assert index_cost_of(_rag_run(tmp_path, {}, {"retriever": {"kind": "bm25", "name": "bm25_k1_2"}})) == INDEX_LEXICAL
    assert index_cost_of(_rag_run(tmp_path, {}, {"retriever": {"kind": "dense", "name": "bm25"}})) is None


def test_an_unknown_kind_and_the_old_setting_are_refused(tmp_path):
    with pytest.raises(ValueError, match="index cost kind 'sparse'"):
        IndexingPrice().cost(100, "sparse")
    old = tmp_path / "report.yaml"
    old.write_text("indexing:\n  lexical_retrievers: [bm25]\n", encoding="utf-8")
    with pytest.raises(ValueError, match="indexing.lexical_retrievers.*index_cost"):
        load_settings(old)
