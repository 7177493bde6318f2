"""The house as docs/architecture.md draws it: arrows point downward, no circle, no hidden arrow, runs read one way.

The checker (tests/house_rules.py) is run on this repository, and on small trees that each hold one violation
(`VIOLATIONS`: at least one per kind, and every way that slipped past an earlier checker), so a change to the
checker that blinds it to one fails here. ruff enforces two of the rules at edit time too (pyproject.toml: TID252,
no relative import beyond the parent; TID251, no `import_module`, `importlib.util`, `pkgutil.resolve_name` or
`runpy` outside eval/registry.py); the last test checks that ruff still flags them.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from experiments.arms import ARMS, specs
from experiments.arms.closedbook import ClosedBookSpec
from experiments.arms.longctx import LongContextSpec
from experiments.arms.rag import RagSpec
from experiments.arms.selfroute import SelfRouteSpec
from tests import house_rules
from tests.conftest import ROOT, compose

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


# the knobs an arm's own spec writes, which the report reads through the spec: each arm's table columns, and the two
# it writes but does not show (RAG's token budget, the learned router file's hash)
ARM_KNOBS = {knob for spec in specs() for knob in spec.columns} | {"rag_budget_tokens", "router_sha256"}
EVERY_RUN_KNOBS = {"arm", "benchmark", "generator", "label"}  # what the runner and the importer write for every arm


@pytest.fixture(scope="module")
def tree():
    return house_rules.read_tree(ROOT)


@pytest.fixture(scope="module")
def found(tree):
    return house_rules.check(tree, set(ARMS.names()), ARM_NAMES_ALLOWED, ARM_KNOBS)


def test_the_tree_has_modules_in_every_package(tree):
    assert {m.split(".")[0] for m in tree.modules} == set(house_rules.PACKAGES)
    assert len(tree.modules) > 100


def test_every_package_has_a_place_in_the_map():
    assert set(house_rules.BELOW) == set(house_rules.PACKAGES)
    assert not set(house_rules.PRODUCT) & set(house_rules.NOT_PRODUCT)
    assert all(below <= set(house_rules.PACKAGES) for below in house_rules.BELOW.values())


@pytest.mark.parametrize("kind", house_rules.KINDS)
def test_the_repository_keeps_the_rule(found, kind):
    assert not found[kind], f"{kind}:\n" + "\n".join(map(str, found[kind]))


def test_the_knob_check_knows_every_knob_an_arm_writes():
    """Each spec's knobs of a composed config with every optional knob set (the learned router's are RAG's, long
    context's and its file's hash, which needs a trained file) are on the list the knob check reads, and none of
    them is a knob every run has."""
    cfg = compose(["arm=selfroute", "rag.budget_tokens=512", "longctx.budget_tokens=512", "longctx.truncation=middle",
                   "chunker=sentence", "reranker=cross_encoder"])
    written = {knob for spec in (RagSpec, LongContextSpec, SelfRouteSpec, ClosedBookSpec) for knob in spec.knobs(cfg)}
    assert {"top_k", "chunk_size", "retriever", "rag_budget_tokens", "budget_tokens", "chunker"} <= written
    assert written <= ARM_KNOBS and not ARM_KNOBS & EVERY_RUN_KNOBS


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
    "product imports testsupport": ("import of not product", "llm/gen.py",
                                    "from testsupport import scripted\n"),
    "product imports perf": ("import of not product", "experiments/run.py", "from perf.common import ROOT\n"),
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
    "an arm name in a match statement": (
        "arm name", "experiments/report/runs.py",
        "def role(arm):\n    match arm:\n        case 'closedbook':\n            return 1\n"),
    # issue 52: what slipped past the first round, and its neighbours
    "a report module opens records.jsonl itself": (
        "run folder read", "experiments/report/verdict/decision.py",
        "import json\n\ndef records(run):\n"
        "    return [json.loads(line) for line in open(run.path / 'records.jsonl')]\n"),
    "a page section calls read_records on a run folder": (
        "run folder read", "experiments/report/page/cells.py",
        "from experiments.records import read_records\n\ndef rows(run):\n"
        "    return read_records(run.path / 'records.jsonl')\n"),
    "the record reader through the schema module, on a path it is given": (
        "run folder read", "experiments/report/page/cells.py",
        "from experiments import records as schema\n\ndef rows(path):\n    return schema.read_records(path)\n"),
    "the record reader, imported relatively": (
        "run folder read", "experiments/report/page/cells.py",
        "from ...records import RecordStore\n\ndef rows(path):\n    return RecordStore(path).load()\n"),
    "the pairwise judgments opened outside load_runs": (
        "run folder read", "experiments/report/page/cells.py",
        "def judged(run):\n    return run.path / 'pairwise.jsonl'\n"),
    "a perf script reads records.jsonl with json.loads": (
        "run folder read", "perf/common.py",
        "import json\n\ndef records(run_dir):\n"
        "    return [json.loads(x) for x in (run_dir / 'records.jsonl').open()]\n"),
    "a perf script finds runs itself": ("run folder read", "perf/common.py",
                                        "from experiments.report.runs import find_runs\nRUNS = find_runs(['out'])\n"),
    "pkgutil.resolve_name with a computed name": (
        "computed import", "eval/sample.py",
        "import pkgutil\nBUILD = pkgutil.resolve_name('llm' + '.factory:build_generator')\n"),
    "from pkgutil import resolve_name": ("computed import", "eval/sample.py", "from pkgutil import resolve_name\n"),
    "a module from sys.modules": ("computed import", "eval/sample.py",
                                  "import sys\nRUN = getattr(sys.modules['experiments'], 'run')\n"),
    "sys.modules.get": ("computed import", "llm/gen.py", "import sys\nEXPERIMENTS = sys.modules.get('experiments')\n"),
    "runpy": ("computed import", "eval/sample.py", "import runpy\nrunpy.run_module('experiments' + '.run')\n"),
    "from runpy import run_path": ("computed import", "llm/gen.py", "from runpy import run_path\n"),
    "exec of an import": ("computed import", "eval/sample.py", "exec('import ' + 'experiments')\n"),
    "__import__ by getattr": ("computed import", "eval/sample.py",
                              "import builtins\nRUN = getattr(builtins, '__import__')('experiments')\n"),
    "a new top-level package that imports experiments, imported from eval": (
        ("no floor", "upward import", "circle"),  # eval -> newpkg -> experiments.run -> llm.gen -> eval
        {"newpkg/__init__.py": "import experiments.run\n", "eval/sample.py": "import newpkg\n"}),
    "a new top-level package, imported by nobody": ("no floor", {"newpkg/tools.py": "import experiments.run\n"}),
    "a new top-level module": ("no floor", {"helpers.py": "from experiments.run import *\n"}),
    "a product module imports the tests": ("import of not product", "llm/gen.py",
                                           "from tests.tiny_models import tiny_llama\n"),
    "testsupport imports perf": ("upward import", "testsupport/scripted.py", "from perf.common import ROOT\n"),
    # issue 52, item 5: what a loss reason or a price needs from an arm, the arm's spec says
    "the report reads top_k from a run's knobs": ("arm knob read", "experiments/report/verdict/decision.py",
                                                  "def depth(run):\n    return run.knobs.get('top_k')\n"),
    "a page section reads chunk_size by subscript": ("arm knob read", "experiments/report/page/cells.py",
                                                     "def size(knobs):\n    return knobs['chunk_size']\n"),
    "the report reads the retriever from a run's saved config": (
        "arm knob read", "experiments/report/runs.py",
        "def lexical(run):\n    return (run.config.get('retriever') or {}).get('kind') == 'bm25'\n"),
    "the report asks whether a run has a top_k": ("arm knob read", "experiments/report/page/build.py",
                                                  "def rag(run):\n    return 'top_k' in run.knobs\n"),
}
KNOBS_HERE = {"top_k", "chunk_size", "retriever"}


def _house(where: Path, extra: dict[str, str] | None = None) -> Path:
    files = dict(CLEAN)
    for name, text in (extra or {}).items():
        files[name] = files.get(name, "") + text
    for name, text in files.items():
        (where / name).parent.mkdir(parents=True, exist_ok=True)
        (where / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return where


def _planted(case: str) -> tuple[set[str], dict[str, str]]:
    """The kinds a case must be flagged as (and no other), and the text it adds to each file."""
    kind, *change = VIOLATIONS[case]
    return ({kind} if isinstance(kind, str) else set(kind)), (change[0] if len(change) == 1 else {change[0]: change[1]})


def test_the_small_house_is_clean(tmp_path):
    found = house_rules.check(_house(tmp_path), ARMS_HERE, knobs=KNOBS_HERE)
    assert not any(found.values()), found


@pytest.mark.parametrize("case", sorted(VIOLATIONS))
def test_the_checker_flags_each_kind_of_violation(tmp_path, case):
    kinds, change = _planted(case)
    found = house_rules.check(_house(tmp_path, change), ARMS_HERE, knobs=KNOBS_HERE)
    assert {k for k, v in found.items() if v} == kinds, (case, found)


def test_asking_whether_a_module_is_loaded_imports_nothing(tmp_path):
    """`"transformers" in sys.modules` (whether a package is loaded) is no computed import; reading from it is."""
    quiet = {"llm/gen.py": "import sys\nLOADED = 'transformers' in sys.modules or 'x' not in sys.modules\n"}
    assert not any(house_rules.check(_house(tmp_path / "a", quiet), ARMS_HERE).values())
    read = {"llm/gen.py": "import sys\nLOADED = 'x' in sys.modules and sys.modules['x']\n"}
    assert house_rules.check(_house(tmp_path / "b", read), ARMS_HERE)["computed import"]


def test_the_arm_reads_its_own_knobs_and_the_report_asks_its_spec(tmp_path):
    """An arm's spec and the runner read the arm's knobs by name; the report asks the spec, and reads by name only
    the knobs every run has (the generator, the benchmark)."""
    quiet = {"experiments/arms/__init__.py": "def depth(knobs):\n    return knobs.get('top_k')\n",
             "experiments/run.py": "def short(knobs):\n    return knobs['chunk_size']\n",
             "experiments/report/runs.py": "def depth(run):\n    return run.spec.retrieval_depth(run.knobs)\n\n"
                                           "def model(run):\n    return run.knobs.get('generator')\n"}
    assert not any(house_rules.check(_house(tmp_path, quiet), ARMS_HERE, knobs=KNOBS_HERE).values())


def test_every_kind_has_a_planted_case():
    assert {k for case in VIOLATIONS for k in _planted(case)[0]} == set(house_rules.KINDS)


def test_what_git_ignores_is_not_read(tmp_path):
    """A build folder or a virtual environment holds Python files that are no package of the project."""
    if not shutil.which("git"):
        pytest.skip("no git")
    _house(tmp_path, {"build/lib/eval/sample.py": "import experiments.run\n", ".venv/lib/x.py": "import runpy\n",
                      ".gitignore": "build/\n"})
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert house_rules.top_level(tmp_path) == sorted({name.split("/")[0] for name in CLEAN})
    found = house_rules.check(tmp_path, ARMS_HERE)
    assert not any(found.values()), found
    (tmp_path / ".gitignore").write_text("")
    assert house_rules.check(tmp_path, ARMS_HERE)["no floor"] == [
        "build holds Python files and is on no floor (place it in tests/house_rules.py: BELOW, or NOT_PRODUCT)"]


def test_ruff_flags_relative_imports_beyond_the_parent_and_computed_imports(tmp_path):
    """The project's ruff settings, on a package whose module imports from its grandparent and by a computed
    name (each of the banned ways), and on a copy of eval/registry.py, where a computed import is the job."""
    _house(tmp_path, {"experiments/report/verdict/rows.py": "import importlib\nimportlib.import_module('x')\n",
                      "eval/sample.py": "import pkgutil\nimport runpy\n\nBUILD = pkgutil.resolve_name('llm' + '.x:y')\n"
                                        "runpy.run_module('experiments' + '.run')\n",
                      "llm/gen.py": "from pkgutil import resolve_name\nfrom runpy import run_path\n"})
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text(encoding="utf-8"), encoding="utf-8")
    res = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise",
                          "--select", "TID", "."], cwd=tmp_path, capture_output=True, text=True)
    lines = res.stdout.splitlines()
    assert any("verdict/rows.py" in line and "TID252" in line for line in lines), res.stdout + res.stderr
    assert any("verdict/rows.py" in line and "TID251" in line for line in lines), res.stdout
    for where, banned in [("eval/sample.py", "`pkgutil.resolve_name`"), ("eval/sample.py", "`runpy`"),
                          ("llm/gen.py", "`pkgutil.resolve_name`"), ("llm/gen.py", "`runpy")]:
        assert any(where in line and "TID251" in line and banned in line for line in lines), (where, banned, res.stdout)
    assert not any("eval/registry.py" in line for line in lines), res.stdout
