"""The pre-flight estimate (`run.dry_run=true`, issue 38 item 9): every prompt counted as the run builds it, priced
under the run's price with and without provider caching, nothing generated; a real run's prompt tokens equal it."""

from __future__ import annotations

import json

import pytest

from experiments.arms import ROLE_LONGCTX, ROLE_RAG, Answer
from experiments.dry_run import ANSWERED, BOUND, RESTATED, estimate
from llm.cost import build_cost_model, load_price


def _answers(doc: int, n: int, pt: int = 5000, ctx: int = 4800, out: int = 48) -> list[Answer]:
    return [Answer(sample=None, meta={"prompt_tokens": pt, "context_tokens": ctx, "max_new_tokens": out})
            for _ in range(n)]


def test_long_context_is_priced_with_and_without_the_providers_cache():
    gpt = build_cost_model(load_price("gpt-4o"))
    f = estimate([_answers(0, 3), _answers(1, 3)], ROLE_LONGCTX, gpt)
    assert (f["questions"], f["documents"], f["prompt_tokens"], f["output_tokens_at_most"]) == (6, 2, 30000, 288)
    plain = 6 * (5000 * 2.5 + 48 * 10.0) / 1e6
    read = (200 * 2.5 + 4800 * 1.25 + 48 * 10.0) / 1e6
    assert f["usd_without_provider_caching"] == pytest.approx(plain, abs=1e-6)
    assert f["usd_with_provider_caching"] == pytest.approx(2 * (plain / 6) + 4 * read, abs=1e-6)  # first writes
    rag = estimate([_answers(0, 3, pt=600, ctx=500)], ROLE_RAG, gpt)
    assert rag["usd_with_provider_caching"] == rag["usd_without_provider_caching"]
    claude = estimate([_answers(0, 3)], ROLE_LONGCTX, build_cost_model(load_price("claude-sonnet-4")))
    assert not claude["provider_caching_priced"]  # caching this client cannot obtain is not priced
    cpu = estimate([_answers(0, 3)], ROLE_LONGCTX, build_cost_model(load_price("cpu")))
    assert cpu["usd_without_provider_caching"] is None and cpu["prompt_tokens"] == 15000


def test_output_is_priced_at_the_expected_tokens_and_at_the_bound():
    gpt = build_cost_model(load_price("gpt-4o"))
    answers = _answers(0, 2, pt=600, ctx=500, out=48)
    answers[0].meta.update(expected_output_tokens=12, output_source=RESTATED)
    answers[1].meta.update(expected_output_tokens=20, output_source=ANSWERED)
    f = estimate([answers, _answers(1, 1, pt=600, ctx=500, out=48)], ROLE_RAG, gpt)
    assert (f["output_tokens_expected"], f["output_tokens_at_most"]) == (12 + 20 + 48, 3 * 48)
    assert f["output_expected_from"] == {RESTATED: 1, ANSWERED: 1, BOUND: 1}
    assert f["usd_without_provider_caching"] == pytest.approx((3 * 600 * 2.5 + 80 * 10.0) / 1e6, abs=1e-9)
    assert f["usd_at_most"] == pytest.approx((3 * 600 * 2.5 + 144 * 10.0) / 1e6, abs=1e-9)


def test_a_dry_run_generates_nothing_and_a_real_run_matches_its_prompt_tokens(tmp_path, tiny_llm, capsys):
    from experiments.run import run
    from tests.conftest import compose

    common = ["arm=rag", "retriever=bm25", "generator=smollm2", f"generator.model={tiny_llm}", "benchmark=synthetic",
              "benchmark.languages=[en]", "benchmark.levels=[400]", "benchmark.questions_per_haystack=2",
              f"run.cache_dir={tmp_path / 'cache'}", "run.progress=false", "price=gpt-4o"]
    (tmp_path / "dry").mkdir()
    (tmp_path / "real").mkdir()
    run(compose([*common, "run.dry_run=true"]), tmp_path / "dry")
    assert not (tmp_path / "dry" / "records.jsonl").exists()
    dry = json.loads((tmp_path / "dry" / "dry_run.json").read_text())
    assert "dry run: rag bm25" in capsys.readouterr().out
    run(compose(common), tmp_path / "real")
    records = [json.loads(x) for x in (tmp_path / "real" / "records.jsonl").read_text().splitlines()]
    assert dry["questions"] == len(records) and dry["prompt_tokens"] == sum(r["prompt_tokens"] for r in records)
    assert dry["output_tokens_at_most"] >= sum(r["completion_tokens"] for r in records)
    assert dry["usd_at_most"] >= sum(r["cost_usd"] for r in records)
    # before any answer: each expected as the question restated plus the reference, within max_new_tokens
    assert dry["output_expected_from"] == {RESTATED: len(records)}
    assert 0 < dry["output_tokens_expected"] <= dry["output_tokens_at_most"]
    # after the real run the response cache holds every answer: the estimate is what the run wrote, to the token
    (tmp_path / "dry2").mkdir()
    run(compose([*common, "run.dry_run=true"]), tmp_path / "dry2")
    again = json.loads((tmp_path / "dry2" / "dry_run.json").read_text())
    assert again["output_expected_from"] == {ANSWERED: len(records)}
    assert again["output_tokens_expected"] == sum(r["completion_tokens"] for r in records)
    assert again["usd_without_provider_caching"] == pytest.approx(sum(r["cost_usd"] for r in records), rel=1e-5)


def test_price_cpu_is_priced_at_the_rates_an_earlier_probe_kept(tmp_path, tiny_llm, monkeypatch):
    """A dry run measures nothing: before any real run `price=cpu` has no dollars; after one, the probe's kept rates
    price each answer as the real run's records were charged (long context: one prefill shared by a document's
    questions), to the cent's millionth."""
    from experiments.run import run
    from tests.conftest import compose

    monkeypatch.setenv("RAGLC_WORK_RATES_DIR", str(tmp_path / "rates"))
    common = ["arm=longctx", "generator=smollm2", f"generator.model={tiny_llm}", "benchmark=synthetic",
              "benchmark.languages=[en]", "benchmark.levels=[400]", "benchmark.questions_per_haystack=3",
              f"run.cache_dir={tmp_path / 'cache'}", "run.progress=false", "price=cpu"]
    for name in ("before", "real", "after"):
        (tmp_path / name).mkdir()
    run(compose([*common, "run.dry_run=true"]), tmp_path / "before")
    assert json.loads((tmp_path / "before" / "dry_run.json").read_text())["usd_without_provider_caching"] is None
    run(compose(common), tmp_path / "real")
    records = [json.loads(x) for x in (tmp_path / "real" / "records.jsonl").read_text().splitlines()]
    assert all(r["prefix_group_size"] for r in records)  # the shared prefill is what the dry run must charge alike
    run(compose([*common, "run.dry_run=true"]), tmp_path / "after")
    dry = json.loads((tmp_path / "after" / "dry_run.json").read_text())
    assert dry["cpu_rates"] and dry["output_expected_from"] == {ANSWERED: len(records)}
    assert dry["usd_without_provider_caching"] == pytest.approx(sum(r["cost_usd"] for r in records), rel=1e-5)


def test_a_point_that_builds_the_same_prompts_is_counted_once(tmp_path, tiny_llm, capsys, caplog):
    """`make decide`'s grid repeats long context for every RAG knob: the second point reports the first's estimate
    (its config hash leaves out the RAG section), a changed question set is counted again, and a real run in between
    makes the next dry run count afresh (the response cache it filled changes the expected output)."""
    from experiments.run import run
    from tests.conftest import compose

    common = ["arm=longctx", "generator=smollm2", f"generator.model={tiny_llm}", "benchmark=synthetic",
              "benchmark.languages=[en]", "benchmark.levels=[400]", "benchmark.questions_per_haystack=2",
              f"run.cache_dir={tmp_path / 'cache'}", "run.progress=false", "price=gpt-4o"]
    dirs = {name: tmp_path / name for name in ("k2", "k4", "q3", "real", "after")}
    for d in dirs.values():
        d.mkdir()
    run(compose([*common, "rag.top_k=2", "run.dry_run=true"]), dirs["k2"])
    capsys.readouterr()
    with caplog.at_level("INFO", logger="experiments.dry_run"):
        run(compose([*common, "rag.top_k=4", "run.dry_run=true"]), dirs["k4"])
    assert "builds the same prompts as an earlier point" in caplog.text
    first, second = (json.loads((dirs[k] / "dry_run.json").read_text()) for k in ("k2", "k4"))
    assert first == second and first["questions"] > 0
    assert "dry run: longctx" in capsys.readouterr().out  # reported again, not silently skipped
    caplog.clear()
    with caplog.at_level("INFO", logger="experiments.dry_run"):
        run(compose([*common, "benchmark.questions_per_haystack=3", "run.dry_run=true"]), dirs["q3"])
    assert "same prompts" not in caplog.text
    assert json.loads((dirs["q3"] / "dry_run.json").read_text())["questions"] > first["questions"]
    run(compose(common), dirs["real"])
    run(compose([*common, "run.dry_run=true"]), dirs["after"])
    assert json.loads((dirs["after"] / "dry_run.json").read_text())["output_expected_from"] == {
        ANSWERED: first["questions"]}
