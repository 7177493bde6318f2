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

BASE = ["benchmark.languages=[en]", "benchmark.levels=[100]", "benchmark.haystacks_per_level=2",
        "benchmark.questions_per_haystack=1", "run.progress=false"]


def _records(run_dir):
    return [json.loads(line) for line in (run_dir / "records.jsonl").read_text().splitlines()]


def test_resume_refuses_records_of_another_configuration(tmp_path):
    from experiments.run import run

    run_dir, cache = tmp_path / "run", f"run.cache_dir={tmp_path / 'cache'}"
    run_dir.mkdir()
    first = run(compose(BASE + [cache]), run_dir)
    assert first["n_ok"] == 2
    # fewer samples: the same configuration, resumed from its records
    again = run(compose(BASE + [cache, "benchmark.limit=1"]), run_dir)
    assert (again["n"], again["generation_calls"], again["config_hash"]) == (1, 0, first["config_hash"])
    with pytest.raises(ValueError, match=r"records\.jsonl holds records of another configuration .*hydra\.run\.dir"):
        run(compose(BASE + [cache, "longctx.margin_tokens=17"]), run_dir)
    assert len(_records(run_dir)) == 2, "nothing was appended by the refused run"


@pytest.fixture(scope="module")
def judge_server(generator):
    with FakeOpenAIServer(generator, model_name="judge") as srv:
        yield srv


def test_a_judge_that_cannot_be_asked_is_a_failure_retried_on_resume(tmp_path, judge_server):
    from experiments.run import run

    overrides = BASE + ["benchmark.haystacks_per_level=1", "benchmark.metric=loong_judge", "judge.model=judge",
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
    # SmolLM2 as the judge may reply without a rating: that is its own outcome (failed, quoted), never a 0
    if last["status"] == "ok":
        assert (second["n_failed"], second["n_ok"]) == (0, 1)
    else:
        assert last["reason"].startswith("judge reply unparsable") and "score" not in last
    assert second["generation_calls"] == 0, "the answer itself came from the response cache"
