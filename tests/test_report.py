"""The decision report on synthetic run directories with known numbers (no model runs).

The verdict is recomputed here from records.jsonl with plain Python, independently of the
report's modules (only the bootstrap itself is shared, fed with arrays built here)."""

from __future__ import annotations

import csv
import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.report.page.build import build_report, main, present
from experiments.report.page.document import to_html, to_markdown
from experiments.report.page.sections.whatif import break_even
from experiments.report.page.summary_file import SUMMARY_VERSION, load_summary
from experiments.report.settings import load_settings
from experiments.simulate.sweeps import make_sweep, write_run

SECTION_IDS = ("verdict", "whatif", "plots", "diagnostics", "reproducibility")
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    root = tmp_path_factory.mktemp("sweep")
    make_sweep(root, per_level=12)
    return root


@pytest.fixture(scope="module")
def report(sweep, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    files = build_report([str(sweep)], out, load_settings())
    return out, files


def _csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_report_renders_every_section_and_plot(report, sweep):
    out, files = report
    md = (out / "report.md").read_text()
    for title in ("## 1. Verdict", "### How the verdict was reached", "## 2. Deployment what-if", "## 3. Plots",
                  "## 4. Diagnostics", "## 5. Reproducibility", "### Other arms", "### Same token budget",
                  "### All configs", "### Agreement: long context vs best RAG", "### Why answers were lost",
                  "### Package versions"):
        assert title in md, title
    # the answer and its forest plot open the report; the method follows in section 1
    assert md.index("*The answer, per benchmark and length level*") < md.index("## 1. Verdict")
    pngs = ["verdict_forest.png", "score_vs_prompt_tokens.png", "score_by_length_level.png", "recall_at_n.png",
            "score_and_recall_vs_top_k.png", "score_by_evidence_depth.png", "score_vs_context_share.png",
            "agreement_matrix.png"]
    for name in pngs:
        assert (out / name).read_bytes()[:8] == PNG, name
        assert f"]({name})" in md, f"{name} not linked from report.md"
    html = (out / "report.html").read_text()
    for sid in SECTION_IDS:
        assert f'<section id="{sid}">' in html
    assert html.count("<img ") == len(pngs) and html.count('src="data:image/png;base64,') == len(pngs)
    # Same content: every recommendation sentence is in both files.
    for row in _csv(out / "verdict.csv"):
        assert row["recommendation"] and row["recommendation"] in md
        assert row["recommendation"].replace('"', "&quot;").replace("'", "&#x27;") in html
    assert "Data fingerprint" in md and "torch" in md and "Not drawn" not in md
    # budget-matched long context (budget 128) is paired with the RAG config of the same budget (k1 x c128)
    assert re.search(r"\| synthetic \| 128 \| rag (bm25|minilm) c128 k1 \|", md)
    # One summary row per config point: the retrieval-only run shows recall without a score.
    rows = _csv(out / "configs.csv")
    assert len(rows) == len(list(sweep.glob("*/metrics.json")))
    ret = [r for r in rows if r["config"].endswith("retrieval-only")]
    assert len(ret) == 1 and ret[0]["score"] == "" and float(ret[0]["recall@3"]) > 0.5 and ret[0]["retrieved"] == "36"


def _independent_verdict(sweep: Path, tolerance: float, queries_per_doc: float, resamples: int = 2000):
    """Verdict numbers from records.jsonl and metrics.json knobs, with the report's documented rules."""
    runs = []
    for m in sorted(sweep.glob("*/metrics.json")):
        knobs = json.loads(m.read_text())["knobs"]
        recs = [json.loads(line) for line in (m.parent / "records.jsonl").read_text().splitlines() if line]
        runs.append((knobs, recs))

    cache = {}

    def scores(recs, lvl):
        if (id(recs), lvl) not in cache:
            cache[id(recs), lvl] = {r["id"]: r["score"] for r in recs if r["status"] in ("ok", "skipped")
                                    and r.get("score") is not None and (lvl == "all" or r["length_level"] == lvl)}
        return cache[id(recs), lvl]

    def mean_ok(recs, lvl, key):
        vals = [r[key] for r in recs if r["status"] == "ok" and (lvl == "all" or r["length_level"] == lvl)]
        return sum(vals) / len(vals)

    def cost(knobs, recs, lvl):  # conf/report.yaml prices: $0.5 / $1.5 per M tokens; minilm embeds at $0.02 / M
        gen = mean_ok(recs, lvl, "prompt_tokens") * 0.5e-6 + mean_ok(recs, lvl, "completion_tokens") * 1.5e-6
        if knobs["arm"] == "rag" and knobs["retriever"] == "minilm":
            per_doc = {r["group"]: r["n_chunks"] * knobs["chunk_size"] for r in recs}
            gen += sum(per_doc.values()) / len(per_doc) * 0.02e-6 / queries_per_doc
        return gen

    lcs = [(k, r) for k, r in runs if k["arm"] == "longctx" and "budget_tokens" not in k]
    rags = [(k, r) for k, r in runs if k["arm"] == "rag" and any(x["status"] == "ok" for x in r)]
    # the report lists runs by mean prompt tokens, then label ("rag RETRIEVER cCHUNK kK"): full ties go to the first
    rags.sort(key=lambda kr: (mean_ok(kr[1], "all", "prompt_tokens"), kr[0]["retriever"], kr[0]["chunk_size"]))
    out = {}
    for lvl in ("1k", "2k", "4k", "all"):
        group = {r["id"]: r["group"] for _, recs in lcs + rags for r in recs
                 if lvl == "all" or r["length_level"] == lvl}
        # the documented split: documents ordered by sha256("seed:name"), first half A, second half B
        docs = sorted(set(group.values()), key=lambda g: hashlib.sha256(f"0:{g}".encode()).hexdigest())
        half = len(docs) // 2
        halves = (sorted(docs[:half]), sorted(docs[half:]))

        def choose(weight, lvl=lvl, group=group):  # weight: document -> how often it counts; the documented choice
            def score_of(kr):
                s = scores(kr[1], lvl)
                n = sum(weight.get(group[i], 0) for i in s)
                return 100 * sum(v * weight.get(group[i], 0) for i, v in s.items()) / n if n else None

            def best(krs):
                scored = [(score_of(kr), -mean_ok(kr[1], lvl, "prompt_tokens"), -n, kr) for n, kr in enumerate(krs)]
                return max((x for x in scored if x[0] is not None), key=lambda x: (round(x[0], 9), x[1], x[2]))

            lc_score, _, _, lc = best(lcs)
            # the documented RAG choice (issue 39): the cheapest config within the tolerance of the best RAG
            # config on these documents (per-token prices are exact: any cost gap counts), never long context's
            rag_scores = [(score_of(kr), kr) for kr in rags]
            top = max(x for x, _ in rag_scores if x is not None)
            near = [kr for x, kr in rag_scores if x is not None and x >= round(top, 9) - tolerance - 1e-9]
            rag = min(near, key=lambda kr: (cost(*kr, lvl), mean_ok(kr[1], lvl, "prompt_tokens")))
            # "within tolerance" still compares the chosen RAG config with the chosen long context
            return lc, rag, score_of(rag) >= lc_score - tolerance - 1e-9

        def pooled(lc, rag, on, lvl=lvl, group=group):  # per-sample (document, RAG score, long-context score) on `on`
            a, b = scores(rag[1], lvl), scores(lc[1], lvl)
            return [(group[i], a[i], b[i]) for i in sorted(set(a) & set(b)) if group[i] in on]

        lc, rag, within = choose({d: 1 for d in docs})  # the configs shown: the choice on all documents
        if half >= 4:  # cross-fitted: each half's choice scored on the other half
            picks = [choose({d: 1 for d in h}) for h in halves]
            samples = pooled(*picks[0][:2], set(halves[1])) + pooled(*picks[1][:2], set(halves[0]))
            ci = _crossfit_interval(samples, picks, halves, choose, pooled, lcs, rags, lvl, scores, group, resamples)
        else:  # too few documents: naive, on all samples; t with G - 1 df and the CR1 standard error
            samples = pooled(lc, rag, set(docs))
            ci = _cluster_t_interval([(x[0], 100 * (x[1] - x[2])) for x in samples])
        best_rag = max(rags, key=lambda kr: (round(100 * sum(scores(kr[1], lvl).values()) / len(scores(kr[1], lvl)), 9),
                                             -mean_ok(kr[1], lvl, "prompt_tokens")))
        oa, ob = scores(best_rag[1], lvl), scores(lc[1], lvl)
        oshared = sorted(set(oa) & set(ob))
        out[lvl] = {
            "longctx_score": 100 * sum(x[2] for x in samples) / len(samples),
            "rag_score": 100 * sum(x[1] for x in samples) / len(samples),
            "rag_within_tolerance": within, "n_groups": len({x[0] for x in samples}), "n_shared": len(samples),
            "diff_rag_minus_longctx": 100 * sum(x[1] - x[2] for x in samples) / len(samples),
            "ci95_low": ci[0], "ci95_high": ci[1],
            "prompt_token_ratio": mean_ok(rag[1], lvl, "prompt_tokens") / mean_ok(lc[1], lvl, "prompt_tokens"),
            "latency_ratio": mean_ok(rag[1], lvl, "latency_s") / mean_ok(lc[1], lvl, "latency_s"),
            "cost_ratio": cost(*rag, lvl) / cost(*lc, lvl),
            "oracle_router_score": 100 * sum(max(oa[i], ob[i]) for i in oshared) / len(oshared),
            "rag_top_k": str(rag[0]["top_k"]), "rag_retriever": rag[0]["retriever"],
            "split": half >= 4,
        }
    return out


def _cluster_t_interval(pairs):
    """mean ± t(0.975, G - 1) x CR1 standard error of (document, value) pairs, by hand."""
    from scipy.stats import t

    n, docs = len(pairs), sorted({g for g, _ in pairs})
    mean = sum(v for _, v in pairs) / n
    sums = {g: sum(v - mean for h, v in pairs if h == g) for g in docs}
    se = (len(docs) / (len(docs) - 1) * sum(x * x for x in sums.values()) / n ** 2) ** 0.5
    half = t.ppf(0.975, len(docs) - 1) * se
    return mean - half, mean + half


def _crossfit_interval(samples, picks, halves, choose, pooled, lcs, rags, lvl, scores, group, resamples):
    """The documented interval of one split, resample by resample: documents drawn with replacement within
    each half (numpy's seeded generator, seed 0: one block of draws for half A, then one for half B,
    documents in name order), both choices repeated on the drawn documents, and each chosen pair's
    deviation from its own mean on its scoring half, scaled by sqrt(h / (h - 1)) for a half of h documents,
    added to the pooled mean; the standard deviation of those resamples is the standard error of a t
    interval with G - 2 degrees of freedom."""
    import numpy as np
    from scipy.stats import t

    rng = np.random.default_rng(0)
    draws = [rng.integers(0, len(h), size=(resamples, len(h))) for h in halves]
    point = sum(x[1] - x[2] for x in samples) / len(samples)
    n_on = [len(pooled(*picks[1][:2], set(halves[0]))), len(pooled(*picks[0][:2], set(halves[1])))]  # A, B
    factor = [(len(h) / (len(h) - 1)) ** 0.5 for h in halves]

    def mean_on(lc, rag, weight):
        xs = [(x[1] - x[2], weight.get(x[0], 0)) for x in pooled(lc, rag, set(weight))]
        return sum(d * w for d, w in xs) / sum(w for _, w in xs), sum(d for d, _ in xs) / len(xs)

    values = []
    for r in range(resamples):
        weights = []
        for h, d in zip(halves, draws, strict=True):
            w = {}
            for j in d[r]:
                w[h[j]] = w.get(h[j], 0) + 1
            weights.append(w)
        lc_a, rag_a, _ = choose(weights[0])
        lc_b, rag_b, _ = choose(weights[1])
        drawn_b, own_b = mean_on(lc_a, rag_a, {**{g: 0 for g in halves[1]}, **weights[1]})
        drawn_a, own_a = mean_on(lc_b, rag_b, {**{g: 0 for g in halves[0]}, **weights[0]})
        values.append(100 * (n_on[1] * factor[1] * (drawn_b - own_b) + n_on[0] * factor[0] * (drawn_a - own_a))
                      / sum(n_on))
    se = float(np.std(values, ddof=1))
    half = t.ppf(0.975, len({x[0] for x in samples}) - 2) * se
    return 100 * point - half, 100 * point + half


def test_the_section_list_alone_orders_and_numbers_the_page(report, monkeypatch):
    """Moving a module in SECTIONS moves its section and renumbers every heading, the contents and the
    "section N" references: present walks that one list."""
    from experiments.report.page import build
    from experiments.report.page.sections import SECTIONS, plots

    out, files = report
    rest = [section for section in SECTIONS if section is not plots]
    monkeypatch.setattr(build, "SECTIONS", (rest[0], plots, *rest[1:]))  # the plots right after the first screen
    md = to_markdown(build.present(load_summary(files["summary.json"])))
    assert md.index("## 1. Plots") < md.index("## 2. Verdict") < md.index("## 3. Deployment what-if")
    assert "- 1. Plots\n- 2. Verdict" in md and "the full table: section 2." in md
    assert "the full table: section 1." in (out / "report.md").read_text()


def test_the_page_renders_from_summary_json_alone(report, tmp_path):
    """summary.json holds everything the page shows: read back into another process's hands (no runs, no
    settings file), it renders the same report.md and report.html."""
    out, files = report
    summary = load_summary(files["summary.json"])
    assert summary["version"] == SUMMARY_VERSION and "runs" not in summary and "pricing" not in summary
    assert summary.vrows[0].decision.kind in ("rag", "longctx", "inconclusive", "no_decision", "route")
    doc = present(summary)
    assert to_markdown(doc) == (out / "report.md").read_text()
    assert to_html(doc) == (out / "report.html").read_text()
    bad = tmp_path / "not_a_summary.json"
    bad.write_text('{"version": 0}')
    with pytest.raises(ValueError, match="not_a_summary.json: not a report summary of version"):
        load_summary(bad)


# one tolerance in the fast tier, the other two (a full report build each, ~25 s) in the integration tier
@pytest.mark.parametrize("tolerance", [pytest.param(2.0, marks=pytest.mark.integration), 0.0,
                                       pytest.param(30.0, marks=pytest.mark.integration)])
def test_verdict_numbers_match_an_independent_computation(sweep, tmp_path, tolerance):
    # one split: the independent computation repeats one partition's cross-fit (the median over several is
    # tested in test_verdict_simulation.py)
    build_report([str(sweep)], tmp_path, load_settings(tolerance=tolerance, splits=1))
    got = {r["level"]: r for r in _csv(tmp_path / "verdict.csv")}
    want = _independent_verdict(sweep, tolerance, 10)
    assert set(got) == set(want)
    for lvl, w in want.items():
        g = got[lvl]
        assert (g["rag_config"].startswith(f"rag {w['rag_retriever']} ")
                and f" k{w['rag_top_k']}" in g["rag_config"]), (lvl, g["rag_config"])
        assert (g["rag_within_tolerance"] == "True") == w["rag_within_tolerance"]
        assert int(g["n_shared"]) == w["n_shared"] and int(g["n_groups"]) == w["n_groups"]
        assert g["selection"].startswith("cross-fitted by document" if w["split"] else "naive"), (lvl, g["selection"])
        assert g["decision"] in ("rag", "longctx", "inconclusive", "no_decision")
        if not w["split"]:  # configs chosen on the samples reported on: never more than inconclusive
            assert g["decision"] in ("inconclusive", "no_decision"), (lvl, g["decision"])
        for key in ("longctx_score", "rag_score", "diff_rag_minus_longctx", "ci95_low", "ci95_high",
                    "oracle_router_score"):
            assert float(g[key]) == pytest.approx(w[key], abs=0.006), (lvl, key)
        for key in ("prompt_token_ratio", "latency_ratio", "cost_ratio"):
            assert float(g[key]) == pytest.approx(w[key], rel=1e-3, abs=6e-5), (lvl, key)
        assert float(g["oracle_router_score"]) >= max(float(g["longctx_score"]), float(g["best_rag_score"])) - 1e-9


def test_what_if_follows_the_command_line_prices_and_queries(sweep, tmp_path, capsys):
    rc = main([str(sweep), "--out", str(tmp_path), "--queries-per-doc", "4", "--price-in", "10", "--price-out", "0",
               "--latency-target", "1.0"])
    assert rc == 0, capsys.readouterr().err
    rows = {r["label"]: r for r in _csv(tmp_path / "whatif.csv")}
    lc_recs = [json.loads(x) for p in sweep.glob("*_arm=longctx,benchmark=synthetic")
               for x in (p / "records.jsonl").read_text().split("\n") if x]
    tokens = sum(r["prompt_tokens"] for r in lc_recs) / len(lc_recs)
    lc = rows["longctx"]
    assert float(lc["answer_cost"]) == pytest.approx(tokens * 10e-6)
    assert float(lc["cost_per_1000"]) == pytest.approx(1000 * tokens * 10e-6)
    assert lc["meets_target"] == "False"  # mean latency 0.5 + tokens/800 s is over 1 s
    md = (tmp_path / "report.md").read_text()
    assert "At **4 queries per document**" in md and "$10 per million prompt tokens" in md
    # a dense retriever pays for indexing: break-even = I / (c_lc - c_rag)
    dense = [r for r in rows.values() if r["arm"] == "rag" and " minilm " in r["label"] + " "]
    for r in dense:
        i, c = float(r["index_cost_per_doc"]), float(r["answer_cost"])
        assert i > 0
        assert float(r["cost_per_1000"]) == pytest.approx(1000 * (c + i / 4))
        assert float(r["break_even"]) == pytest.approx(i / (float(lc["answer_cost"]) - c))


def test_break_even_edge_cases():
    assert break_even(0.0, 1.0, 2.0) == (0.0, "from the first query (no indexing cost)")
    assert break_even(5.0, 1.0, 2.0)[0] == pytest.approx(5.0)
    assert break_even(5.0, 2.0, 2.0) == (None, "never (no cheaper per answer)")
    assert break_even(5.0, None, 2.0)[0] is None


def test_gpu_hour_price_prices_by_latency(sweep, tmp_path):
    build_report([str(sweep)], tmp_path, load_settings(gpu_hour_price=3.6))
    rows = {r["label"]: r for r in _csv(tmp_path / "whatif.csv")}
    lc_recs = [json.loads(x) for p in sweep.glob("*_arm=longctx,benchmark=synthetic")
               for x in (p / "records.jsonl").read_text().split("\n") if x]
    assert (float(rows["longctx"]["answer_cost"])
            == pytest.approx(sum(r["latency_s"] for r in lc_recs) / len(lc_recs) / 1000))
    # --gpu-hour-price charges the wall clock (basis latency), and the page says which clock priced it
    assert ("Generation cost: measured wall-clock seconds (they grow with the machine's load) x $3.6 per machine "
            "hour.") in (tmp_path / "report.md").read_text()


def test_records_own_cost_is_used_when_every_answer_has_one(tmp_path):
    knobs = {"arm": "longctx", "benchmark": "b", "generator": "g"}
    recs = [{"id": f"s{i}", "benchmark": "b", "task": "t", "language": "en", "length_level": "1k", "group": f"g{i}",
             "arm": "longctx", "status": "ok", "score": i % 2, "prompt_tokens": 100, "completion_tokens": 5,
             "latency_s": 1.0, "cost_usd": 0.25} for i in range(12)]  # over 6 documents a t interval would not decide
    write_run(tmp_path / "runs" / "lc", knobs, recs)
    rag_knobs = {"arm": "rag", "benchmark": "b", "generator": "g", "retriever": "bm25", "chunk_size": 64, "top_k": 2,
                 "order": "document"}
    write_run(tmp_path / "runs" / "rag", rag_knobs, [{**r, "arm": "rag", "cost_usd": 0.05, "score": 1} for r in recs])
    build_report([str(tmp_path / "runs")], tmp_path / "out", load_settings())
    v = _csv(tmp_path / "out" / "verdict.csv")[0]
    assert float(v["cost_ratio"]) == pytest.approx(0.2)
    assert float(v["diff_rag_minus_longctx"]) == pytest.approx(50.0)
    assert v["decision"] == "rag" and v["selection"].startswith("single config per arm")
    assert "Use RAG" in v["recommendation"] and "RAG is better" in v["recommendation"]
    assert "record's own `cost_usd`" in (tmp_path / "out" / "report.md").read_text()


def test_hourly_priced_records_price_dense_indexing_by_time(tmp_path):
    """Runs priced per hour (conf/price/cpu.yaml): indexing is embedding time at the same hourly rate."""
    price = {"name": "cpu-2vcpu", "kind": "hourly", "usd_per_hour": 0.36, "devices": 2, "basis": "latency"}
    base = {"task": "t", "language": "en", "length_level": "1k", "status": "ok", "score": 1.0, "prompt_tokens": 100,
            "completion_tokens": 5, "latency_s": 10.0, "cost_usd": 0.002}
    write_run(tmp_path / "runs" / "lc", {"arm": "longctx", "benchmark": "b", "generator": "g"},
              [{**base, "id": f"s{i}", "group": f"d{i}", "arm": "longctx"} for i in range(4)],
              extra_metrics={"price": price})
    knobs = {"arm": "rag", "benchmark": "b", "generator": "g", "retriever": "minilm", "chunk_size": 100, "top_k": 2,
             "order": "document"}
    write_run(tmp_path / "runs" / "rag", knobs, [{**base, "id": f"s{i}", "group": f"d{i}", "arm": "rag", "n_chunks": 50,
                                                  "cost_usd": 0.001} for i in range(4)], extra_metrics={"price": price})
    files = build_report([str(tmp_path / "runs")], tmp_path / "out", load_settings(queries_per_doc=2))
    rows = {r["arm"]: r for r in _csv(files["whatif.csv"])}
    # 50 chunks x 100 tokens at 20000 tokens/s = 0.25 s at 0.72 $/h
    assert float(rows["rag"]["index_cost_per_doc"]) == pytest.approx(0.25 * 0.72 / 3600)
    assert float(rows["rag"]["cost_per_1000"]) == pytest.approx(1000 * (0.001 + 0.25 * 0.72 / 3600 / 2))
    assert "at $0.72 per hour" in files["report.md"].read_text()


def test_clear_errors(tmp_path, capsys):
    assert main([str(tmp_path / "missing")]) == 2
    assert "no such run" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main([str(tmp_path / "empty")]) == 2
    assert "no run directories" in capsys.readouterr().err
    with pytest.raises(ValueError, match="not both"):
        load_settings(price_in=1.0, gpu_hour_price=2.0)
    with pytest.raises(ValueError, match="tolerance"):
        load_settings(tolerance=-1)
    bad = tmp_path / "bad.yaml"
    bad.write_text("tolerence: 3\n")
    with pytest.raises(ValueError, match="unknown setting"):
        load_settings(bad)
    run = tmp_path / "norecords"
    run.mkdir()
    (run / "metrics.json").write_text(json.dumps({"knobs": {"arm": "rag"}}))
    assert main([str(run), "--out", str(tmp_path / "o")]) == 2
    assert "no records.jsonl" in capsys.readouterr().err


def test_duplicates_merge_and_two_generators_get_separate_verdicts(tmp_path):
    make_sweep(tmp_path / "a", per_level=4, top_ks=(2,), extra_arms=False)
    make_sweep(tmp_path / "b", per_level=4, top_ks=(2,), extra_arms=False)  # the same config points again
    make_sweep(tmp_path / "c", per_level=4, top_ks=(2,), extra_arms=False, generator="other-model")
    files = build_report([str(tmp_path / "a"), str(tmp_path / "b"), str(tmp_path / "c")], tmp_path / "out")
    md = files["report.md"].read_text()
    assert "duplicate run(s) merged" in md
    benches = {r["benchmark"] for r in _csv(files["verdict.csv"])}
    assert benches == {"synthetic / bundled:smollm2", "synthetic / other-model"}
    assert len(_csv(files["configs.csv"])) == 6


def test_an_old_summary_csv_beside_the_report_names_configs_csv(tmp_path, caplog):
    make_sweep(tmp_path / "a", per_level=4, top_ks=(2,), extra_arms=False)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "summary.csv").write_text("config\nold\n")
    files = build_report([str(tmp_path / "a")], tmp_path / "out")
    said = [r.getMessage() for r in caplog.records if "summary.csv" in r.getMessage()]
    assert len(said) == 1 and str(files["configs.csv"]) in said[0] and "not rewritten" in said[0]
    assert (tmp_path / "out" / "summary.csv").read_text() == "config\nold\n"  # left as it was


def test_credentials_in_run_configs_do_not_reach_the_report(tmp_path):
    knobs = {"arm": "longctx", "benchmark": "b", "generator": "g"}
    recs = [{"id": "s0", "task": "t", "language": "en", "length_level": "1k", "status": "ok", "score": 1.0,
             "prompt_tokens": 10, "completion_tokens": 1, "latency_s": 0.1}]
    secret = "sk-test-0123456789abcdef"
    write_run(tmp_path / "runs" / "lc", knobs, recs,
              config={"benchmark": {"name": "b"}, "generator": {"model": "g", "api_key": secret}},
              overrides=[f"+generator.api_key={secret}", "arm=longctx"])
    files = build_report([str(tmp_path / "runs")], tmp_path / "out")
    for name in ("report.md", "report.html", "configs.csv", "summary.json"):
        assert secret not in files[name].read_text(), name
    assert "arm=longctx" in files["report.md"].read_text()


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if shutil.which(name):
            return shutil.which(name)
    return None


CHECK_SCRIPT = """<script>
window.addEventListener('load', function () {
  var imgs = Array.prototype.map.call(document.images, function (i) { return i.complete ? i.naturalWidth : -1; });
  var ids = Array.prototype.map.call(document.querySelectorAll('section[id]'), function (s) { return s.id; });
  var pre = document.createElement('pre');
  pre.id = 'browser-check';
  pre.textContent = JSON.stringify({imgs: imgs, sections: ids, title: document.title,
                                    tables: document.querySelectorAll('table').length});
  document.body.appendChild(pre);
});
</script>"""


def test_html_report_loads_in_headless_chromium_without_broken_images(report, tmp_path):
    browser = _chromium()
    if browser is None:
        pytest.skip("chromium not installed: `apt-get install -y chromium` (Debian) "
                    "to check the HTML report in a real browser")
    out, _ = report
    page = tmp_path / "check.html"  # the report, plus a script that writes what the browser loaded into the DOM
    page.write_text((out / "report.html").read_text().replace("</body>", CHECK_SCRIPT + "\n</body>"))
    res = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                          "--virtual-time-budget=15000", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stderr[-2000:]
    m = re.search(r'<pre id="browser-check">(.*?)</pre>', res.stdout, re.S)
    assert m, f"the page did not finish loading in chromium: {res.stdout[:500]} {res.stderr[-1000:]}"
    seen = json.loads(m.group(1).replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"))
    assert seen["title"] == "RAG vs long context: decision report"
    assert seen["sections"] == list(SECTION_IDS)
    assert len(seen["imgs"]) == 8 and all(w > 0 for w in seen["imgs"]), f"broken image(s): {seen['imgs']}"
    assert seen["tables"] >= 9  # the answer table first, then the sections' tables


def test_older_runs_without_new_fields_still_report(tmp_path):
    """Runs written before cost, routes, depth and evidence fields existed."""
    recs = [{"id": f"s{i}", "task": "t", "language": "en", "length_level": "400", "status": "ok",
             "prediction": "x", "score": float(i % 3 == 0), "completion_tokens": 3, "latency_s": 1.0} for i in range(9)]
    write_run(tmp_path / "runs" / "lc", {"arm": "longctx", "benchmark": "old", "generator": "g"},
              [{**r, "arm": "longctx", "benchmark": "old", "prompt_tokens": 500} for r in recs])
    write_run(tmp_path / "runs" / "rag", {"arm": "rag", "benchmark": "old", "generator": "g", "retriever": "bm25",
                                          "chunk_size": 64, "top_k": 2, "order": "document"},
              [{**r, "arm": "rag", "benchmark": "old", "prompt_tokens": 120} for r in recs])
    files = build_report([str(tmp_path / "runs")], tmp_path / "out")
    v = _csv(files["verdict.csv"])
    assert len(v) == 1 and float(v[0]["diff_rag_minus_longctx"]) == 0.0 and v[0]["rag_within_tolerance"] == "True"
    assert float(v[0]["prompt_token_ratio"]) == pytest.approx(120 / 500)
    md = files["report.md"].read_text()
    assert "Not drawn: recall@n (no RAG run with evidence annotations)" in md and "## 5. Reproducibility" in md


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))


def test_retrieval_only_runs_show_the_prompt_tokens_a_generator_would_receive(tmp_path):
    knobs = {"arm": "rag", "benchmark": "b", "generator": "none", "retriever": "bm25", "chunk_size": 64, "top_k": 2,
             "order": "document"}
    recs = [{"id": f"s{i}", "benchmark": "b", "task": "t", "language": "en", "length_level": "1k", "group": f"g{i}",
             "arm": "rag", "status": "retrieved", "context_tokens": 128, "prompt_tokens": 150 + i,
             "evidence_recall": {"1": 1.0}} for i in range(4)]
    write_run(tmp_path / "runs" / "rag", knobs, recs)
    build_report([str(tmp_path / "runs")], tmp_path / "out", load_settings())
    row = _csv(tmp_path / "out" / "configs.csv")[0]
    assert float(row["prompt_tokens_mean"]) == pytest.approx(151.5)
