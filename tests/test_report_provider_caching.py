"""The report prices long context behind an API with prompt caching (a document's first question writes it, the
others read it) at the report's queries per document, with its break-even against RAG; the first screen names the
pricing; latency is shown as p50 / p90 per config and level with n (and re-timed figures where a run has them)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from experiments.report.page.build import build_report, main
from experiments.report.settings import Price, load_settings
from experiments.simulate.sweeps import write_run
from llm.cost import load_price

GPT4O = {"name": "gpt-4o", "kind": "per_token", "input_usd_per_million": 2.5, "output_usd_per_million": 10.0,
         "cached_input_usd_per_million": 1.25, "min_cached_prefix_tokens": 1024, "cache_ttl_s": 300}


def _rows(path: Path) -> dict[str, dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return {r["arm"]: r for r in csv.DictReader(f)}


def _base(i: int, level: str = "8k") -> dict:
    return {"id": f"s{i}", "benchmark": "b", "task": "t", "language": "en", "length_level": level,
            "group": f"d{i // 2}", "status": "ok", "score": 1.0, "completion_tokens": 100}


def _runs(tmp_path: Path, price: dict | None = None) -> Path:
    # long context: 8,000-token prompts, 7,900 of them the document; RAG: 1,000-token prompts, BM25 (free index)
    lc = [{**_base(i), "arm": "longctx", "prompt_tokens": 8000, "context_tokens": 7900, "latency_s": 2.0 + i,
           "generation_s": 2.0} for i in range(8)]
    rag = [{**_base(i), "arm": "rag", "prompt_tokens": 1000, "context_tokens": 900, "n_chunks": 60,
            "latency_s": 1.0, "generation_s": 0.9, "retrieval_s": 0.1,
            "latency_repeats_s": [0.5, 0.7, 0.6] if i < 4 else None} for i in range(8)]
    extra = {"price": price} if price else {}
    write_run(tmp_path / "runs" / "lc", {"arm": "longctx", "benchmark": "b", "generator": "g"}, lc,
              extra_metrics=extra)
    write_run(tmp_path / "runs" / "rag", {"arm": "rag", "benchmark": "b", "generator": "g", "retriever": "bm25",
                                          "chunk_size": 64, "top_k": 2, "order": "document"}, rag, extra_metrics=extra)
    return tmp_path / "runs"


@pytest.mark.parametrize("q", [3, 10])
def test_long_context_with_provider_caching_at_q_queries_per_document(tmp_path, q):
    runs = _runs(tmp_path)
    files = build_report([str(runs)], tmp_path / "out", load_settings(queries_per_doc=q, price="gpt-4o"))
    rows = _rows(files["whatif.csv"])
    lc, rag = rows["longctx"], rows["rag"]
    full = (8000 * 2.5 + 100 * 10) / 1e6
    read = (100 * 2.5 + 7900 * 1.25 + 100 * 10) / 1e6  # the document read from the cache at half price
    write = full  # OpenAI bills nothing extra for writing
    assert float(lc["cost_per_1000"]) == pytest.approx(1000 * full)
    assert float(lc["cost_per_1000_provider_cache"]) == pytest.approx(1000 * (write + (q - 1) * read) / q)
    rag_cost = (1000 * 2.5 + 100 * 10) / 1e6
    assert float(rag["cost_per_1000_provider_cache"]) == pytest.approx(1000 * rag_cost)  # RAG: no shared prefix
    # break-even against long context with provider caching: W + q r = q c, W = write - read (0 at OpenAI's)
    assert rag["break_even_provider_cache_note"] == "from the first query"
    md = files["report.md"].read_text()
    assert "priced by gpt-4o per-token price with provider prompt caching for long context" in md
    assert "cost per 1,000: provider caching" in md and "within its 300-second time-to-live" in md


def test_a_write_premium_makes_provider_caching_pay_only_from_a_number_of_questions(tmp_path):
    runs = _runs(tmp_path)
    # Anthropic's rates as a client that marks `cache_control` would pay them (this project's client does not:
    # the preset says cache_control_required, and the report then prices no provider caching, below)
    marked = {**load_price("claude-sonnet-4"), "cache_control_required": False}
    settings = load_settings(queries_per_doc=1)
    settings.price = Price(marked, from_command_line=True)
    files = build_report([str(runs)], tmp_path / "out", settings)
    lc = _rows(files["whatif.csv"])["longctx"]
    full = (8000 * 3 + 100 * 15) / 1e6
    written = (100 * 3 + 7900 * 3.75 + 100 * 15) / 1e6
    # one question per document: it writes the document at 125% and nobody reads it
    assert float(lc["cost_per_1000_provider_cache"]) == pytest.approx(1000 * written)
    assert float(lc["cost_per_1000_provider_cache"]) > float(lc["cost_per_1000"]) == pytest.approx(1000 * full)
    files = build_report([str(runs)], tmp_path / "out2", load_settings(queries_per_doc=10, price="claude-sonnet-4"))
    assert _rows(files["whatif.csv"])["longctx"]["cost_per_1000_provider_cache"] == ""
    assert "caches only prompt blocks marked `cache_control`" in files["report.md"].read_text()


def test_records_priced_with_a_cached_rate_get_the_what_if_without_a_command_line_price(tmp_path):
    runs = _runs(tmp_path, price=GPT4O)
    for run in ("lc", "rag"):  # the records' own cost_usd, as the runner wrote them
        path = runs / run / "records.jsonl"
        lines = path.read_text().splitlines()
        path.write_text("\n".join(line.replace('"status": "ok"', '"cost_usd": 0.001, "status": "ok"')
                                  for line in lines) + "\n")
    files = build_report([str(runs)], tmp_path / "out", load_settings(queries_per_doc=10))
    lc = _rows(files["whatif.csv"])["longctx"]
    # "no prefix cache" prices every record again by the run's price, undiscounted (issue 38: a cost_usd the provider
    # may have discounted is never discounted twice); the answer's own cost stays the record's
    assert float(lc["cost_per_1000"]) == pytest.approx(1000 * (8000 * 2.5 + 100 * 10) / 1e6)
    assert float(lc["answer_cost"]) == pytest.approx(0.001)
    assert float(lc["cost_per_1000_provider_cache"]) < 1000 * (8000 * 2.5 + 100 * 10) / 1e6
    assert "priced by gpt-4o per-token price with provider prompt caching" in files["report.md"].read_text()


def test_without_a_cached_rate_no_provider_column_is_priced(tmp_path):
    runs = _runs(tmp_path)
    files = build_report([str(runs)], tmp_path / "out", load_settings(queries_per_doc=10, price_in=2.5,
                                                                      price_out=10))
    lc = _rows(files["whatif.csv"])["longctx"]
    assert lc["cost_per_1000_provider_cache"] == "" and lc["cost_per_1000"] != ""
    assert "per-token price without prompt caching" in files["report.md"].read_text()


def test_latency_is_shown_as_p50_and_p90_with_n_per_config_and_level(tmp_path):
    runs = _runs(tmp_path)
    files = build_report([str(runs)], tmp_path / "out", load_settings(price="gpt-4o"))
    with open(files["latency.csv"], newline="", encoding="utf-8") as f:
        rows = {(r["arm"], r["level"]): r for r in csv.DictReader(f)}
    lc = rows[("longctx", "all")]  # latencies 2..9 s
    assert int(lc["n"]) == 8 and float(lc["p50"]) == pytest.approx(5.5) and float(lc["p90"]) == pytest.approx(8.3)
    assert float(lc["first_s"]) == 2.0 and float(lc["rest_p50"]) == 6.0 and lc["retimed_n"] == "0"
    rag = rows[("rag", "all")]
    assert int(rag["retimed_n"]) == 4 and float(rag["retimed_p50"]) == pytest.approx(0.6)
    md = files["report.md"].read_text()
    assert "### Latency per config and length level" in md and "re-timed p90" in md


def test_a_price_preset_and_token_prices_together_are_refused(tmp_path, capsys):
    assert main([str(_runs(tmp_path)), "--price", "gpt-4o", "--price-in", "1"]) == 2
    assert "--price" in capsys.readouterr().err
    assert main([str(tmp_path / "runs"), "--price", "no-such-price", "--out", str(tmp_path / "o")]) == 2
    assert "no-such-price" in capsys.readouterr().err
