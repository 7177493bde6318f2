"""Threads that fit the work: the report and the plan run their small matrix products on one BLAS thread (threads
that spin on a busy machine cost the report a third of its CPU), lifted when they return (RAGLC_REPORT_BLAS_THREADS
sets another count); a short query is embedded on one torch thread, passages on as many as before."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import experiments.report.page.build as build
from experiments.report.blas_threads import ENV, report_blas_threads, report_threads
from rag.embedders import torch_threads


def _blas_threads() -> set[int]:
    return {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}


def test_one_blas_thread_inside_and_the_default_after(monkeypatch):
    np.ones((2, 2)) @ np.ones((2, 2))  # BLAS loaded
    with threadpool_limits(limits=2, user_api="blas"):  # a caller's own setting (tests run with one thread)
        assert _blas_threads() == {2}
        with report_threads():
            assert _blas_threads() == {1}
        assert _blas_threads() == {2}
        monkeypatch.setenv(ENV, "0")
        with report_threads():
            assert _blas_threads() == {2}
        monkeypatch.setenv(ENV, "3")
        with report_threads():
            assert _blas_threads() == {3}
    for bad in ("two", "-1"):
        monkeypatch.setenv(ENV, bad)
        with pytest.raises(ValueError, match=ENV):
            report_blas_threads()


def test_the_report_is_written_with_one_blas_thread(monkeypatch, tmp_path):
    seen = []
    monkeypatch.setattr(build, "_write_report", lambda *args: seen.append(_blas_threads()) or {})
    with threadpool_limits(limits=2, user_api="blas"):
        assert build.build_report([str(tmp_path)], tmp_path) == {} and seen == [{1}]


def test_a_query_is_embedded_on_one_torch_thread_and_passages_on_as_many_as_before(minilm, monkeypatch):
    import torch

    seen = []
    real = minilm.model.encode
    monkeypatch.setattr(minilm.model, "encode", lambda *a, **k: seen.append(torch.get_num_threads()) or real(*a, **k))
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        query = minilm.embed_queries(["What is the access code of ledger 7?"])
        passages = minilm.embed_passages(["The access code of ledger 7 is amber 4821."])
        assert seen == [1, 2] and torch.get_num_threads() == 2
        with torch_threads(2):  # the same vector whatever the threads
            assert np.allclose(query, real(["What is the access code of ledger 7?"], normalize_embeddings=True),
                               atol=1e-5)
        assert float((query @ passages.T)[0, 0]) > 0.5  # the question finds its passage
    finally:
        torch.set_num_threads(before)
