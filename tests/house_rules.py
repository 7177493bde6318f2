"""The house's rules as one checker over a source tree (docs/architecture.md draws the house).

`check(root, arm_names)` reads every module of the tree at `root` and returns its violations by kind (see
`KINDS`). tests/test_layers.py runs it on this repository and on small trees with one violation each, so a
refactor of the checker cannot blind it without a test failing.

What counts as an arrow from module A to module B:
- `import B` / `from B import x` / `from B.x import y`, at module level or inside a function;
- a relative import (`from ..page import build` inside `experiments/report/verdict/` is an arrow to
  `experiments.report.page.build`), resolved against A's package;
- a string naming B (`"llm.factory:build_generator"`, a lazy registry entry): a hidden arrow is still an arrow.
An `__init__` that defines nothing (docstring, imports, `__all__`) is a window onto the modules it imports: an
arrow into it counts as arrows into them, so a circle through it is a real circle between its modules.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

PRODUCT = ("eval", "llm", "rag", "longctx", "testset", "experiments")
NOT_PRODUCT = ("testsupport", "perf")  # test doubles and performance scripts: nothing in the product imports them
PACKAGES = PRODUCT + NOT_PRODUCT

# what each top-level package may import besides itself (experiments -> rag|longctx -> llm -> eval)
BELOW = {"eval": set(), "llm": {"eval"}, "rag": {"eval", "llm"}, "longctx": {"eval", "llm"},
         "testset": {"eval", "llm"}, "experiments": {"eval", "llm", "rag", "longctx"},
         "testsupport": set(PRODUCT), "perf": set(PRODUCT) | {"testsupport"}}

# Inside experiments/: floors, each a set of modules (a name covers its submodules; the longest name wins) and
# the ALLOW-list of what they may import (other floors by name, or modules), besides their own floor.
# A module of experiments/ on no floor is itself a violation: a new module is placed here on purpose.
FLOORS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "run records": (("experiments.records", "experiments.redact", "experiments.folder_names", "experiments.logs",
                     "experiments.eta", "experiments.versions", "experiments.retime", "experiments.run_metrics",
                     "experiments.context_cuts", "experiments.run_writer"), ()),
    "arms": (("experiments.arms",), ()),
    "runner": (("experiments.run", "experiments.dry_run", "experiments.importers", "experiments.import",
                "experiments.score"),
               ("run records", "arms")),
    "run reading": (("experiments.report.runs", "experiments.report.data_mix", "experiments.report.settings",
                     "experiments.report.halves", "experiments.report.pricing", "experiments.report.pairwise",
                     "experiments.report.loading", "experiments.pairwise"), ("run records", "arms")),
    "statistics": (("experiments.report.verdict", "experiments.report.summary", "experiments.report.losses",
                    "experiments.report.overlap", "experiments.report.latency", "experiments.report.reproducibility",
                    "experiments.report.upper_bound", "experiments.report.timing_notes", "experiments.report.overview",
                    "experiments.report.blas_threads"),
                   ("run records", "arms", "run reading")),
    # the router reads the verdict's decision, family-wise control and oracle, not how its rows are built
    "router": (("experiments.report.router",),
               ("run records", "arms", "run reading", "experiments.report.verdict.decision",
                "experiments.report.verdict.family", "experiments.report.verdict.oracle")),
    "decisions": (("experiments.report.decision_order", "experiments.report.diagnostics",
                   "experiments.report.other_arms", "experiments.report.whatif", "experiments.report.questions",
                   "experiments.report.export"),
                  ("run records", "arms", "run reading", "statistics", "router")),
    "figures": (("experiments.report.plots",), ("run records", "arms", "run reading", "statistics")),
    "page": (("experiments.report.page",),
             ("run records", "arms", "run reading", "statistics", "router", "decisions", "figures")),
    "planning": (("experiments.plan", "experiments.simulate"),
                 ("run records", "arms", "run reading", "statistics", "router", "decisions")),
    "entry points": (("experiments.report.__main__", "experiments.demo", "experiments.decide"), ("page", "runner")),
}

REGISTRY = "eval.registry"  # the one module that imports by a computed name
KINDS = ("upward import", "import of testsupport or perf", "floor", "no floor", "circle", "computed import",
         "arm name")
_MODULE_NAME = re.compile(rf"((?:{'|'.join(PACKAGES)})(?:\.\w+)+)(?::\w+)?")


@dataclass
class Tree:
    root: Path
    modules: dict[str, Path]
    syntax: dict[str, ast.Module] = field(default_factory=dict)
    graph: dict[str, set[str]] = field(default_factory=dict)


def read_tree(root: Path) -> Tree:
    modules = {}
    for top in PACKAGES:
        for path in sorted((root / top).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    tree = Tree(root, modules)
    tree.syntax = {name: ast.parse(path.read_text(encoding="utf-8"), str(path)) for name, path in modules.items()}
    tree.graph = {name: imports(tree, name) - {name} for name in modules}
    return tree


def under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _package_of(tree: Tree, name: str) -> str:
    return name if tree.modules[name].name == "__init__.py" else name.rpartition(".")[0]


def _absolute(tree: Tree, name: str, node: ast.ImportFrom) -> str | None:
    """The module a `from ... import` names, relative imports resolved against `name`'s package."""
    if not node.level:
        return node.module
    parts = _package_of(tree, name).split(".")
    if node.level - 1 >= len(parts):
        return None  # beyond the top-level package: Python refuses it too
    base = ".".join(parts[:len(parts) - (node.level - 1)])
    return f"{base}.{node.module}" if node.module else base


def imports(tree: Tree, name: str) -> set[str]:
    """The project modules `name` imports, by statement (absolute or relative) or by naming them in a string."""
    found = set()
    for node in ast.walk(tree.syntax[name]):
        if isinstance(node, ast.ImportFrom):
            module = _absolute(tree, name, node)
            if module and module.split(".")[0] in PACKAGES:
                for alias in node.names:
                    full = f"{module}.{alias.name}"
                    found.add(full if full in tree.modules else module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] in PACKAGES}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = _MODULE_NAME.fullmatch(node.value)
            if match and match.group(1) in tree.modules:
                found.add(match.group(1))
    return found


def upward_imports(tree: Tree) -> list[str]:
    return sorted(f"{m} -> {d}" for m, deps in tree.graph.items() for d in deps
                  if d.split(".")[0] != m.split(".")[0] and d.split(".")[0] not in BELOW[m.split(".")[0]]
                  and d.split(".")[0] not in NOT_PRODUCT)


def imports_of_testsupport_or_perf(tree: Tree) -> list[str]:
    return sorted(f"{m} -> {d}" for m, deps in tree.graph.items() if m.split(".")[0] in PRODUCT
                  for d in deps if d.split(".")[0] in NOT_PRODUCT)


def floor_of(module: str) -> str | None:
    """The floor of a module of experiments/ (the longest matching name wins); None when it has none."""
    best, floor = "", None
    for name, (members, _) in FLOORS.items():
        for member in members:
            if under(module, member) and len(member) > len(best):
                best, floor = member, name
    return floor


def _may_import(floor: str, module: str) -> bool:
    allowed = (floor,) + FLOORS[floor][1]
    return any(floor_of(module) == a if a in FLOORS else under(module, a) for a in allowed)


def _is_bare_package(tree: Tree, name: str) -> bool:
    """A package `__init__` above the floors (`experiments`, `experiments.report`): it holds floors."""
    return tree.modules[name].name == "__init__.py" and any(
        under(member, name) and member != name for members, _ in FLOORS.values() for member in members)


def unplaced_modules(tree: Tree) -> list[str]:
    return sorted(f"{m} is on no floor (place it in tests/house_rules.py FLOORS)" for m in tree.modules
                  if under(m, "experiments") and floor_of(m) is None and not _is_bare_package(tree, m))


def floor_violations(tree: Tree) -> list[str]:
    return sorted(f"{m} ({floor_of(m)}) -> {d} ({floor_of(d)})" for m, deps in tree.graph.items()
                  if under(m, "experiments") and floor_of(m) is not None
                  for d in deps if under(d, "experiments") and floor_of(d) is not None
                  and not _may_import(floor_of(m), d))


def defines_nothing(syntax: ast.Module) -> bool:
    """A module whose body is only a docstring, imports and `__all__`."""
    def idle(node: ast.stmt) -> bool:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return True
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            return True
        return (isinstance(node, (ast.Assign, ast.AnnAssign)) and
                all(getattr(t, "id", None) == "__all__" for t in getattr(node, "targets", [getattr(node, "target",
                                                                                                   None)])))
    return all(idle(node) for node in syntax.body)


def _through_windows(tree: Tree) -> dict[str, set[str]]:
    """The graph with every arrow into an `__init__` that defines nothing replaced by arrows into what it imports."""
    windows = {m for m, p in tree.modules.items() if p.name == "__init__.py" and defines_nothing(tree.syntax[m])}
    graph = {m: set(deps) for m, deps in tree.graph.items()}
    for _ in range(len(windows) + 1):
        changed = False
        for m, deps in graph.items():
            into = deps & windows - {m}
            if into:
                graph[m] = (deps - into) | {d for w in into for d in graph[w]} - {m}
                changed = True
        if not changed:
            break
    return graph


def circles(tree: Tree) -> list[list[str]]:
    """Tarjan's strongly connected components over the module graph seen through the windows: every component
    must be one module."""
    graph = _through_windows(tree)
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in graph:
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
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _computed_import(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if called in ("import_module", "__import__"):
            return called
    if isinstance(node, ast.Attribute) and node.attr == "util" and getattr(node.value, "id", None) == "importlib":
        return "importlib.util"
    if isinstance(node, ast.Import) and any(a.name.startswith("importlib.util") for a in node.names):
        return "importlib.util"
    if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("importlib"):
        names = {a.name for a in node.names}
        if node.module.startswith("importlib.util") or names & {"util", "import_module"}:
            return f"from {node.module} import {', '.join(sorted(names))}"
    return None


def computed_imports(tree: Tree) -> list[str]:
    """`import_module`, `__import__` and `importlib.util` anywhere but the registry (ruff's TID251 bans the first
    and the last too; it cannot see `__import__`)."""
    return sorted(f"{tree.modules[m].relative_to(tree.root)}:{node.lineno}: {what}"
                  for m, syntax in tree.syntax.items() if m != REGISTRY
                  for node in ast.walk(syntax) if (what := _computed_import(node)))


def arm_names(tree: Tree, names: set[str], allowed: dict[tuple[str, str], str]) -> list[str]:
    """A string that is an arm's name, in any product package outside experiments/arms: code there asks the arm
    spec for a role or a name rather than spelling it. `allowed`: (file, name) -> why that file may."""
    found = []
    for m, syntax in tree.syntax.items():
        where = str(tree.modules[m].relative_to(tree.root))
        if m.split(".")[0] not in PRODUCT or under(m, "experiments.arms"):
            continue
        for node in ast.walk(syntax):
            if isinstance(node, ast.Constant) and node.value in names and (where, node.value) not in allowed:
                found.append(f"{where}:{node.lineno}: {node.value!r}")
    return sorted(found)


def check(tree: Tree | Path, names: set[str], allowed_names: dict[tuple[str, str], str] | None = None
          ) -> dict[str, list]:
    """Every violation of a tree (or of the tree at a path), by kind (`KINDS`)."""
    tree = tree if isinstance(tree, Tree) else read_tree(tree)
    return {"upward import": upward_imports(tree),
            "import of testsupport or perf": imports_of_testsupport_or_perf(tree),
            "floor": floor_violations(tree),
            "no floor": unplaced_modules(tree),
            "circle": circles(tree),
            "computed import": computed_imports(tree),
            "arm name": arm_names(tree, names, allowed_names or {})}
