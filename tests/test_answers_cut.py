"""Answers cut at the token limit: every backend says how an answer ended (`finish_reason`), the records
keep it, metrics.json counts the cut ones, and the report names the configs whose answers were cut
(their scores may understate them)."""

from __future__ import annotations

import copy
import csv
import json

import pytest

from experiments.report.page.build import build_report
from experiments.report.settings import load_settings
from experiments.run_metrics import aggregate
from experiments.simulate.sweeps import write_run
from llm.prompt import Prompt

QUESTION = "What is the capital of France? Answer in one word."


def test_the_transformers_backend_says_how_each_answer_ended(generator):
    short, roomy = generator.generate([Prompt(QUESTION, max_new_tokens=3), Prompt(QUESTION, max_new_tokens=64)])
    assert (short.completion_tokens, short.finish_reason) == (3, "length")
    assert roomy.finish_reason == "stop" and roomy.completion_tokens < 64
    # the shared-prefix path (questions over one context, decoded together) says it too
    ctx = "The lighthouse keeper logged the storm at dawn. " * 20
    prompts = [Prompt(ctx + "When was the storm logged? Answer briefly.", max_new_tokens=3, prefix_chars=len(ctx)),
               Prompt(ctx + "Who logged the storm? Answer in two words.", max_new_tokens=48, prefix_chars=len(ctx))]
    cut, done = generator.generate(prompts)
    assert cut.prefix_group_size == 2 and (cut.completion_tokens, cut.finish_reason) == (3, "length")
    assert done.finish_reason == "stop"


@pytest.mark.integration  # end to end, 20-40 s: the fast tier stays under 10 minutes on 2 cores
def test_the_runner_records_it_and_counts_the_cut_answers(tmp_path, generator):
    """The runner over the real SmolLM2 (in this process: the session's weights), whose answers end both ways."""
    from experiments.run import run
    from tests.conftest import compose

    (tmp_path / "run").mkdir()
    run(compose(["arm=longctx", "generator=smollm2", "benchmark=synthetic", "benchmark.languages=[en]",
                 "benchmark.levels=[400]", "benchmark.questions_per_haystack=3", f"run.cache_dir={tmp_path / 'cache'}",
                 "run.progress=false"]), tmp_path / "run")
    records = [json.loads(x) for x in (tmp_path / "run" / "records.jsonl").read_text().splitlines()]
    assert len(records) == 3 and {r["finish_reason"] for r in records} <= {"stop", "length"}
    for r in records:  # the synthetic benchmark allows 24 new tokens: an answer that stopped before ended itself
        assert r["completion_tokens"] <= 24 and (r["completion_tokens"] == 24 or r["finish_reason"] == "stop")
    share = sum(r["finish_reason"] == "length" for r in records) / len(records)
    assert json.loads((tmp_path / "run" / "metrics.json").read_text())["answers_cut_share"] == round(share, 4)


def _records(arm: str, finish: list[str | None]) -> list[dict]:
    return [{"id": f"s{i}", "benchmark": "synthetic", "task": "t", "language": "en", "length_level": "1k",
             "group": f"g{i}", "arm": arm, "status": "ok", "score": 1.0, "scores": {"score": 1.0}, "prediction": "x",
             "answers": ["x"], "prompt_tokens": 10, "completion_tokens": 2, "latency_s": 0.1, "finish_reason": f}
            for i, f in enumerate(finish)]


def test_the_report_names_configs_whose_answers_were_cut(tmp_path):
    lc = _records("longctx", ["length", "stop", "stop", "stop"])
    assert aggregate(lc)["answers_cut_share"] == 0.25
    assert aggregate(_records("longctx", [None, None]))["answers_cut_share"] is None  # the backend did not say
    write_run(tmp_path / "sweep" / "lc", {"arm": "longctx", "benchmark": "synthetic", "generator": "m"}, lc)
    write_run(tmp_path / "sweep" / "rag", {"arm": "rag", "benchmark": "synthetic", "generator": "m",
                                           "retriever": "bm25", "chunk_size": 128, "top_k": 4},
              _records("rag", ["stop"] * 4))
    files = build_report([str(tmp_path / "sweep")], tmp_path / "report", load_settings())
    rows = {r["arm"]: r for r in csv.DictReader(files["configs.csv"].open())}
    assert float(rows["longctx"]["answers_cut_share"]) == 0.25 and float(rows["rag"]["answers_cut_share"]) == 0.0
    md = files["report.md"].read_text()
    assert "Answers cut at the token limit" in md and "longctx 25%" in md.split("Answers cut at the token limit")[1]


def _with_stop(generator, stop):
    """The generator with stop strings (a shallow copy: the same loaded weights, no second load)."""
    import copy

    from llm.stopping import stop_strings

    stopped = copy.copy(generator)
    stopped.stop = stop_strings(stop)
    return stopped


def test_stop_strings_end_an_answer_where_they_appear_on_every_decoding_path(tiny_generator):
    """generator.stop (e.g. experiment=demo's sentence end): the answer is cut before the stop string, counts
    as "stop", and decoding ends there; alone, over a shared prefix (batched) and streamed. On the tiny
    random-weight Llama (the same backend code; its answers run to the limit, so each has words to cut at)."""
    generator = tiny_generator
    ctx = "The lighthouse keeper logged the storm at dawn and the ferry left at noon. " * 12
    prompts = [Prompt(ctx + "Describe the keeper's day in detail.", max_new_tokens=24, prefix_chars=len(ctx)),
               Prompt(ctx + "Describe the ferry in detail.", max_new_tokens=24, prefix_chars=len(ctx))]
    alone = Prompt("Write a long sentence about the sea.", max_new_tokens=24)
    free = generator.generate([*prompts, alone])
    for plain in free:
        words = plain.text.split()
        assert len(words) >= 4, plain.text  # long enough to be cut
    # a stop string from inside each free answer: its third word, with the space before it
    for i, prompt in enumerate([prompts, prompts, [alone]]):
        target = free[i] if i < 2 else free[2]
        stop = " " + target.text.split()[2]
        got = _with_stop(generator, [stop]).generate(prompt)[i if i < 2 else 0]
        assert got.finish_reason == "stop" and stop not in f" {got.text}"
        assert got.text == target.text[: target.text.find(stop)].strip()
        assert got.completion_tokens < target.completion_tokens
    streamed = _with_stop(generator, [" " + free[2].text.split()[2]]).stream(alone)
    pieces = "".join(streamed)
    assert streamed.generation.text == free[2].text[: free[2].text.find(" " + free[2].text.split()[2])].strip()
    assert streamed.generation.finish_reason == "stop" and len(pieces) < len(free[2].text) + 20


def test_stop_strings_are_checked_and_skip_the_leading_whitespace():
    import pytest

    from llm.stopping import first_stop, stop_strings

    assert first_stop("\n\nParis. It is", ("\n", ". ")) == 7  # the leading newlines do not cut it to nothing
    assert first_stop("Paris", ("\n",)) is None
    assert stop_strings(". ") == (". ",) and stop_strings(None) == ()
    with pytest.raises(ValueError, match="generator.stop must be a list of non-empty strings"):
        stop_strings(["\n", ""])


def test_the_demo_ends_answers_at_the_first_sentence_with_room_to_get_there():
    from tests.conftest import compose

    for point in ("lc", "rag_bm25_c128_k1"):
        cfg = compose(["experiment=demo", f"demo_point={point}"])
        assert list(cfg.generator.stop) == ["\n", ". "] and cfg.benchmark.max_new_tokens == 48
        assert cfg.generator.stop_loops is True
        assert cfg.generator.model == "bundled:smollm2"


def test_stop_loops_ends_an_answer_that_repeats_itself(generator):
    """generator.stop_loops (generator=smollm2_brief): greedy decoding that falls into a loop never leaves it, so
    the answer ends there with finish_reason "repetition" instead of running to the token limit as a cut answer."""
    primed = "The mayor of Kaldoalt is the mayor of Kaldoalt is the mayor of Kaldoalt is the mayor of"
    plain = generator.complete(primed, max_new_tokens=40)
    looped = copy.copy(generator)
    looped.stop_loops = True
    ended = looped.complete(primed, max_new_tokens=40)
    assert (plain.finish_reason, plain.completion_tokens) == ("length", 40)
    assert ended.finish_reason == "repetition" and ended.completion_tokens < 30
    assert plain.text.startswith(ended.text)


def test_a_loop_is_a_block_repeated_three_times_over_twelve_tokens():
    from llm.stopping import looping

    assert looping([5] * 12) and not looping([5] * 11)  # one token: 12 copies
    assert looping([9, 1, 2, 3, 4] * 3) and not looping([1, 2, 3, 4, 5] * 2)  # five tokens: 3 copies (15)
    assert not looping(list(range(40))) and not looping([])
    assert looping(list(range(7)) + [8, 9, 10, 11] * 3)  # only the end counts
