"""The getting-started commands run as docs/getting-started.md writes them: each `make` line expands (`make -n`) to
the `python -m` command the page says it runs, and the cheap one, the decision's dry run on the bundled example,
runs for real, through `perf/first_run.py` (which times exactly that command: its smoke run too). `make` itself
is not run for real here: its `install` prerequisite would build a `.venv` in the checkout."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT

PAGE = ROOT / "docs" / "getting-started.md"
# each `make` line of the page, and what `make -n` must show it runs
EXPANSIONS = {
    "make install": "--require-hashes -r requirements.lock.txt",
    "make demo": "-m experiments.demo",
    "make test": '-m pytest -q -m "not integration"',
    "make decide DRY_RUN=1": "-m experiments.decide examples/docs examples/questions.jsonl run.dry_run=true",
    "make decide": "-m experiments.decide examples/docs examples/questions.jsonl",
}


def _commands() -> list[str]:
    blocks = re.findall(r"^```bash\n(.*?)^```", PAGE.read_text(encoding="utf-8"), flags=re.M | re.S)
    return [line.split("#")[0].strip() for block in blocks for line in block.splitlines() if line.strip()]


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize("line", sorted(EXPANSIONS))
def test_each_make_line_of_getting_started_runs_what_the_page_says(line):
    assert line in _commands(), f"{line!r} is no longer on {PAGE.name}: update EXPANSIONS"
    # -B: every target as if out of date, so `make install` shows its recipe where the venv is already installed
    res = subprocess.run(["make", "-n", "-B", *line.split()[1:]], cwd=ROOT, capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0, res.stderr
    shown = " ".join(res.stdout.replace("\\\n", " ").split())  # continuation lines joined, spaces collapsed
    assert EXPANSIONS[line] in shown, res.stdout[-1500:]


@pytest.mark.integration  # the bundled SmolLM2 tokenizer and MiniLM: tens of seconds on 2 cores
def test_the_dry_run_of_getting_started_runs(tmp_path):
    """`make decide DRY_RUN=1`'s command on the example: every config point estimated, nothing generated."""
    res = subprocess.run([sys.executable, "perf/first_run.py", "--steps", "dry_run", "--out", str(tmp_path)],
                         cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-3000:]
    figures = json.loads(res.stdout.strip().splitlines()[-1])
    step = figures["steps"]["dry_run"]
    assert step["returncode"] == 0 and step["seconds"] > 0
    assert "dry run" in (tmp_path / "dry_run.log").read_text(encoding="utf-8").lower()  # the step's output, kept
    assert step["command"].endswith(EXPANSIONS["make decide DRY_RUN=1"].removeprefix("-m ").replace(
        "examples/docs examples/questions.jsonl", f"{ROOT}/examples/docs {ROOT}/examples/questions.jsonl --out "
        f"{tmp_path}/dry_run"))
    estimates = sorted((tmp_path / "dry_run").glob("*/dry_run.json"))
    assert len(estimates) == 8  # long context crossed with the four RAG configs, and the four RAG configs
    for path in estimates:
        estimate = json.loads(path.read_text(encoding="utf-8"))
        assert estimate["questions"] == 20 and estimate["prompt_tokens"] > 0 and estimate["skipped"] == 0
    assert not list((tmp_path / "dry_run").rglob("records.jsonl")) and not (tmp_path / "dry_run" / "report.md").exists()
