"""One way from a config group to an object: a registry of lazy `"module:Name"` entries whose
keyword arguments are checked against the target's signature.

    GENERATORS = Registry("generator.backend", {
        "transformers": "llm.transformers_backend:TransformersGenerator",
        "openai": "llm.openai_backend:OpenAICompatGenerator",
    }, install_hints={"vllm": "pip install '.[gpu]'"})

    gen = GENERATORS.build("openai", cfg, drop=("backend",), section="generator")

- An entry is imported only when it is asked for, so a backend's heavy or optional dependency
  costs nothing until it is used.
- `build` passes the config's keys as keyword arguments. A key the target does not accept fails
  with an error naming `<section>.<key>` and the accepted settings (a typo never passes silently);
  a target that takes `**kwargs` accepts everything.
- An entry whose module needs a package that is not installed fails with one `ValueError` line
  that names the package and the install command (the runner prints it as `error: ...`).
- An unknown name fails with the registered names.

It lives on the ground floor (`eval/`) so every layer above uses the same one: generators (`llm`),
retrievers and rerankers (`rag`), arms (`experiments`) and benchmark loaders (`eval`).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import pkgutil
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any


class MissingExtra(ValueError, ImportError):
    """An optional package a chosen setting needs is not installed, or is installed but fails to import:
    a ValueError (a setting this install cannot serve, printed by the runner as one `error: ...` line)
    and an ImportError."""


class UnknownName(KeyError, ValueError):
    """A configuration names something no table holds (a metric, a task): a KeyError to whoever looks
    it up, and a ValueError (bad configuration: one line, no traceback) to the runner."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def require(package: str, what: str, hint: str | None = None) -> Any:
    """Import `package` for the setting `what` (e.g. "retriever.backend=flag_m3"). Not installed:
    `MissingExtra` naming both and the install command. Installed but failing at import (a release of
    something it imports broke it): `MissingExtra` in one line, with the package's version, the error,
    the package it tripped on with its version, and the fix."""
    try:
        return importlib.import_module(package)
    except Exception as err:  # any import-time failure becomes one line naming its cause
        if isinstance(err, ImportError) and (_names_itself(err, package) or _installed_version(package) is None):
            how = f"; install it with: {hint}" if hint else ""
            raise MissingExtra(f"{what} needs the package {package!r}, which is not installed{how}") from None
        raise MissingExtra(broken_import_message(package, what, err)) from err


def broken_import_message(package: str, what: str, err: BaseException) -> str:
    """One line: `package` (version) is installed but fails to import, why, which package it tripped on
    (version installed, version locked), and the fix."""
    first = (str(err).strip().splitlines() or [type(err).__name__])[0][:160]
    version = _installed_version(package)
    head = f"{what} needs {package} {version or ''}".rstrip()
    culprit = _culprit(err, package)
    line = f"{head}, which is installed but fails to import ({type(err).__name__}: {first})"
    if culprit:
        have, pin = _installed_version(culprit), _locked_version(culprit)
        line += f"; it trips on {culprit} {have or '(not installed)'}"
        fix = f"`make install` (the locked set: {culprit}=={pin})" if pin else "`make install` (the locked set)"
        bound = _project_bound(culprit)
        if bound:
            fix += f" or `pip install '{bound}'`"
        return f"{line}; fix: {fix}"
    return f"{line}; fix: `make install` (the locked set), or reinstall {package}"


def _names_itself(err: ImportError, package: str) -> bool:
    """The import error is about `package` itself (absent, or blocked with `sys.modules[name] = None`)."""
    name = getattr(err, "name", None)
    return name is not None and (name == package or package.startswith(name + "."))


def _culprit(err: BaseException, package: str) -> str | None:
    """The top-level module an import error names, when it is not `package` itself."""
    name = getattr(err, "name", None) if isinstance(err, ImportError) else None
    if not name:
        return None
    top = name.split(".")[0]
    return None if top == package.split(".")[0] else top


def _distribution(module: str) -> str:
    """The distribution that provides an importable top-level module (faiss -> faiss-cpu)."""
    from importlib.metadata import packages_distributions

    dists = packages_distributions().get(module.split(".")[0]) or [module]
    return dists[0]


def _installed_version(module: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(_distribution(module))
    except PackageNotFoundError:
        return None


def _locked_version(module: str) -> str | None:
    from eval.lockfile import locked_version

    return locked_version(_distribution(module))


def _project_bound(module: str) -> str | None:
    """This project's own declared range for `module`'s distribution with an upper bound (e.g.
    "transformers>=4.46,<5"), the pin to use outside the locked set."""
    from importlib.metadata import PackageNotFoundError, requires

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    try:
        lines = requires("rag-or-longctx") or []
    except PackageNotFoundError:
        return None
    want = canonicalize_name(_distribution(module))
    for line in lines:
        req = Requirement(line)
        if canonicalize_name(req.name) == want and any(s.operator in ("<", "<=", "==", "~=") for s in req.specifier):
            return f"{req.name}{req.specifier}"
    return None


def package_folder(package: str) -> Path | None:
    """The folder an installed package lives in, found without importing it (None: not installed)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


class Registry:
    def __init__(self, kind: str, entries: Mapping[str, str | Callable[..., Any]] | None = None,
                 install_hints: Mapping[str, str] | None = None, discover: str | None = None):
        """`discover`: a package whose modules register their own entries when imported (`@register`); every
        module of it is imported before the registry's first lookup, so a new entry is one new module there."""
        self.kind = kind  # how the config names the choice, e.g. "retriever.kind", used in errors
        self._entries: dict[str, str | Callable[..., Any]] = dict(entries or {})
        self._hints = dict(install_hints or {})
        self._discover = discover

    def _discovered(self) -> dict[str, str | Callable[..., Any]]:
        """The entries, after importing every module of the `discover` package once."""
        if self._discover is not None:
            package, self._discover = self._discover, None
            for module in pkgutil.iter_modules(importlib.import_module(package).__path__):
                importlib.import_module(f"{package}.{module.name}")
        return self._entries

    def register(self, name: str, target: str | Callable[..., Any], install_hint: str | None = None) -> None:
        """Add `name` -> `target` ("module:Name", or the object itself)."""
        if name in self._entries and self._entries[name] != target:
            raise ValueError(f"{self.kind}={name!r} is registered twice ({self._entries[name]!r} and {target!r})")
        self._entries[name] = target
        if install_hint:
            self._hints[name] = install_hint

    def names(self) -> list[str]:
        return list(self._discovered())

    def __contains__(self, name: object) -> bool:
        return name in self._discovered()

    def __iter__(self):
        return iter(self._discovered())

    def get(self, name: str) -> Callable[..., Any]:
        """The registered object, imported on first use."""
        if name not in self._discovered():
            raise ValueError(f"{self.kind}={name!r}; allowed: {', '.join(self._entries)}")
        target = self._entries[name]
        if not isinstance(target, str):
            return target
        module_name, _, attr = target.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as err:
            missing = getattr(err, "name", None) or str(err)
            if missing and module_name.startswith(str(missing)):  # our own module is broken: not a missing extra
                raise
            hint = self._hints.get(name)
            how = f"; install it with: {hint}" if hint else ""
            raise MissingExtra(f"{self.kind}={name} needs the package {missing!r}, "
                               f"which is not installed{how}") from None
        obj: Any = getattr(module, attr) if attr else module
        self._entries[name] = obj
        return obj

    def build(self, name: str, cfg: Mapping[str, Any] | None = None, *, drop: Iterable[str] = (),
              section: str | None = None, what: str | None = None, **extra: Any) -> Any:
        """`get(name)(**cfg, **extra)`, with `cfg`'s keys (less `drop`) checked against the signature
        (an unknown key fails naming `<section>.<key>` and `what`, by default `<kind>=<name>`)."""
        factory = self.get(name)
        kwargs = {k: v for k, v in dict(cfg or {}).items() if k not in set(drop)}
        check_kwargs(factory, kwargs, section or self.kind.partition(".")[0], what=what or f"{self.kind}={name}")
        return factory(**kwargs, **extra)


def accepted_kwargs(factory: Callable[..., Any]) -> set[str] | None:
    """The keyword arguments `factory` takes (None: it takes any, through **kwargs)."""
    target = factory.__init__ if inspect.isclass(factory) else factory
    params = inspect.signature(target).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    return {p.name for p in params if p.name != "self"
            and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)}


def check_kwargs(factory: Callable[..., Any], kwargs: Mapping[str, Any], section: str, what: str | None = None) -> None:
    """Raise a ValueError naming `<section>.<key>` for the first key `factory` does not accept."""
    accepted = accepted_kwargs(factory)
    if accepted is None:
        return
    unknown = sorted(set(kwargs) - accepted)
    if unknown:
        raise ValueError(f"{section}.{unknown[0]} is not a setting of {what or section}; "
                         f"its settings: {', '.join(sorted(accepted))}")
