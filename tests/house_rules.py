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
An import by a name no check can follow (`import_module(name)`, `__import__`, `exec`, `pkgutil.resolve_name`,
`runpy`, `sys.modules[...]`) is a computed import, allowed in eval/registry.py alone (and in the tests).

The tree is every top-level folder (or module) of `root` with Python files, save hidden ones and what git ignores;
each has its place in `BELOW` (product or not, `NOT_PRODUCT`), so no package carries an arrow unseen. Run folders
are read through `load_runs` alone: the few modules that may touch them are `RUN_FOLDER_ACCESS`. The report
(`REPORT`) reads no arm's own knob by name (`knobs.get("top_k")`, `config["retriever"]`): what it needs from an arm,
its spec says (experiments/arms/base.py: `retrieval_depth`, `token_budget`, `index_shape`, ...).
"""

from __future__ import annotations

import ast
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

PRODUCT = ("eval", "llm", "rag", "longctx", "testset", "experiments")
# test doubles, performance scripts and the tests: nothing in the product imports them
NOT_PRODUCT = ("testsupport", "perf", "tests")
PACKAGES = PRODUCT + NOT_PRODUCT

# what each top-level package may import besides itself (experiments -> rag|longctx -> llm -> eval); a top-level
# folder with Python files that is in neither this map nor NOT_PRODUCT is itself a violation ("no floor")
BELOW = {"eval": set(), "llm": {"eval"}, "rag": {"eval", "llm"}, "longctx": {"eval", "llm"},
         "testset": {"eval", "llm"}, "experiments": {"eval", "llm", "rag", "longctx"},
         "testsupport": set(PRODUCT), "tests": set(PRODUCT) | {"testsupport", "perf"},
         "perf": set(PRODUCT) | {"testsupport", "tests"}}  # perf/soak.py runs the crash tests' helpers

# Inside experiments/: floors, each a set of modules (a name covers its submodules; the longest name wins) and
# the ALLOW-list of what they may import (other floors by name, or modules), besides their own floor.
# A module of experiments/ on no floor is itself a violation: a new module is placed here on purpose.
FLOORS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "run records": (("experiments.records", "experiments.redact", "experiments.folder_names", "experiments.logs",
                     "experiments.eta", "experiments.versions", "experiments.retime", "experiments.run_metrics",
                     "experiments.context_cuts", "experiments.run_writer"), ()),
    "arms": (("experiments.arms",), ()),
    "runner": (("experiments.run", "experiments.dry_run", "experiments.spend_cap", "experiments.importers",
                "experiments.import", "experiments.score"),
               ("run records", "arms")),
    "run reading": (("experiments.report.runs", "experiments.report.data_mix", "experiments.report.settings",
                     "experiments.report.halves", "experiments.report.pricing", "experiments.report.pricing_words",
                     "experiments.report.loading", "experiments.pairwise"), ("run records", "arms")),
    "statistics": (("experiments.report.verdict", "experiments.report.losses", "experiments.report.latency",
                    "experiments.report.timing_notes", "experiments.report.overview",
                    "experiments.report.blas_threads"),
                   ("run records", "arms", "run reading")),
    # the router reads the verdict's decision, family-wise control and oracle, not how its rows are built
    "router": (("experiments.report.router",),
               ("run records", "arms", "run reading", "experiments.report.verdict.decision",
                "experiments.report.verdict.family", "experiments.report.verdict.oracle")),
    "decisions": (("experiments.report.decision_order", "experiments.report.verdict_row",
                   "experiments.report.agreement", "experiments.report.questions", "experiments.report.export"),
                  ("run records", "arms", "run reading", "statistics", "router")),
    "figures": (("experiments.report.plots",), ("run records", "arms", "run reading", "statistics")),
    "page": (("experiments.report.page",),
             ("run records", "arms", "run reading", "statistics", "router", "decisions", "figures")),
    "planning": (("experiments.plan", "experiments.simulate"),
                 ("run records", "arms", "run reading", "statistics", "router", "decisions")),
    "entry points": (("experiments.report.__main__", "experiments.demo", "experiments.decide"), ("page", "runner")),
}

REGISTRY = "eval.registry"  # the one module that imports by a computed name
# Run folders are read by `load_runs` (experiments/report/loading.py) alone. These modules may open a run folder's
# files (records.jsonl, pairwise.jsonl), call the record reader (experiments.records: `read_records`, and
# `RecordStore`, whose `load` reads) or load_runs's own steps (`find_runs`, `dedupe`); the tests may too.
RUN_FOLDER_ACCESS = {
    "experiments.records": "the record schema: its one reader and its one writer",
    "experiments.run_writer": "lays a run folder out",
    "experiments.run": "the runner writes its records and resumes from them",
    "experiments.spend_cap": "the runner's spend cap totals what this point's and the sweep's points have spent",
    "experiments.pairwise": "the pairwise pass writes its judgments beside a RAG run's records and resumes from them",
    "experiments.report.runs": "find_runs, load_runs's reader",
    "experiments.report.loading": "load_runs, which applies the pairwise judgments (pairwise.jsonl) to its runs",
    "perf.soak": "the crash soak counts torn and doubled lines in the raw file, which the reader repairs or hides",
}
RECORDS_MODULE, RECORD_READERS, RUN_FINDERS = "experiments.records", {"read_records", "RecordStore"}, {
    "find_runs", "dedupe"}
_RUN_FILE = re.compile(r"(?:.*[/\\])?(?:records|pairwise)\.jsonl")
KINDS = ("upward import", "import of not product", "floor", "no floor", "circle", "computed import",
         "arm name", "run folder read", "arm knob read")
REPORT = "experiments.report"  # reads no arm's own knob by name


@dataclass
class Tree:
    root: Path
    modules: dict[str, Path]
    tops: tuple[str, ...] = PACKAGES  # the top-level names an import may reach: the tree's and the placed ones
    syntax: dict[str, ast.Module] = field(default_factory=dict)
    nodes: dict[str, list[ast.AST]] = field(default_factory=dict)  # every node of each module, walked once
    graph: dict[str, set[str]] = field(default_factory=dict)


def _ignored_by_git(root: Path, names: set[str]) -> set[str]:
    """Which of `names` (top-level folders or files of `root`) git ignores, when `root` is a git checkout's top."""
    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
    try:
        top = git("rev-parse", "--show-toplevel")
        if top.returncode != 0 or Path(top.stdout.strip()).resolve() != root.resolve() or not names:
            return set()
        return {line.strip().rstrip("/") for line in git("check-ignore", "--", *sorted(names)).stdout.splitlines()}
    except OSError:  # no git: nothing is ignored
        return set()


def top_level(root: Path) -> list[str]:
    """The top-level folders and modules of `root` that an import could reach: Python files under a name that is
    an identifier (so not hidden), not ignored by git (build outputs, virtual environments)."""
    folders = {p.name for p in root.iterdir() if p.is_dir() and p.name.isidentifier() and not p.name.startswith("__")}
    files = {p.name for p in root.glob("*.py") if p.stem.isidentifier()}
    ignored = _ignored_by_git(root, folders | files)
    return sorted({n for n in folders - ignored if any((root / n).rglob("*.py"))}
                  | {f.removesuffix(".py") for f in files - ignored})


def read_tree(root: Path) -> Tree:
    modules = {}
    tops = top_level(root)
    for top in tops:
        paths = [root / f"{top}.py"] if (root / f"{top}.py").is_file() else sorted((root / top).rglob("*.py"))
        for path in paths:
            parts = path.relative_to(root).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    tree = Tree(root, modules, tuple(sorted(set(tops) | set(PACKAGES))))
    tree.syntax = {name: ast.parse(path.read_text(encoding="utf-8"), str(path)) for name, path in modules.items()}
    tree.nodes = {name: list(ast.walk(syntax)) for name, syntax in tree.syntax.items()}
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


def _module_name(tree: Tree) -> re.Pattern:
    return re.compile(rf"((?:{'|'.join(tree.tops)})(?:\.\w+)+)(?::\w+)?")


def imports(tree: Tree, name: str) -> set[str]:
    """The project modules `name` imports, by statement (absolute or relative) or by naming them in a string."""
    found, module_name = set(), _module_name(tree)
    for node in tree.nodes[name]:
        if isinstance(node, ast.ImportFrom):
            module = _absolute(tree, name, node)
            if module and module.split(".")[0] in tree.tops:
                for alias in node.names:
                    full = f"{module}.{alias.name}"
                    found.add(full if full in tree.modules else module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] in tree.tops}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = module_name.fullmatch(node.value)
            if match and match.group(1) in tree.modules:
                found.add(match.group(1))
    return found


def _top(module: str) -> str:
    return module.split(".")[0]


def upward_imports(tree: Tree) -> list[str]:
    """Arrows between top-level packages that `BELOW` does not allow (a product module's arrow into what is not
    product is the next kind); an arrow into a package on no floor is upward from anywhere."""
    return sorted(f"{m} -> {d}" for m, deps in tree.graph.items() if _top(m) in BELOW for d in deps
                  if _top(d) != _top(m) and _top(d) not in BELOW[_top(m)]
                  and not (_top(m) in PRODUCT and _top(d) in NOT_PRODUCT))


def imports_of_not_product(tree: Tree) -> list[str]:
    return sorted(f"{m} -> {d}" for m, deps in tree.graph.items() if _top(m) in PRODUCT
                  for d in deps if _top(d) in NOT_PRODUCT)


def unplaced_packages(tree: Tree) -> list[str]:
    return sorted(f"{top} holds Python files and is on no floor (place it in tests/house_rules.py: BELOW, or "
                  f"NOT_PRODUCT)" for top in {_top(m) for m in tree.modules} if top not in BELOW)


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


_IMPORTING_CALLS = {"import_module", "__import__", "resolve_name", "exec"}
_IMPORTING_NAMES = {"importlib": {"util", "import_module"}, "pkgutil": {"resolve_name"}, "sys": {"modules"}}


def _computed_import(node: ast.AST) -> str | None:
    """What `node` imports by a name no check can follow, if it does: `import_module`, `__import__`, `exec`,
    `importlib.util`, `pkgutil.resolve_name`, `runpy`, `sys.modules`."""
    if isinstance(node, ast.Call):
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if called in _IMPORTING_CALLS and (called != "exec" or isinstance(func, ast.Name)):
            return called
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        what = f"{node.value.id}.{node.attr}"
        if what in ("importlib.util", "pkgutil.resolve_name", "sys.modules") or node.value.id == "runpy":
            return what
    if isinstance(node, ast.Constant) and node.value in _IMPORTING_CALLS - {"exec"}:
        return f"{node.value!r}"  # getattr(builtins, "__import__")
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names if a.name.startswith("importlib.util") or a.name == "runpy"]
        return f"import {', '.join(names)}" if names else None
    if isinstance(node, ast.ImportFrom) and node.module:
        names = {a.name for a in node.names}
        if node.module.startswith("importlib.util") or node.module == "runpy" or names & _IMPORTING_NAMES.get(
                node.module, set()):
            return f"from {node.module} import {', '.join(sorted(names))}"
    return None


def computed_imports(tree: Tree) -> list[str]:
    """A computed import (`_computed_import`) anywhere but the registry and the tests (which may ask whether an
    optional package is installed). ruff's TID251 bans `import_module`, `importlib.util`, `pkgutil.resolve_name`
    and `runpy` too; it cannot see the rest."""
    return sorted(f"{tree.modules[m].relative_to(tree.root)}:{node.lineno}: {what}"
                  for m in tree.syntax if m != REGISTRY and _top(m) != "tests"
                  for node in tree.nodes[m]
                  if (what := _computed_import(node)) and id(node) not in _membership_tests(tree.nodes[m]))


def _membership_tests(nodes: list[ast.AST]) -> set[int]:
    """The ids of the nodes that a module only asks `in` / `not in` of (`"transformers" in sys.modules`: whether a
    package is loaded, which imports nothing)."""
    return {id(c) for n in nodes if isinstance(n, ast.Compare)
            for op, c in zip(n.ops, n.comparators, strict=True) if isinstance(op, (ast.In, ast.NotIn))}


def arm_names(tree: Tree, names: set[str], allowed: dict[tuple[str, str], str]) -> list[str]:
    """A string that is an arm's name, in any product package outside experiments/arms: code there asks the arm
    spec for a role or a name rather than spelling it. `allowed`: (file, name) -> why that file may."""
    found = []
    for m in tree.syntax:
        where = str(tree.modules[m].relative_to(tree.root))
        if m.split(".")[0] not in PRODUCT or under(m, "experiments.arms"):
            continue
        for node in tree.nodes[m]:
            if isinstance(node, ast.Constant) and node.value in names and (where, node.value) not in allowed:
                found.append(f"{where}:{node.lineno}: {node.value!r}")
    return sorted(found)


def _dotted(node: ast.AST) -> str | None:
    """`a.b.c` for a name or a chain of attributes."""
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return node.id if isinstance(node, ast.Name) else None


def _record_module_names(tree: Tree, name: str) -> tuple[set[str], set[str]]:
    """The names module `name` binds to experiments.records, and to its readers."""
    modules, readers = set(), set()
    for node in tree.nodes[name]:
        if isinstance(node, ast.ImportFrom) and (module := _absolute(tree, name, node)):
            for a in node.names:
                if module == RECORDS_MODULE and (a.name in RECORD_READERS or a.name == "*"):
                    readers |= RECORD_READERS if a.name == "*" else {a.asname or a.name}
                elif f"{module}.{a.name}" == RECORDS_MODULE:
                    modules.add(a.asname or a.name)
        elif isinstance(node, ast.Import):
            modules |= {a.asname or a.name for a in node.names if a.name == RECORDS_MODULE}
    return modules, readers


def _run_folder_reads(tree: Tree, name: str):
    """(line, what) for each place module `name` reads a run folder itself."""
    modules, readers = _record_module_names(tree, name)
    for node in tree.nodes[name]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _RUN_FILE.fullmatch(node.value):
            yield node.lineno, f"opens {node.value!r}"
        elif getattr(node, "id", getattr(node, "attr", None)) == "PAIRWISE_FILE":
            yield node.lineno, "opens PAIRWISE_FILE"
        elif isinstance(node, ast.Call):
            func, called = node.func, _dotted(node.func) or "a computed callee"
            if (isinstance(func, ast.Name) and func.id in readers or isinstance(func, ast.Attribute)
                    and func.attr in RECORD_READERS and _dotted(func.value) in modules):
                yield node.lineno, f"calls the record reader ({called})"
            elif called.rpartition(".")[2] in RUN_FINDERS:
                yield node.lineno, f"calls {called}, a step of load_runs"


def run_folder_reads(tree: Tree) -> list[str]:
    """Run folders read other than through `load_runs`: a run folder's file named (records.jsonl, pairwise.jsonl),
    the record reader called, or load_runs's own steps, outside `RUN_FOLDER_ACCESS` and the tests."""
    return sorted(f"{tree.modules[m].relative_to(tree.root)}:{line}: {what} (read runs through "
                  f"experiments.report.loading.load_runs)" for m in tree.syntax
                  if m not in RUN_FOLDER_ACCESS and _top(m) != "tests" for line, what in _run_folder_reads(tree, m))


def _key_read(node: ast.AST) -> str | None:
    """The constant key a node reads from a mapping: `x.get("k")` (or pop, setdefault), `x["k"]`, `"k" in x`."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("get", "pop", "setdefault") and node.args):
        key = node.args[0]
    elif isinstance(node, ast.Subscript):
        key = node.slice
    elif isinstance(node, ast.Compare) and isinstance(node.ops[0], (ast.In, ast.NotIn)):
        key = node.left
    else:
        return None
    return key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None


def arm_knob_reads(tree: Tree, knobs: set[str]) -> list[str]:
    """An arm's own knob (`knobs`: top_k, chunk_size, the retriever's name, ...) read by name in the report: the
    report asks the run's arm spec what it needs (how many passages it retrieves, what prices its index)."""
    return sorted(f"{tree.modules[m].relative_to(tree.root)}:{node.lineno}: reads {key!r} (ask the run's arm spec)"
                  for m in tree.syntax if under(m, REPORT)
                  for node in tree.nodes[m] if (key := _key_read(node)) in knobs)


def check(tree: Tree | Path, names: set[str], allowed_names: dict[tuple[str, str], str] | None = None,
          knobs: set[str] | None = None) -> dict[str, list]:
    """Every violation of a tree (or of the tree at a path), by kind (`KINDS`). `names`: the arms' names; `knobs`:
    the knobs an arm's spec writes (not the ones every run has: arm, benchmark, generator, label)."""
    tree = tree if isinstance(tree, Tree) else read_tree(tree)
    return {"upward import": upward_imports(tree),
            "import of not product": imports_of_not_product(tree),
            "floor": floor_violations(tree),
            "no floor": unplaced_packages(tree) + unplaced_modules(tree),
            "circle": circles(tree),
            "computed import": computed_imports(tree),
            "arm name": arm_names(tree, names, allowed_names or {}),
            "run folder read": run_folder_reads(tree),
            "arm knob read": arm_knob_reads(tree, knobs or set())}
