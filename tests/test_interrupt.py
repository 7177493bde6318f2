"""Ctrl-C on a real `python -m experiments.run`: one line saying what was recorded and how to resume, exit code
130, no traceback; the same command then resumes from the records the line counted."""

from __future__ import annotations

import re
import signal
import subprocess
import time

import pytest

from experiments import records as schema
from experiments.records import RecordStore
from tests.test_crash_resume import N_SAMPLES, TINY_ANSWERS
from tests.test_crash_resume import start_run as start_crash_resume_run

LINE = re.compile(r"interrupted: (\d+) of (\d+) answers of longctx recorded in (\S+); run the same command again to "
                  r"resume")


def _ctrl_c_as_in_a_terminal() -> None:
    """In the child before it starts: SIGINT at its default action, as in a terminal where a user presses Ctrl-C.

    A command started in the background by a non-interactive shell (`cmd &` in a script, as CI starts the tests)
    inherits SIGINT ignored, and keeps it so across exec: the terminal's Ctrl-C is meant for the foreground job.
    Python then installs no KeyboardInterrupt handler, and the run, rightly, ignores the SIGINT this test sends.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_run(*args, **kwargs) -> subprocess.Popen:
    """A real run as a user starts it from a terminal (test_crash_resume.start_run, Ctrl-C at its default)."""
    return start_crash_resume_run(*args, **kwargs, preexec_fn=_ctrl_c_as_in_a_terminal)


def _recorded(path) -> int:
    if not path.exists():
        return 0
    return sum(1 for r in RecordStore(path).load().values() if schema.is_final(r))


def _interrupt_after_first_record(proc: subprocess.Popen, records, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while _recorded(records) < 1:
        assert proc.poll() is None, "the run ended before it was interrupted"
        assert time.monotonic() < deadline, "no record within the timeout"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=120)


@pytest.mark.integration  # a real run of the tiny Llama, interrupted and resumed (about a minute on 2 cores)
def test_ctrl_c_says_what_was_recorded_and_exits_130_without_a_traceback(tmp_path, tiny_llm):
    run_dir, cache, log = tmp_path / "run", tmp_path / "cache", tmp_path / "run.log"
    extra = [f"generator.model={tiny_llm}", *TINY_ANSWERS]
    proc = start_run(run_dir, cache, log, extra)
    _interrupt_after_first_record(proc, run_dir / "records.jsonl")
    out = log.read_text()
    assert proc.returncode == 130, out[-3000:]
    assert "Traceback" not in out and "KeyboardInterrupt" not in out
    last = out.strip().splitlines()[-1]
    m = LINE.fullmatch(last)
    assert m, last
    recorded = _recorded(run_dir / "records.jsonl")
    assert int(m.group(1)) == recorded and 1 <= recorded < N_SAMPLES and int(m.group(2)) == N_SAMPLES
    assert m.group(3) == str(run_dir)

    resumed = start_run(run_dir, cache, tmp_path / "resume.log", extra)
    assert resumed.wait(timeout=600) == 0
    assert f"resuming: {recorded} of {N_SAMPLES} samples already recorded" in (tmp_path / "resume.log").read_text()
    assert _recorded(run_dir / "records.jsonl") == N_SAMPLES


@pytest.mark.integration
def test_ctrl_c_before_the_first_answer_ends_the_same_way(tmp_path, tiny_llm):
    run_dir, log = tmp_path / "run", tmp_path / "run.log"
    proc = start_run(run_dir, tmp_path / "cache", log, [f"generator.model={tiny_llm}", *TINY_ANSWERS])
    deadline = time.monotonic() + 300
    while not (run_dir / ".hydra").exists():  # Hydra has composed the config: the run is loading
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=120) == 130
    out = log.read_text()
    assert "Traceback" not in out and "KeyboardInterrupt" not in out
    last = out.strip().splitlines()[-1]
    assert LINE.fullmatch(last) or re.fullmatch(
        rf"interrupted before any answer was recorded( in {re.escape(str(run_dir))})?; run the same command again to "
        r"resume", last), out[-2000:]
