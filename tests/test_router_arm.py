"""`arm=router`: the report's router file (experiments/arms/router_model.py) run live by
experiments/arms/router.py, on the transformers backend (the tiny random-weight Llama with SmolLM2's tokenizer)
and BM25 over synthetic haystacks.

A router whose answer is known in advance (an intercept only, or one feature whose sign decides)
must route every question that way and answer it exactly as the plain arm of that path does; the
runner must record the route and resume; a retrained file must be another configuration."""

from __future__ import annotations

import json
import math
import shutil
from dataclasses import replace

import numpy as np
import pytest
from omegaconf import OmegaConf

from eval.benchmarks.synthetic import make_haystack
from experiments import records as schema
from experiments.arms import answer_group, arm_spec, build_arm
from experiments.arms.router_model import FEATURES, RidgeModel, Router, load_router, save_router
from tests.conftest import compose

MAX_NEW_TOKENS = 6
SHORT, LONG = 200, 1000  # approximate tokens of the two haystacks (about 400 and 1,750 SmolLM2 tokens)
MID_LOG_TOKENS = math.log(1100)  # between the two documents' ln(tokens)


def _router(intercept: float = 0.0, weights: dict[str, float] | None = None, mean: dict[str, float] | None = None,
            cost_weight: float = 0.0, cost_unit: str | None = None) -> Router:
    names = list(weights or {})
    model = RidgeModel(names, np.array([(mean or {}).get(n, 0.0) for n in names]), np.ones(len(names)),
                       np.array([weights[n] for n in names]), intercept)
    return Router(model, cost_weight, cost_unit, trained_on={"runs": ["test"]})


def _cfg(router_path, *overrides: str) -> dict:
    return OmegaConf.to_container(compose(["arm=router", f"router.path={router_path}", *overrides]), resolve=True)


def _samples(tokens: int, haystack_id: str, n: int = 2) -> list:
    """One haystack's questions, answered in a few tokens (a short answer is all these tests compare)."""
    out = make_haystack(seed=5, language="en", tokens=tokens, n_questions=n, haystack_id=haystack_id)
    for s in out:
        s.template = replace(s.template, max_new_tokens=MAX_NEW_TOKENS)
    return out


@pytest.fixture(scope="module")
def generator(tiny_generator):
    """The answering generator of this module: generator=smollm2's config over the tiny random-weight Llama
    (conftest's `tiny_generator`, SmolLM2's tokenizer): routed answers are compared with the plain arms' answers,
    which greedy decoding of fixed weights makes exactly reproducible, whatever they say."""
    return tiny_generator


@pytest.fixture(scope="module")
def tokenizer_only():
    """The retrieval-only generator (`generator=none`): builds and counts prompts, never answers."""
    from llm.factory import build_generator

    return build_generator(OmegaConf.to_container(compose(["generator=none"]).generator, resolve=True))


# ---------------------------------------------------------------- (a) the file
def test_a_saved_router_loads_back_the_same(tmp_path):
    router = _router(0.25, {"log_doc_tokens": -0.5, "top1_score": 0.1}, {"log_doc_tokens": 7.0},
                     cost_weight=0.002, cost_unit="prompt_tokens")
    back = load_router(save_router(router, tmp_path / "router.json"))
    assert back.to_json() == router.to_json()
    row = {"log_doc_tokens": 8.0, "top1_score": 3.0}
    assert back.gain(row) == pytest.approx(0.25 - 0.5 + 0.3)
    assert back.choose(row, cost_lc=1000, cost_rag=200) == ("rag", pytest.approx(0.05 + 1.6))


BAD_FILES = [
    ("format", lambda d: d.update(format="something-else"), "'format'"),
    ("weights length", lambda d: d.update(weights=[1.0, 2.0]), "'weights'"),
    ("unknown feature", lambda d: d.update(features=["doc_colour"]), "'features'"),
    ("negative sd", lambda d: d.update(sd=[-1.0]), "'sd'"),
    ("usd without a unit", lambda d: d.update(cost_weight=1.0, cost_unit=None), "'cost_unit'"),
]


@pytest.mark.parametrize("name,spoil,field", BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_a_bad_router_file_is_refused_naming_the_field_and_the_file(tmp_path, tokenizer_only, name, spoil, field):
    path = save_router(_router(0.1, {"log_doc_tokens": 1.0}), tmp_path / "router.json")
    data = json.loads(path.read_text())
    spoil(data)
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=field) as err:
        load_router(path)
    assert str(path) in str(err.value)
    # the arm refuses it when it is built, naming the config key too
    with pytest.raises(ValueError, match=f"router.path={path}.*{field}"):
        build_arm("router", tokenizer_only, _cfg(path, "generator=none", f"run.cache_dir={tmp_path}"))


def test_a_missing_router_file_fails_at_build_naming_router_path(tmp_path, tokenizer_only):
    cfg = OmegaConf.to_container(compose(["arm=router", "generator=none"]), resolve=True)
    with pytest.raises(ValueError, match=r"router\.path is not set"):
        build_arm("router", tokenizer_only, cfg)
    missing = tmp_path / "nowhere" / "router.json"
    with pytest.raises(ValueError, match=rf"router\.path={missing}: no such file"):
        build_arm("router", tokenizer_only, _cfg(missing, "generator=none"))
    (tmp_path / "not_json.json").write_text("{")
    with pytest.raises(ValueError, match=r"router\.path=.*not_json\.json.*not JSON"):
        build_arm("router", tokenizer_only, _cfg(tmp_path / "not_json.json", "generator=none"))


def test_a_run_of_other_configs_than_the_router_was_trained_on_is_warned_about(tmp_path, tokenizer_only, caplog):
    router = _router(0.1)
    router.trained_on = {"rag": "rag bm25 c64 k2", "longctx": "longctx"}  # what the report writes
    path = save_router(router, tmp_path / "router.json")
    with caplog.at_level("WARNING", logger="experiments.arms.router"):
        build_arm("router", tokenizer_only, _cfg(path, "generator=none", "rag.top_k=2", "rag.chunk_size=64",
                                                  f"run.cache_dir={tmp_path}"))
        assert not caplog.records  # the same configs: nothing to say
        build_arm("router", tokenizer_only, _cfg(path, "generator=none", "rag.top_k=4", "rag.chunk_size=64",
                                                  "longctx.truncation=head", f"run.cache_dir={tmp_path}"))
    (warning,) = caplog.records
    text = warning.getMessage()
    assert f"router.path={path} was trained on other configs" in text
    assert "rag 'rag bm25 c64 k2', this run 'rag bm25 c64 k4'" in text and "this run 'longctx head'" in text


# ---------------------------------------------------------------- (b) known routes = the plain arms
@pytest.mark.parametrize("intercept,route", [(5.0, "rag"), (-5.0, "longctx")])
def test_an_intercept_only_router_answers_exactly_as_the_plain_arm_of_its_route(generator, tmp_path, intercept,
                                                                                route):
    samples = _samples(SHORT, "b")
    path = save_router(_router(intercept), tmp_path / "router.json")
    cfg = _cfg(path, "rag.top_k=2", "rag.chunk_size=64", f"run.cache_dir={tmp_path}")
    routed = answer_group(build_arm("router", generator, cfg), generator, samples)
    plain = answer_group(build_arm(route, generator, cfg), generator, samples)
    assert [a.text for a in routed] == [a.text for a in plain]
    assert all(a.text for a in routed)
    for got, want in zip(routed, plain, strict=True):
        assert got.meta["route"] == route and got.meta["router_utility"] == intercept
        assert got.usage["prompt_tokens"] == want.usage["prompt_tokens"] and got.usage["calls"] == 1
        # RAG always retrieved: its figures are on every record, and the user waited for it
        assert got.meta["evidence_recall"] and got.meta["retrieval_s"] is not None
        assert got.usage["retrieval_s"] == got.meta["retrieval_s"]
        assert got.usage["latency_s"] >= got.usage["retrieval_s"] > 0
        if route == "longctx":
            assert got.meta["evidence_retained"] is not None and got.meta["kept_spans"] == want.meta["kept_spans"]
            assert 0 < got.meta["rag_context_tokens"] < got.meta["context_tokens"]


# ---------------------------------------------------------------- (c) a feature splits by its sign
def test_a_document_length_router_sends_short_documents_one_way_and_long_ones_the_other(generator, tmp_path,
                                                                                          tokenizer_only):
    from experiments.run import run_samples

    short, long_ = _samples(SHORT, "short", n=1), _samples(LONG, "long", n=1)
    path = save_router(_router(0.0, {"log_doc_tokens": -1.0}, {"log_doc_tokens": MID_LOG_TOKENS}),
                       tmp_path / "router.json")
    cfg = _cfg(path, "rag.top_k=2", "rag.chunk_size=64", f"run.cache_dir={tmp_path}")
    arm = build_arm("router", generator, cfg)
    store = schema.RecordStore(tmp_path / "records.jsonl")
    records = run_samples(short + long_, arm, generator, store, {"arm": "router"}, "h", progress=False)
    by_id = {r["id"]: r for r in records}
    # negative weight on the document's length: RAG for the short one, long context for the long one
    assert [by_id[s.id]["route"] for s in short + long_] == ["rag", "longctx"]
    for r in records:
        assert r["status"] == schema.OK and r["prediction"] is not None and set(r) <= schema.RECORD_KEYS
        x = r["router_features"]["log_doc_tokens"]
        assert r["router_utility"] == pytest.approx(-(x - MID_LOG_TOKENS))
        assert set(r["router_features"]) == {*FEATURES, f"task={r['task']}"}
        assert r["router_features"]["top1_score"] == max(c["score"] for c in r["retrieved"])
    assert by_id[long_[0].id]["router_features"]["log_doc_tokens"] == pytest.approx(
        math.log(by_id[long_[0].id]["context_tokens_full"]))

    # the opposite sign, routed without answering (generator=none): the other way round
    flipped = save_router(_router(0.0, {"log_doc_tokens": 1.0}, {"log_doc_tokens": MID_LOG_TOKENS}),
                          tmp_path / "flipped.json")
    none = _cfg(flipped, "generator=none", "rag.top_k=2", "rag.chunk_size=64", f"run.cache_dir={tmp_path}")
    tok = build_arm("router", tokenizer_only, none)
    answers = [a for group in (short, long_) for a in answer_group(tok, tokenizer_only, group)]
    assert [a.meta["route"] for a in answers] == ["longctx", "rag"]
    assert all(a.text is None and a.meta["prompt_tokens"] > a.meta["context_tokens"] for a in answers)


def _tokenizer(cfg: dict):
    from llm.factory import build_generator

    return build_generator(cfg["generator"])


def test_a_router_on_the_question_type_routes_each_type_its_own_way(tmp_path, tokenizer_only):
    # the synthetic haystack mixes single-hop and two-hop questions; this router sends only two-hop to long context
    path = save_router(_router(1.0, {"task=two_hop": -10.0}), tmp_path / "router.json")
    cfg = _cfg(path, "generator=none", "rag.top_k=2", "rag.chunk_size=64", f"run.cache_dir={tmp_path}")
    samples = _samples(SHORT, "t", n=4)
    assert {s.task for s in samples} == {"single_hop", "two_hop"}
    answers = answer_group(build_arm("router", tokenizer_only, cfg), tokenizer_only, samples)
    for a in answers:
        assert a.meta["route"] == ("longctx" if a.sample.task == "two_hop" else "rag")
        assert a.meta["router_features"][f"task={a.sample.task}"] == 1.0
        assert a.meta["router_utility"] == (-9.0 if a.sample.task == "two_hop" else 1.0)



def test_a_router_on_wording_cues_and_retrieved_overlap_reads_the_question_and_the_chunks(tmp_path, tokenizer_only):
    # the haystack's questions ("Who founded ...?", "What is ...?", "In which village ...?"), one reworded to "how many"
    path = save_router(_router(-1.0, {"cue=count": 10.0, "retrieved_overlap": 0.0}), tmp_path / "router.json")
    cfg = _cfg(path, "generator=none", "rag.top_k=2", "rag.chunk_size=64", f"run.cache_dir={tmp_path}")
    samples = _samples(SHORT, "w", n=4)
    samples[0] = replace(samples[0], question="How many people founded " + samples[0].question.split()[-1])
    answers = answer_group(build_arm("router", tokenizer_only, cfg), tokenizer_only, samples)
    for a in answers:
        features = a.meta["router_features"]
        counts = a.sample.question.startswith("How many")
        assert features["cue=count"] == float(counts)
        assert features["cue=entity"] == float(a.sample.question.startswith(("Who ", "In which ")))
        assert a.meta["route"] == ("rag" if counts else "longctx")
        # RAG retrieved for every question: the overlap of its chunks with the question is recorded either way
        overlap = features["retrieved_overlap"]
        assert 0.0 < overlap <= 1.0 and a.meta["retrieved_overlap"] == overlap

# ---------------------------------------------------------------- costs and a path that cannot serve
# score per unit of cost: 0.001 per prompt token either way (gpt-4o-mini: $0.15 per million input tokens)
COSTED = [("prompt_tokens", "price=cpu", 1 / 1000, 1.0), ("usd", "price=gpt-4o-mini", 1 / (1000 * 0.15e-6), 0.15e-6)]


@pytest.mark.parametrize("unit,price,weight,per_token", COSTED, ids=[c[0] for c in COSTED])
def test_a_cost_weighted_router_adds_the_prompts_cost_difference(tmp_path, unit, price, weight, per_token):
    path = save_router(_router(-1.0, cost_weight=weight, cost_unit=unit), tmp_path / "router.json")
    cfg = _cfg(path, "generator=none", price, "rag.top_k=2", "rag.chunk_size=64", f"run.cache_dir={tmp_path}")
    arm = build_arm("router", _tokenizer(cfg), cfg)
    routes = {}
    for samples in (_samples(SHORT, "short", n=1), _samples(LONG, "long", n=1)):
        arm.longctx.prepare(samples)
        (s,) = samples
        lc, rag = (arm.gen.prompt_tokens(p.build(s)) for p in (arm.longctx, arm.rag))
        (a,) = answer_group(arm, arm.gen, samples)
        assert a.meta["router_utility"] == pytest.approx(-1.0 + weight * per_token * (lc - rag))
        routes[s.id] = a.meta["route"]
    # long context costs ~300 prompt tokens more on the short document, ~1,600 on the long one: only there RAG pays
    assert sorted(routes.values()) == ["longctx", "rag"] and routes[next(iter(routes))] == "longctx"


def test_a_usd_router_with_a_price_that_charges_time_only_is_refused_at_build(tmp_path, tokenizer_only):
    path = save_router(_router(0.0, cost_weight=100.0, cost_unit="usd"), tmp_path / "router.json")
    with pytest.raises(ValueError, match=rf"router\.path={path}: .*usd.*cannot price a prompt.*per_token"):
        build_arm("router", tokenizer_only, _cfg(path, "generator=none", "price=cpu"))


def test_a_question_long_context_cannot_serve_goes_to_rag_and_says_why(tmp_path, tokenizer_only):
    # LV-Eval's prompt_middle with almost the whole window reserved: the template alone is over half the room
    path = save_router(_router(-5.0), tmp_path / "router.json")
    cfg = _cfg(path, "generator=none", "longctx.truncation=prompt_middle", "+longctx.reserve_tokens=8150",
               f"run.cache_dir={tmp_path}")
    (a,) = answer_group(build_arm("router", tokenizer_only, cfg), tokenizer_only, _samples(SHORT, "f", n=1))
    assert a.skipped is None and a.meta["route"] == "rag" and a.meta["router_utility"] is None
    assert a.meta["router_forced"].startswith("longctx cannot serve it: the template takes")
    assert a.meta["router_features"]["log_doc_tokens"] is None and a.meta["router_features"]["top1_score"]


def test_a_feature_the_question_lacks_is_an_error_naming_the_feature_the_file_and_the_question(tmp_path,
                                                                                               tokenizer_only):
    # trained on top-2 margins, run with one chunk retrieved: no margin to weigh (the runner records it as failed)
    path = save_router(_router(0.0, {"top_margin": 1.0}), tmp_path / "router.json")
    cfg = _cfg(path, "generator=none", "rag.top_k=1", f"run.cache_dir={tmp_path}")
    samples = _samples(SHORT, "m", n=1)
    with pytest.raises(ValueError, match=rf"router\.path={path}, question {samples[0].id}: .*top_margin"):
        answer_group(build_arm("router", tokenizer_only, cfg), tokenizer_only, samples)


# ---------------------------------------------------------------- (d) through the runner
def test_the_runner_records_the_route_and_resumes_without_generating(tmp_path, tiny_llm):
    from experiments.run import run

    path = save_router(_router(0.0, {"log_doc_tokens": -1.0}, {"log_doc_tokens": math.log(800)}),
                       tmp_path / "router.json")
    cfg = compose(["arm=router", f"router.path={path}", f"generator.model={tiny_llm}", "benchmark.languages=[en]",
                   "benchmark.levels=[200,600]",
                   "benchmark.questions_per_haystack=1", f"+benchmark.max_new_tokens={MAX_NEW_TOKENS}",
                   "rag.chunk_size=64", "rag.top_k=2", f"run.cache_dir={tmp_path / 'cache'}", "run.progress=false"])
    out = tmp_path / "run"
    out.mkdir()
    first = run(cfg, out)
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert len(records) == 2 and first["n_ok"] == 2 and first["generation_calls"] == 2
    assert {r["route"] for r in records} == {"rag", "longctx"}  # the 200-token haystack to RAG, the other not
    for r in records:
        assert r["arm"] == "router" and set(r) <= schema.RECORD_KEYS
        assert r["route"] == ("rag" if r["length_level"] == "200" else "longctx")
        assert r["router_utility"] is not None and r["router_features"]["log_doc_tokens"] is not None
        assert r["evidence_recall"] and r["retrieval_s"] is not None
    assert first["route_share"] == {"longctx": 0.5, "rag": 0.5}
    assert first["knobs"]["router_sha256"] and first["index_builds"] >= 1
    before = (out / "records.jsonl").read_text()
    again = run(cfg, out)
    assert again["generation_calls"] == 0 and (out / "records.jsonl").read_text() == before
    assert again["config_hash"] == first["config_hash"]


# ---------------------------------------------------------------- (e) the config hash
def test_the_config_hash_follows_the_router_files_content_not_its_path(tmp_path):
    from experiments.run import arm_knobs, config_hash

    path = save_router(_router(0.1), tmp_path / "router.json")
    first = config_hash(compose(["arm=router", f"router.path={path}"]))
    moved = tmp_path / "elsewhere.json"
    shutil.copy(path, moved)
    assert config_hash(compose(["arm=router", f"router.path={moved}"])) == first  # same router: resumable
    save_router(_router(0.2), path)  # retrained in place
    cfg = compose(["arm=router", f"router.path={path}"])
    assert config_hash(cfg) != first
    knobs = arm_knobs(cfg)
    assert knobs["router_sha256"] != arm_knobs(compose(["arm=router", f"router.path={moved}"]))["router_sha256"]
    assert arm_spec("router").label(knobs).startswith("router bm25 c128 k4 r")


def test_the_router_spec_reads_rag_and_long_context_and_its_file():
    spec = arm_spec("router")
    assert spec.sections == ("rag", "retriever", "chunker", "reranker", "longctx", "router")
    assert spec.role == "other" and spec.indexed and spec.title == "Learned router"
