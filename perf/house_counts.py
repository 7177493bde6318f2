"""The house's size figures, for a before/after of a restructuring (issues 42 and 52).

    python perf/house_counts.py [--root DIR]

The tree at `--root` (default: this checkout; for the "before", a copy of another commit:
`mkdir /tmp/base && git archive COMMIT | tar -x -C /tmp/base`), read by this checkout's tests/house_rules.py:
- `rooms`: top-level packages (folders or modules with Python files); `floors`: their heights in the import
  graph as it is (a package that imports none of the others stands on floor 1, one that imports only floor-1
  packages on floor 2, ...; an arrow that closes a circle between packages is left out), one line per floor;
  `upward_arrows`: imports the layer map does not allow (product into not product included); `circles`: import
  circles between modules (anywhere);
- the same inside experiments/: `experiments_rooms` (the modules and packages the floor map `FLOORS` names that
  exist), `experiments_named_floors` (the map's floors), `experiments_floors` (the named floors by height over
  the arrows between them, one line per height: a line may hold several named floors) and
  `experiments_upward_arrows` (imports a floor's allow-list does not name); `unplaced`: top-level packages, and
  packages and modules of experiments/, on no floor;
- `run_readers`: modules that read run folders other than through `load_runs` (house_rules `run folder read`),
  and `run_loaders`: those that call `load_runs`.
Counts over the product packages (eval, llm, rag, longctx, testset, experiments):
- `lines`: lines of Python per top folder, and their total;
- `files_over_400`: modules longer than 400 lines;
- `functions_over_50` / `functions_over_60`: functions (methods and nested functions included) longer than that,
  from the `def` line to the last line of the body;
- `present_arguments`: the parameters of the report's `present`.
The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import ast
import json
from pathlib import Path

import common  # noqa: F401 (puts the checkout on the path)

from tests import house_rules

PRODUCT = ("eval", "llm", "rag", "longctx", "testset", "experiments")


def _modules(root: Path, tops: tuple[str, ...]) -> list[Path]:
    return [p for top in tops for p in sorted((root / top).rglob("*.py"))]


def _functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _called_names(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            names.add(func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", ""))
    return names


def _present_arguments(root: Path) -> int | None:
    for path in _modules(root, ("experiments",)):
        for fn in _functions(ast.parse(path.read_text(encoding="utf-8"))):
            if fn.name == "present" and "report" in path.parts:
                args = fn.args
                return len(args.posonlyargs) + len(args.args) + len(args.kwonlyargs)
    return None


def _heights(graph: dict[str, set[str]]) -> dict[str, int]:
    """1 + the greatest height of what each node imports (1: it imports none of the others); an arrow back into a
    node still being measured (a circle, counted apart) is left out."""
    heights: dict[str, int] = {}

    def height(node: str, path: frozenset = frozenset()) -> int:
        if node not in heights:
            heights[node] = 1 + max((height(d, path | {node}) for d in graph[node] if d in graph and d not in path),
                                    default=0)
        return heights[node]

    for node in sorted(graph):
        height(node)
    return heights


def house(root: Path) -> dict:
    """Rooms, floors, upward arrows and circles, at the top level and inside experiments/."""
    tree = house_rules.read_tree(root)
    top = house_rules._top
    tops = {top(m) for m in tree.modules}
    top_graph = {t: {top(d) for m, deps in tree.graph.items() if top(m) == t for d in deps} - {t} for t in tops}
    inside = [m for m in tree.modules if house_rules.under(m, "experiments")]
    rooms = {member for members, _ in house_rules.FLOORS.values() for member in members
             if any(house_rules.under(m, member) for m in inside)}
    floor_graph = {f: {house_rules.floor_of(d) for m in inside if house_rules.floor_of(m) == f
                       for d in tree.graph[m] if house_rules.under(d, "experiments")} - {f, None}
                   for f in house_rules.FLOORS}
    return {"rooms": sorted(tops), "floors": _by_height(top_graph),
            "upward_arrows": house_rules.upward_imports(tree) + house_rules.imports_of_not_product(tree),
            "circles": [" ".join(c) for c in house_rules.circles(tree)], "experiments_rooms": sorted(rooms),
            "experiments_floors": _by_height(floor_graph), "experiments_named_floors": sorted(house_rules.FLOORS),
            "experiments_upward_arrows": house_rules.floor_violations(tree),
            "unplaced": house_rules.unplaced_packages(tree) + house_rules.unplaced_modules(tree),
            "run_readers": sorted({line.split(":")[0] for line in house_rules.run_folder_reads(tree)})}


def _by_height(graph: dict[str, set[str]]) -> list[str]:
    """One line per floor, lowest first: `height: what stands there`."""
    heights = _heights(graph)
    return [f"{h}: {', '.join(sorted(n for n in heights if heights[n] == h))}" for h in sorted(set(heights.values()))]


def counts(root: Path) -> dict:
    lines = {top: 0 for top in PRODUCT}
    over_400, over_50, over_60, loaders = [], [], [], []
    for path in _modules(root, PRODUCT + ("perf",)):
        text = path.read_text(encoding="utf-8")
        rel = str(path.relative_to(root))
        tree = ast.parse(text)
        if "load_runs" in _called_names(tree):
            loaders.append(rel)
        top = path.relative_to(root).parts[0]
        if top not in lines:
            continue
        n = len(text.splitlines())
        lines[top] += n
        if n > 400:
            over_400.append(f"{rel} ({n})")
        for fn in _functions(tree):
            length = fn.end_lineno - fn.lineno + 1
            if length > 50:
                over_50.append(f"{rel}:{fn.name} ({length})")
            if length > 60:
                over_60.append(f"{rel}:{fn.name} ({length})")
    return {**house(root), "lines": {**lines, "total": sum(lines.values())}, "files_over_400": over_400,
            "functions_over_50": over_50, "functions_over_60": over_60, "run_loaders": loaders,
            "present_arguments": _present_arguments(root)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    found = counts(parser.parse_args().root)
    for key, value in found.items():
        if isinstance(value, list):
            print(f"{key}: {len(value)}")
            for item in value:
                print(f"  {item}")
        else:
            print(f"{key}: {value}")
    summary = {k: (len(v) if isinstance(v, list) else v) for k, v in found.items()}
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
