"""The house's size figures, for a before/after of a restructuring (issue 42's acceptance).

    python perf/house_counts.py [--root DIR]

Counts, over the product packages (eval, llm, rag, longctx, testset, experiments) of the tree at `--root`
(default: this checkout; point it at `git worktree add /tmp/base <commit>` for the "before"):
- `lines`: lines of Python per top folder, and their total;
- `files_over_400`: modules longer than 400 lines;
- `functions_over_50` / `functions_over_60`: functions (methods and nested functions included) longer than that,
  from the `def` line to the last line of the body;
- `run_readers`: modules (product and perf/) that find run folders themselves (call `find_runs` or `dedupe`)
  rather than through `load_runs` (report/runs.py and report/loading.py, where they live, not counted), and
  `run_loaders`: those that call `load_runs`;
- `present_arguments`: the parameters of the report's `present`.
The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import ast
import json
from pathlib import Path

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


def counts(root: Path) -> dict:
    lines = {top: 0 for top in PRODUCT}
    over_400, over_50, over_60, readers, loaders = [], [], [], [], []
    for path in _modules(root, PRODUCT + ("perf",)):
        text = path.read_text(encoding="utf-8")
        rel = str(path.relative_to(root))
        tree = ast.parse(text)
        called = _called_names(tree)
        if path.name not in ("runs.py", "loading.py") and called & {"find_runs", "dedupe"}:
            readers.append(rel)
        if "load_runs" in called:
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
    return {"lines": {**lines, "total": sum(lines.values())}, "files_over_400": over_400,
            "functions_over_50": over_50, "functions_over_60": over_60, "run_readers": readers,
            "run_loaders": loaders, "present_arguments": _present_arguments(root)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    found = counts(parser.parse_args().root)
    for key in ("files_over_400", "functions_over_50", "functions_over_60", "run_readers", "run_loaders"):
        print(f"{key}: {len(found[key])}")
        for item in found[key]:
            print(f"  {item}")
    print(f"lines: {found['lines']}")
    print(f"present_arguments: {found['present_arguments']}")
    summary = {k: (len(v) if isinstance(v, list) else v) for k, v in found.items()}
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
