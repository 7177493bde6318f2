"""What a resumed run may reuse, and what counts as a failure to retry.

- Records of another configuration in the run folder are refused (a changed sweep reusing a sweep
  folder would mix two configurations); sample selection and patience settings are not another
  configuration.
- A judge that cannot be asked is a failed sample with the reason (not a score of 0), counted in
  metrics.json and asked again on resume.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import compose
from testsupport.fake_servers import FakeOpenAIServer
from testsupport.scripted import ScriptedModel

BASE = ["benchmark.languages=[en]", "benchmark.levels=[100]", "benchmark.haystacks_per_level=2",
        "benchmark.questions_per_haystack=1", "run.progress=false"]
JUDGE_REPLY = "The answer does not match the reference. Rating: [[10]]"  # Loong's judge format


@pytest.fixture(scope="module")
def base(tiny_llm) -> list[str]:
    """BASE with generator=smollm2's config over the tiny random-weight Llama (conftest's `tiny_llm`): what a
    resume may reuse is plumbing; the answers only need to be the same each time, as greedy decoding makes them."""
    return [*BASE, f"generator.model={tiny_llm}"]


def _records(run_dir):
    return [json.loads(line) for line in (run_dir / "records.jsonl").read_text().splitlines()]


def test_resume_refuses_records_of_another_configuration(tmp_path, base):
    from experiments.run import run

    run_dir, cache = tmp_path / "run", f"run.cache_dir={tmp_path / 'cache'}"
    run_dir.mkdir()
    first = run(compose(base + [cache]), run_dir)
    assert first["n_ok"] == 2
    # fewer samples: the same configuration, resumed from its records
    again = run(compose(base + [cache, "benchmark.limit=1"]), run_dir)
    assert (again["n"], again["generation_calls"], again["config_hash"]) == (1, 0, first["config_hash"])
    with pytest.raises(ValueError, match=r"records\.jsonl holds records of another configuration .*hydra\.run\.dir"):
        run(compose(base + [cache, "longctx.margin_tokens=17"]), run_dir)
    assert len(_records(run_dir)) == 2, "nothing was appended by the refused run"


@pytest.fixture(scope="module")
def judge_server():
    """A judge endpoint: the fake server over a scripted model that rates every answer 10 of 100."""
    with FakeOpenAIServer(ScriptedModel(lambda prompt: JUDGE_REPLY), model_name="judge") as srv:
        yield srv


def test_a_judge_that_cannot_be_asked_is_a_failure_retried_on_resume(tmp_path, judge_server, base):
    from experiments.run import run

    overrides = base + ["benchmark.haystacks_per_level=1", "benchmark.metric=loong_judge", "judge.model=judge",
                        f"judge.base_url={judge_server.url}", "judge.max_retries=0", "judge.timeout_s=60",
                        f"run.cache_dir={tmp_path / 'cache'}"]
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    judge_server.add_faults(["500"])
    first = run(compose(overrides), run_dir)
    (rec,) = _records(run_dir)
    assert rec["status"] == "failed" and rec["reason"].startswith("judge call failed") and "500" in rec["reason"], rec
    assert "score" not in rec and rec["prediction"] is not None  # no judgment: the answer kept, no score
    assert (first["n_failed"], first["n_ok"]) == (1, 0)
    assert json.loads((run_dir / "metrics.json").read_text())["n_failed"] == 1

    asked = judge_server.stats["requests"]
    second = run(compose(overrides), run_dir)  # the endpoint is back: the judge is asked again
    last = _records(run_dir)[-1]
    assert judge_server.stats["requests"] == asked + 1 and not last.get("reason", "").startswith("judge call failed")
    # the judge's rating is the score (Loong's 1-100, as a share)
    assert last["status"] == "ok" and (second["n_failed"], second["n_ok"]) == (0, 1)
    assert last["score"] == pytest.approx(0.1), last
    assert second["generation_calls"] == 0, "the answer itself came from the response cache"
