"""The house as docs/architecture.md draws it: arrows point downward, no circle, no hidden arrow.

Every `import` / `from ... import` of a project module counts, at module level or inside a function, and so
does a string naming a project module (`"llm.factory:build_generator"`, a registry entry): a hidden arrow is
still an arrow. The rules are stated once here as (package, may import) and checked on the whole tree.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGES = ("eval", "llm", "rag", "longctx", "testset", "experiments")
# what each top-level package may import besides itself (experiments -> rag|longctx -> llm -> eval)
BELOW = {"eval": set(), "llm": {"eval"}, "rag": {"eval", "llm"}, "longctx": {"eval", "llm"},
         "testset": {"eval", "llm"}, "experiments": {"eval", "llm", "rag", "longctx"}}
# inside experiments/report: the statistics compute rows, the page renders them
REPORT_RULES = {
    "experiments.report.verdict": ("experiments.report.router", "experiments.report.page", "experiments.report.plots",
                                   "experiments.report.decisions", "experiments.simulate"),
    "experiments.report.router": ("experiments.report.page", "experiments.report.plots", "experiments.report.decisions",
                                  "experiments.report.verdict.rows", "experiments.report.verdict.crossfit",
                                  "experiments.report.verdict.power", "experiments.simulate"),
    "experiments.report.plots": ("experiments.report.page", "experiments.simulate"),
    "experiments.report": ("experiments.simulate", "experiments.importers", "experiments.run", "testset"),
    "experiments.arms": ("experiments.report", "experiments.simulate", "experiments.importers", "experiments.run"),
}
MODULE_NAME = re.compile(r"((?:eval|llm|rag|longctx|testset|experiments)(?:\.\w+)+)(?::\w+)?")


def _modules() -> dict[str, Path]:
    out = {}
    for top in PACKAGES:
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


MODULES = _modules()


def _imports(path: Path) -> set[str]:
    """The project modules `path` imports, by statement or by naming them in a string."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in PACKAGES:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                found.add(full if full in MODULES else node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] in PACKAGES}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = MODULE_NAME.fullmatch(node.value)
            if match and match.group(1) in MODULES:
                found.add(match.group(1))
    return found


GRAPH = {name: _imports(path) - {name} for name, path in MODULES.items()}


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def test_the_tree_has_modules_in_every_package():
    assert {m.split(".")[0] for m in MODULES} == set(PACKAGES)
    assert len(MODULES) > 100


def test_top_level_packages_import_only_what_lies_below_them():
    wrong = [f"{m} -> {d}" for m, deps in GRAPH.items() for d in deps
             if d.split(".")[0] != m.split(".")[0] and d.split(".")[0] not in BELOW[m.split(".")[0]]]
    assert not wrong, "upward or sideways imports:\n" + "\n".join(sorted(wrong))


@pytest.mark.parametrize("area", sorted(REPORT_RULES))
def test_inside_experiments_the_statistics_do_not_reach_up(area):
    wrong = [f"{m} -> {d}" for m, deps in GRAPH.items() if _under(m, area) for d in deps
             if any(_under(d, f) for f in REPORT_RULES[area]) and not _under(d, area)]
    assert not wrong, f"{area} reaches up:\n" + "\n".join(sorted(wrong))


def test_the_page_renders_and_nothing_in_the_report_renders_through_it():
    """Only the page (and the report's entry point) imports experiments.report.page: the rows are computed
    below it, then rendered (summarize, then present)."""
    wrong = [f"{m} -> {d}" for m, deps in GRAPH.items() if _under(m, "experiments.report")
             and not _under(m, "experiments.report.page") and m != "experiments.report.__main__"
             for d in deps if _under(d, "experiments.report.page")]
    assert not wrong, wrong


def test_no_module_imports_itself_round_a_circle():
    """Tarjan's strongly connected components over the module graph: every component is one module."""
    index, low, stack, on, circles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in GRAPH.get(v, ()):
            if w not in MODULES:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in sorted(MODULES):
        if v not in index:
            visit(v)
    # a package's __init__ that re-exports its own modules is the one circle Python allows by design
    circles = [c for c in circles if not all(_under(m, c[0]) for m in c)]
    assert not circles, f"import circles: {circles}"


def test_only_the_registry_imports_a_module_by_a_computed_name():
    calls = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "import_module"):
                calls.append(name)
    assert set(calls) <= {"eval.registry"}, calls


def test_no_code_outside_the_arm_modules_names_an_arm():
    """Outside experiments/arms/ (and the arms' own packages rag/ and longctx/), code asks the spec for a
    role or a name rather than spelling "rag" or "longctx"."""
    allowed = {"experiments/importers/predictions.py": "LaRA names its files rag_preds_* and full_preds_*"}
    found = []
    for name, path in MODULES.items():
        where = str(path.relative_to(ROOT))
        if not _under(name, "experiments") or _under(name, "experiments.arms") or where in allowed:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in ("rag", "longctx"):
                found.append(f"{where}:{node.lineno}")
    assert not found, found
