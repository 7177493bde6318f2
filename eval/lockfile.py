"""The locked environment: what `requirements.lock.txt` pins, and how an installed set differs from it.

`make install` installs exactly the lock (hashes checked); `make lock` regenerates it from
`pyproject.toml`. This module is how the rest of the project reads it:

- `tests/test_lockfile.py` fails when `pyproject.toml` asks for a package the lock lacks (or pins
  outside the range), and when an installed package's version differs from its pin, naming the
  package, both versions and the fix;
- `make test-latest` runs `python -m eval.lockfile --junit FILE` in a venv of the newest releases:
  which packages differ from the lock, and which tests failed there;
- `eval.registry.require` names the locked version of the package that broke an optional import.
"""

from __future__ import annotations

import argparse
import importlib.metadata as metadata
import re
import sys
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterable, Mapping
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

LOCK_NAME = "requirements.lock.txt"
EXTRAS = ("dev", "bge", "docs")  # the extras `make lock` compiles and `make install` installs
FIX_LOCK = "run `make lock` (then `make install`)"
FIX_INSTALL = "reinstall the locked set: `rm -f .venv/.installed && make install`"
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)")


def repo_root() -> Path:
    """The source tree this package runs from (a checkout or an editable install)."""
    return Path(__file__).resolve().parents[1]


def repo_lock() -> Path | None:
    """The lock beside the source tree, or None where the package was installed without it."""
    path = repo_root() / LOCK_NAME
    return path if path.is_file() else None


def read_lock(path: Path) -> dict[str, str]:
    """Canonical package name -> pinned version. A requirement line that is not `name==version`
    (a lock must pin everything exactly) fails naming the file and line."""
    pins: dict[str, str] = {}
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        text = line.strip()
        if not text or text.startswith(("#", "-", "--")):
            continue  # comments, hashes (`--hash=` continuation lines) and pip options
        match = _PIN.match(text)
        if not match:
            raise ValueError(f"{path}:{number}: not an exact pin (name==version): {text[:80]!r}; {FIX_LOCK}")
        pins[canonicalize_name(match.group(1))] = match.group(2)
    if not pins:
        raise ValueError(f"{path}: pins no package; {FIX_LOCK}")
    return pins


def project_requirements(pyproject: Path, extras: Iterable[str] = EXTRAS) -> list[Requirement]:
    """The core dependencies of `pyproject.toml` and those of the given extras."""
    import tomllib

    project = tomllib.loads(Path(pyproject).read_text(encoding="utf-8"))["project"]
    lines = list(project.get("dependencies", []))
    optional = project.get("optional-dependencies", {})
    for extra in extras:
        if extra not in optional:
            raise ValueError(f"{pyproject}: no optional-dependencies table {extra!r} (the lock compiles {EXTRAS})")
        lines += optional[extra]
    out = []
    for line in lines:
        try:
            out.append(Requirement(line))
        except InvalidRequirement as err:
            raise ValueError(f"{pyproject}: dependency {line!r}: {err}") from None
    return out


def uncovered(requirements: Iterable[Requirement], lock: Mapping[str, str]) -> list[str]:
    """One message per requirement the lock does not satisfy: missing, or pinned outside its range."""
    problems = []
    for req in requirements:
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue  # not for this platform / Python
        name = canonicalize_name(req.name)
        if name not in lock:
            problems.append(f"{req.name}: asked for by pyproject.toml ({req}) but not in {LOCK_NAME}; {FIX_LOCK}")
        elif not req.specifier.contains(lock[name], prereleases=True):
            problems.append(f"{req.name}: locked {lock[name]}, outside pyproject.toml's {req.specifier}; {FIX_LOCK}")
    return problems


def installed_versions() -> dict[str, str]:
    """Canonical name -> version of every distribution this interpreter sees."""
    out: dict[str, str] = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            out.setdefault(canonicalize_name(name), dist.version)
    return out


def _same(a: str, b: str) -> bool:
    try:
        return Version(a) == Version(b)
    except InvalidVersion:
        return a == b


def drift(lock: Mapping[str, str], installed: Mapping[str, str]) -> list[str]:
    """One message per locked package whose installed version differs from its pin, or that is missing."""
    problems = []
    for name, pinned in sorted(lock.items()):
        have = installed.get(name)
        if have is None:
            problems.append(f"{name}: locked {pinned}, not installed; {FIX_INSTALL}")
        elif not _same(have, pinned):
            problems.append(f"{name}: locked {pinned}, installed {have}; {FIX_INSTALL}, "
                            f"or {FIX_LOCK} if {have} is the version to keep")
    return problems


def locked_version(package: str) -> str | None:
    """The version the repository's lock pins for `package` (a distribution or import name), if any."""
    path = repo_lock()
    if path is None:
        return None
    try:
        return read_lock(path).get(canonicalize_name(package))
    except (OSError, ValueError):
        return None


def failed_tests(junit_xml: Path) -> list[str]:
    """`file::name` of every failed or erroring test case in a pytest JUnit XML report (our own file)."""
    root = ElementTree.parse(junit_xml).getroot()
    out = []
    for case in root.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            where = case.get("classname", "").replace(".", "/")
            out.append(f"{where}.py::{case.get('name')}")
    return out


def compare_report(lock: Mapping[str, str], installed: Mapping[str, str], failed: list[str]) -> str:
    """What `make test-latest` prints: the packages whose newest release differs from the lock, and the
    tests that failed on them."""
    newer = [f"  {name}: locked {lock[name]} -> latest {installed[name]}"
             for name in sorted(lock) if name in installed and not _same(installed[name], lock[name])]
    lines = [f"{len(newer)} of {len(lock)} locked packages differ from {LOCK_NAME}:", *newer]
    lines.append(f"{len(failed)} tests failed on the newest releases" + (":" if failed else ""))
    lines += [f"  {name}" for name in failed]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.lockfile", description=__doc__.splitlines()[0])
    parser.add_argument("--lock", type=Path, default=repo_root() / LOCK_NAME)
    parser.add_argument("--junit", type=Path, help="a pytest JUnit XML report to list the failed tests of")
    args = parser.parse_args(argv)
    lock = read_lock(args.lock)
    failed = failed_tests(args.junit) if args.junit and args.junit.is_file() else []
    print(compare_report(lock, installed_versions(), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
