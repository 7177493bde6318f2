"""The spend cap (experiments/spend_cap.py): `run.max_usd` stops a point before its first answer when the dry run's
estimate already crosses it, and `run.max_usd_sweep` stops a sweep before the answers that would cross it; the
records are kept and a higher cap resumes. Against the fake OpenAI-compatible server (testsupport/fake_servers.py)
over a scripted model that answers at length, priced as gpt-4o."""

from __future__ import annotations

import json

import pytest

from experiments.spend_cap import SpendCapReached, caps_of
from tests.conftest import compose
from testsupport.fake_servers import FakeOpenAIServer
from testsupport.scripted import ScriptedModel

LONG_ANSWER = " ".join(["the answer goes on"] * 12) + "."  # about 50 tokens: more than a dry run expects


ASKED: list[int] = []  # one entry per answer the scripted model gave


@pytest.fixture(scope="module")
def chatty_server():
    with FakeOpenAIServer(ScriptedModel(lambda prompt: ASKED.append(1) or LONG_ANSWER), model_name="chatty") as srv:
        yield srv


def _cfg(server, tmp_path, *extra: str):
    return compose(["generator=smollm2_server", f"generator.base_url={server.url}", "generator.model=chatty",
                    "price=gpt-4o", "benchmark.languages=[en]", "benchmark.levels=[1k]",
                    "benchmark.haystacks_per_level=3", "benchmark.questions_per_haystack=2",
                    "+benchmark.max_new_tokens=64", f"run.cache_dir={tmp_path / 'cache'}", "run.progress=false",
                    *extra])


def _records(run_dir) -> list[dict]:
    path = run_dir / "records.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines() if x] if path.exists() else []


def test_a_cap_below_the_estimate_stops_before_the_first_answer(chatty_server, tmp_path):
    from experiments.run import run

    before = len(ASKED)
    with pytest.raises(SpendCapReached) as stop:
        run(_cfg(chatty_server, tmp_path, "run.max_usd=0.001"), tmp_path / "run")
    line = str(stop.value)
    assert line.startswith("stopped at run.max_usd=$0.001: longctx spent $0 on 0 of 6 answers")
    assert "dry run's estimate of the rest" in line and "with a higher run.max_usd to resume" in line
    assert "\n" not in line and not _records(tmp_path / "run") and len(ASKED) == before  # nothing was asked


def test_a_sweep_that_crosses_its_cap_stops_keeps_its_records_and_resumes_under_a_higher_cap(chatty_server,
                                                                                               tmp_path):
    """Two points of one sweep folder under run.max_usd_sweep: long context answers all its questions; the cap is
    set at what it spent plus 1.1 x the dry run's estimate of the RAG point, so the RAG point starts, but its answers
    cost more than expected (the model answers at length, its output priced at 4x its input), and it stops before
    the document that would cross the cap, its first answers recorded; the same sweep with a higher cap answers only
    what is left."""
    from experiments.run import run

    sweep = tmp_path / "sweep"
    lc, rag = ("0_longctx", ["arm=longctx"]), ("1_rag", ["arm=rag", "retriever=bm25", "rag.top_k=1"])
    run(_cfg(chatty_server, tmp_path, *rag[1], "run.dry_run=true"), tmp_path / "dry")
    estimate = json.loads((tmp_path / "dry" / "dry_run.json").read_text())["usd_without_provider_caching"]
    assert run(_cfg(chatty_server, tmp_path, *lc[1]), sweep / lc[0])["n_ok"] == 6
    spent_lc = sum(r["cost_usd"] for r in _records(sweep / lc[0]))
    cap = spent_lc + 1.1 * estimate
    with pytest.raises(SpendCapReached) as stop:
        run(_cfg(chatty_server, tmp_path, *rag[1], f"run.max_usd_sweep={cap:.8f}"), sweep / rag[0], sweep)
    line = str(stop.value)
    assert line.startswith("stopped at run.max_usd_sweep=$") and "spent by the sweep's other points" in line
    assert "the next document's answers, estimated" in line and "with a higher run.max_usd_sweep to resume" in line
    assert str(sweep / rag[0] / "records.jsonl") in line
    kept = _records(sweep / rag[0])
    assert 0 < len(kept) < 6 and all(r["status"] == "ok" for r in kept)
    assert spent_lc + sum(r["cost_usd"] for r in kept) <= cap  # stopped before the answers that would cross it
    resumed = run(_cfg(chatty_server, tmp_path, *rag[1], f"run.max_usd_sweep={10 * cap:.8f}"), sweep / rag[0], sweep)
    again = _records(sweep / rag[0])
    assert resumed["n_ok"] == 6 and len(again) == 6 and resumed["generation_calls"] == 6 - len(kept)
    assert {r["id"]: r["prediction"] for r in kept}.items() <= {r["id"]: r["prediction"] for r in again}.items()


def test_a_cap_must_be_a_positive_number_of_dollars(tmp_path):
    assert caps_of({"max_usd": None, "max_usd_sweep": None}, tmp_path, None) == []
    for bad in (0, -1, "ten", True):
        with pytest.raises(ValueError, match="run.max_usd must be a positive number of US dollars"):
            caps_of({"max_usd": bad}, tmp_path, None)
