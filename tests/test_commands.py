"""One command line: every command a user runs is a `rol-*` entry point (pyproject.toml [project.scripts]) and
still runs as `python -m <module>`; an old module path says where its command moved and exits non-zero."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from eval.registry import Registry
from tests.conftest import ROOT

SCRIPTS = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
# entry point -> the `python -m` module that runs the same function
PYTHON_M = {"rol-run": "experiments.run", "rol-report": "experiments.report", "rol-decide": "experiments.decide",
            "rol-demo": "experiments.demo", "rol-score": "experiments.score", "rol-import": "experiments.import",
            "rol-pairwise": "experiments.pairwise", "rol-plan": "experiments.plan", "rol-testset": "testset",
            "rol-describe": "eval.describe"}
USER_COMMANDS = {"run", "report", "decide", "score", "import", "pairwise", "testset", "describe", "plan"}


def test_every_user_command_is_an_entry_point_with_a_python_m_twin():
    assert {f"rol-{c}" for c in USER_COMMANDS} <= set(SCRIPTS)
    assert set(SCRIPTS) == set(PYTHON_M)


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_the_entry_point_is_a_function_that_python_m_runs_too(script):
    target = SCRIPTS[script]
    assert callable(Registry("script", {script: target}).get(script)), target
    module = PYTHON_M[script]
    path = ROOT / module.replace(".", "/")
    source = path / "__main__.py" if path.is_dir() else path.with_suffix(".py")
    tree = ast.parse(source.read_text(encoding="utf-8"))
    guards = [n for n in tree.body if isinstance(n, ast.If) and "__main__" in ast.unparse(n.test)]
    runs = tree.body if source.name == "__main__.py" else [s for g in guards for s in g.body]
    called = {n.func.id if isinstance(n.func, ast.Name) else n.func.attr
              for s in runs for n in ast.walk(s) if isinstance(n, ast.Call)}
    imported = {a.asname or a.name: f"{n.module}:{a.name}" for n in tree.body if isinstance(n, ast.ImportFrom)
                for a in n.names}
    function = target.rpartition(":")[2]
    assert any(imported.get(c, f"{module}:{c}") in (target, f"{module}:{function}") for c in called), (
        f"`python -m {module}` does not run {target}")


def test_an_installed_entry_point_runs():
    script = Path(sys.executable).parent / "rol-plan"
    if not script.exists():
        pytest.skip("the entry points are not installed in this environment: `make install` (pyproject changed)")
    res = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and "--tolerance" in res.stdout, res.stderr


def test_the_old_rescoring_path_says_where_the_command_moved(tmp_path):
    preds = tmp_path / "preds.jsonl"
    preds.write_text('{"id": "a", "prediction": "x", "answers": ["x"]}\n', encoding="utf-8")
    res = subprocess.run([sys.executable, "-m", "eval.score", str(preds)], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode != 0
    assert "rol-score" in res.stderr and "python -m experiments.score" in res.stderr, res.stderr


def test_decide_takes_overrides_after_its_out_option(tmp_path, capsys):
    """`make decide DECIDE_DIR=... DRY_RUN=1` puts `--out DIR` before `run.dry_run=true`: both are read."""
    from experiments.decide import main

    assert main([str(tmp_path / "no-docs"), str(tmp_path / "q.jsonl"), "--out", str(tmp_path / "out"),
                 "run.dry_run=true"]) == 2
    assert "DOCS=" in capsys.readouterr().err  # parsed, then refused for the missing folder (not argparse's exit)
