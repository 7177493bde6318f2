"""The first run's console: a slow step says what it is doing before it starts (a model's load, a warm-up), and
the progress bar and the time estimate count the same answers, each log line above the bar rather than glued to
its end (the bar draws on stderr, Hydra's log lines go to stdout; a terminal shows both on one screen)."""

from __future__ import annotations

import io
import logging
import re
import sys
from dataclasses import replace

from eval.benchmarks.synthetic import make_haystack

BAR = re.compile(r"longctx:\s+\d+%\|[^|]*\| (\d+)/(\d+) \[")
ESTIMATE = re.compile(r"time estimate, longctx: about .+? more for (\d+) of (\d+) questions")


def _samples() -> list:
    """Two haystacks of four questions each, answered in a few tokens."""
    out = []
    for hid in ("a", "b"):
        out += make_haystack(seed=3, language="en", tokens=200, n_questions=4, haystack_id=hid)
    return [replace(s, template=replace(s.template, max_new_tokens=4)) for s in out]


def test_the_bar_and_the_estimate_count_the_same_answers(tiny_generator, tmp_path, monkeypatch):
    """A run's screen as a terminal shows it (stdout and stderr on one stream): after each time estimate the bar
    is drawn again at the count the estimate has behind it, and the estimate's line starts a line of its own.
    Before, tqdm's redraw interval left the bar at the first answer of a document's group (1/8) while the
    estimate, said after the group, already counted the group's four."""
    from experiments.records import RecordStore
    from experiments.run import run_samples
    from longctx.arm import LongContextArm, LongContextConfig

    screen = io.StringIO()
    monkeypatch.setattr(sys, "stdout", screen)
    monkeypatch.setattr(sys, "stderr", screen)
    handler = logging.StreamHandler(sys.stdout)  # as Hydra's console handler: the log on stdout
    root = logging.getLogger()
    root.addHandler(handler)
    monkeypatch.setattr(root, "level", logging.INFO)
    try:
        arm = LongContextArm(tiny_generator, LongContextConfig())
        records = run_samples(_samples(), arm, tiny_generator, RecordStore(tmp_path / "records.jsonl"),
                              {"arm": "longctx"}, "h", progress=True)
    finally:
        root.removeHandler(handler)
    assert len(records) == 8
    text = screen.getvalue()
    said = list(ESTIMATE.finditer(text))
    assert said, text[-2000:]
    for m in said:
        start = max(text.rfind("\n", 0, m.start()), text.rfind("\r", 0, m.start())) + 1  # what the line shows
        assert not text[start:m.start()].strip(), f"the estimate is glued to the bar: {text[start - 80:m.end()]!r}"
        left, total = int(m.group(1)), int(m.group(2))
        bar = BAR.search(text, m.end())  # the bar drawn again after the line
        assert bar, text[m.end():m.end() + 300]
        assert (int(bar.group(1)), int(bar.group(2))) == (total - left, total), (m.group(0), bar.group(0))


def test_a_warm_up_and_a_load_say_what_they_do_before_they_start(tiny_llm, caplog):
    """The model's load and each warm-up: a line before the step, its time in a line after."""
    from llm.prompt import Prompt
    from llm.transformers_backend import TransformersGenerator

    gen = TransformersGenerator(str(tiny_llm), context_window=8192, dtype="float32", threads=1)
    with caplog.at_level(logging.INFO, logger="llm.transformers_backend"):
        gen.generate([Prompt("Say one word.", max_new_tokens=2)])
    said = [r.getMessage() for r in caplog.records]
    before = said.index("warming up the generate path (untimed, outside the records)")
    after = next(i for i, line in enumerate(said) if line.startswith("warm-up of the generate path: "))
    assert before < after
    # the weights are this session's (the tiny Llama is loaded once per process), or loaded here after a line
    loads = [i for i, line in enumerate(said) if line.startswith("loading ")]
    assert all(i < before for i in loads)


def test_an_embedder_says_it_is_loading_before_it_loads(caplog):
    """The embedder's library import and weights (44 s for MiniLM in a dry run at load average 5, with no line
    before): announced first."""
    from rag.embedders import SentenceTransformerEmbedder

    with caplog.at_level(logging.INFO, logger="rag.embedders"):
        embedder = SentenceTransformerEmbedder("bundled:all-MiniLM-L6-v2")
    assert caplog.records[0].getMessage() == "loading the embedder bundled:all-MiniLM-L6-v2"
    assert embedder.embed_queries(["a question"]).shape[0] == 1
