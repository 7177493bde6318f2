"""The house as docs/architecture.md draws it: arrows point downward, no circle, no hidden arrow.

The checker (tests/house_rules.py) is run on this repository, and on small trees that each hold one kind of
violation, so a change to the checker that blinds it to a kind fails here. ruff enforces two of the rules at
edit time too (pyproject.toml: TID252, no relative import beyond the parent; TID251, no `import_module` or
`importlib.util` outside eval/registry.py); the last test checks that ruff still flags them.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from experiments.arms import ARMS
from tests import house_rules
from tests.conftest import ROOT

# (file, arm name) -> why that file may spell it
ARM_NAMES_ALLOWED = {
    ("experiments/importers/predictions.py", "rag"): "LaRA names its files rag_preds_* and full_preds_*",
    ("eval/benchmarks/lara.py", "rag"): "LaRA's own name for its retrieval prompts",
    ("rag/arm.py", "rag"): "the arm class states its own name",
    ("longctx/arm.py", "longctx"): "the arm class states its own name",
    ("experiments/report/page/sections/routing.py", "router"): "the router table's column heading",
    ("experiments/report/router/evaluate.py", "router"): "the learned router's estimate in router.json",
    ("experiments/report/router/fit.py", "router"): "one split's learned-router mean, a key of a local dict",
}


@pytest.fixture(scope="module")
def tree():
    return house_rules.read_tree(ROOT)


@pytest.fixture(scope="module")
def found(tree):
    return house_rules.check(tree, set(ARMS.names()), ARM_NAMES_ALLOWED)


def test_the_tree_has_modules_in_every_package(tree):
    assert {m.split(".")[0] for m in tree.modules} == set(house_rules.PACKAGES)
    assert len(tree.modules) > 100


@pytest.mark.parametrize("kind", house_rules.KINDS)
def test_the_repository_keeps_the_rule(found, kind):
    assert not found[kind], f"{kind}:\n" + "\n".join(map(str, found[kind]))


def test_every_allowed_arm_name_is_still_there(tree):
    """An allow-list entry whose file no longer spells the name is removed, so the list stays short."""
    stale = house_rules.arm_names(tree, set(ARMS.names()), {})
    spelled = {(line.split(":")[0], line.rsplit("'", 2)[1]) for line in stale}
    assert set(ARM_NAMES_ALLOWED) <= spelled, set(ARM_NAMES_ALLOWED) - spelled


# -- the checker sees every kind of violation ------------------------------------------------------------------

# a small clean house: the real floors apply (its modules carry real names)
CLEAN = {
    "eval/__init__.py": "",
    "eval/registry.py": "import importlib\n\ndef get(name):\n    return importlib.import_module(name)\n",
    "eval/sample.py": "from eval.registry import get\n",
    "llm/__init__.py": '"""The generators."""\nfrom llm.gen import Generator\n\n__all__ = ["Generator"]\n',
    "llm/gen.py": "from eval.sample import get\n\nclass Generator:\n    pass\n",
    "llm/other.py": "from llm import Generator\n",
    "llm/prompt.py": "",
    "rag/__init__.py": "", "longctx/__init__.py": "", "testset/__init__.py": "",
    "experiments/__init__.py": "",
    "experiments/records.py": "",
    "experiments/arms/__init__.py": "ARMS = ['rag', 'longctx', 'closedbook']\n",
    "experiments/run.py": "from experiments.records import *\nfrom llm.gen import Generator\n",
    "experiments/report/__init__.py": "",
    "experiments/report/runs.py": "from experiments.records import *\n",
    "experiments/report/verdict/__init__.py": "",
    "experiments/report/verdict/rows.py": "from ..runs import *\nfrom . import decision\n",
    "experiments/report/verdict/decision.py": "",
    "experiments/report/page/__init__.py": "",
    "experiments/report/page/build.py": "from ..verdict.rows import *\nfrom .cells import *\n",
    "experiments/report/page/cells.py": "",
    "testsupport/__init__.py": "",
    "testsupport/doubles.py": "from llm.gen import Generator\n",
    "testsupport/scripted.py": "",
    "perf/common.py": "from testsupport.doubles import *\nfrom experiments.report.page.build import *\n",
}
ARMS_HERE = {"rag", "longctx", "closedbook"}

# case -> (the kind it is, file, text appended to it or the whole file when it is new); each case adds one
# violation (an arrow into a module that imports nothing, so no circle comes with it)
VIOLATIONS = {
    "upward, by an import": ("upward import", "eval/sample.py", "from llm.prompt import Prompt\n"),
    "upward, inside a function": ("upward import", "eval/sample.py", "def f():\n    import rag.retrievers\n"),
    "upward, by a string": ("upward import", "eval/sample.py", 'TARGET = "llm.prompt:Prompt"\n'),
    "sideways between arms": ("upward import", "rag/x.py", "from longctx import truncation\n"),
    "product imports testsupport": ("import of testsupport or perf", "llm/gen.py",
                                    "from testsupport import scripted\n"),
    "product imports perf": ("import of testsupport or perf", "experiments/run.py", "from perf.common import ROOT\n"),
    "a floor reaches up": ("floor", "experiments/report/runs.py", "from experiments.report.page.cells import *\n"),
    "a floor reaches up, relatively": ("floor", "experiments/report/verdict/rows.py", "from ..page import cells\n"),
    "the report reaches the runner": ("floor", "experiments/report/runs.py", "import experiments.run\n"),
    "a module on no floor": ("no floor", "experiments/report/stray.py", "from experiments.report.runs import *\n"),
    "a circle": ("circle", "eval/registry.py", "from eval.sample import get\n"),
    "a circle, relatively": ("circle", "experiments/report/verdict/decision.py", "from .rows import *\n"),
    "a circle through an __init__ that defines something": (
        "circle", "llm/__init__.py", "from llm.other import *\nDEFAULT = 1\n"),
    "import_module": ("computed import", "llm/gen.py", "import importlib\nimportlib.import_module('x')\n"),
    "a bare import_module": ("computed import", "llm/gen.py", "from importlib import import_module\n"),
    "__import__": ("computed import", "experiments/run.py", "def load(name):\n    return __import__(name)\n"),
    "importlib.util": ("computed import", "llm/gen.py", "import importlib.util\n"),
    "from importlib.util": ("computed import", "eval/sample.py", "from importlib.util import find_spec\n"),
    "an arm name in experiments": ("arm name", "experiments/report/runs.py", "if arm == 'closedbook':\n    pass\n"),
    "an arm name in another package": ("arm name", "llm/gen.py", "ROLE = 'longctx'\n"),
}


def _house(where: Path, extra: tuple[str, str] | None = None) -> Path:
    files = dict(CLEAN)
    if extra:
        name, text = extra
        files[name] = files.get(name, "") + text
    for name, text in files.items():
        (where / name).parent.mkdir(parents=True, exist_ok=True)
        (where / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return where


def test_the_small_house_is_clean(tmp_path):
    found = house_rules.check(_house(tmp_path), ARMS_HERE)
    assert not any(found.values()), found


@pytest.mark.parametrize("case", sorted(VIOLATIONS))
def test_the_checker_flags_each_kind_of_violation(tmp_path, case):
    kind, name, text = VIOLATIONS[case]
    found = house_rules.check(_house(tmp_path, (name, text)), ARMS_HERE)
    assert found[kind], f"{case}: not flagged"
    assert [k for k, v in found.items() if v] == [kind], found


def test_ruff_flags_relative_imports_beyond_the_parent_and_computed_imports(tmp_path):
    """The project's ruff settings, on a package whose module imports from its grandparent and by a computed
    name, and on a copy of eval/registry.py, where a computed import is the job."""
    _house(tmp_path, ("experiments/report/verdict/rows.py", "import importlib\nimportlib.import_module('x')\n"))
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text(encoding="utf-8"), encoding="utf-8")
    res = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise",
                          "--select", "TID", "."], cwd=tmp_path, capture_output=True, text=True)
    lines = res.stdout.splitlines()
    assert any("verdict/rows.py" in line and "TID252" in line for line in lines), res.stdout + res.stderr
    assert any("verdict/rows.py" in line and "TID251" in line for line in lines), res.stdout
    assert not any("eval/registry.py" in line for line in lines), res.stdout
