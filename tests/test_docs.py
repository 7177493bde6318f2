"""The docs a test keeps true: every `python -m` module, `rol-*` command, `make` target, config group, option and key,
file path and perf script (with its flags) that README.md and the pages under docs/ name must exist, config keys
checked against the composed Hydra config; a paragraph that quotes a duration names the perf script that measures
it; the report's first-screen legend is five lines and names the statistics page, which exists.

Names are read from code (fenced blocks and `code spans`), where commands, keys and paths are written; the same
checks run on a page planted with a stale name, so a checker that stopped seeing one fails too."""

from __future__ import annotations

import ast
import importlib.util
import re
import tomllib
from functools import lru_cache
from pathlib import Path

import pytest
import yaml

from tests.conftest import CONF, ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
PACKAGES = ("eval", "llm", "rag", "longctx", "testset", "experiments", "testsupport", "tests", "perf")
TOP_DIRS = (*PACKAGES, "conf", "docs", "examples", ".ci")
TOP_FILES = ("Makefile", "pyproject.toml", "README.md", "CHANGELOG.md", "mkdocs.yml", "requirements.lock.txt")
# modules a page names that are not this project's and need not be installed here
EXTERNAL_MODULES = {"llama_cpp.server"}
# keys a page names as refused by design (credentials are never config values)
REFUSED_KEYS = {"generator.api_key"}
DURATION = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?\s?(?:ms|s|min|minutes?|seconds?|h|hours?)\b")
PERF_SCRIPT = re.compile(r"perf/([a-z_0-9]+)\.py")
FILE_TYPES = (".py", ".md", ".yaml", ".json", ".jsonl", ".csv", ".png", ".html", ".txt", ".toml", ".sqlite", ".pdf",
              ".docx", ".parquet", ".gguf")
KEY = re.compile(r"^(\+?)([a-z_][a-z_0-9]*(?:[./][a-z_][a-z_0-9]*)*)$")


# -- reading the pages ------------------------------------------------------------------------------------------------


def code_of(text: str) -> list[str]:
    """The page's code: each logical line of its fenced blocks (backslash continuations joined) and each span."""
    out, prose = [], []
    for i, part in enumerate(re.split(r"^```[^\n]*\n", text, flags=re.M)):
        if i % 2:  # inside a fence: up to its closing line
            block, _, rest = part.partition("```")
            out += [line for line in block.replace("\\\n", " ").splitlines() if line.strip()]
            prose.append(rest)
        else:
            prose.append(part)
    return out + [s for p in prose for s in re.findall(r"`([^`\n]+)`", p)]


def paragraphs(text: str) -> list[str]:
    """The page's prose blocks outside fences: paragraphs, each list item and each table row."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    blocks = []
    for para in re.split(r"\n\s*\n", text):
        blocks += [b for b in re.split(r"\n(?=- |\d+\. |\|)", para) if b.strip() and not b.startswith("#")]
    return blocks


def unsourced_duration(block: str) -> bool:
    """A block that quotes a duration in its prose (not in code: `timeout_s: 120`) and names no perf script."""
    return bool(DURATION.search(re.sub(r"`[^`\n]*`", "``", block))) and not PERF_SCRIPT.search(block)


def names(pages: list[Path]) -> dict[str, set[tuple[str, str]]]:
    """Every name the pages write in code, by kind: {kind: {(name, page)}}."""
    found: dict[str, set[tuple[str, str]]] = {k: set() for k in ("module", "command", "make", "key", "path", "perf")}
    for page in pages:
        where = page.relative_to(ROOT).as_posix() if page.is_relative_to(ROOT) else page.name
        for code in code_of(page.read_text(encoding="utf-8")):
            for kind, name in names_in(code):
                found[kind].add((name, where))
    return found


def names_in(code: str) -> list[tuple[str, str]]:
    """(kind, name) of what one line or span of code names."""
    out = [("module", m) for m in re.findall(r"python -m ([\w.]+)", code)]
    out += [("command", m) for m in re.findall(r"(?<![\w-])rol-([a-z]+)\b", code)]
    out += [("make", m) for m in re.findall(r"(?:^|[\s;&(])make ([a-z][\w-]*)", code)]
    out += [("perf", m.group(0) + " " + flags_after(code, m.end())) for m in PERF_SCRIPT.finditer(code)]
    for token in re.split(r"[\s'\"]+", code):
        token = token.strip("()[],;:")
        if path_like(token):
            out.append(("path", token))
        elif KEY.match(token.split("=", 1)[0]) and not token.split("=", 1)[0].endswith(FILE_TYPES):
            out.append(("key", token))
    return out


def flags_after(code: str, start: int) -> str:
    """The `--flags` after a perf script's name, up to a bare `--` (the overrides it passes on) or a comment."""
    rest = re.split(r"\s--\s|\s#", code[start:] + " ", maxsplit=1)[0]
    return " ".join(sorted({f.split("=")[0] for f in re.findall(r"(?<!\S)--[a-z][\w-]*", rest)}))


def path_like(token: str) -> bool:
    token = token.rstrip(".")
    if any(c in token for c in "<>*{}$|") or "..." in token:
        return False
    return token in TOP_FILES or (token.split("/")[0] in TOP_DIRS and "/" in token and "=" not in token)


# -- what exists ------------------------------------------------------------------------------------------------------


def module_problem(module: str) -> str | None:
    """None when `python -m module` runs a file that parses; else what is wrong."""
    if module in EXTERNAL_MODULES:
        return None
    parts = module.split(".")
    if parts[0] not in PACKAGES:
        return None if importlib.util.find_spec(parts[0]) else f"no module {parts[0]!r} installed"
    base = ROOT.joinpath(*parts)
    source = base / "__main__.py" if base.is_dir() else base.with_suffix(".py")
    if not source.is_file():
        return f"no {source.relative_to(ROOT)}"
    ast.parse(source.read_text(encoding="utf-8"))
    return None


@lru_cache(maxsize=1)
def scripts() -> set[str]:
    return set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"])


@lru_cache(maxsize=1)
def make_targets() -> set[str]:
    return set(re.findall(r"^([a-z][\w-]*):", (ROOT / "Makefile").read_text(encoding="utf-8"), flags=re.M))


def group_options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF / group).glob("*.yaml"))


GROUPS = ("benchmark", "arm", "retriever", "chunker", "reranker", "generator", "price", "experiment", "demo_point",
          "hydra/launcher")


@lru_cache(maxsize=1)
def config_keys() -> frozenset[str]:
    """Every dotted key of the composed config (hydra's own included, with each launcher preset), and of each option
    file of each group as Hydra would place it (its own defaults followed)."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    import experiments.folder_names  # noqa: F401  (the resolver the run folder's name uses)

    keys: set[str] = set()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        for overrides in [[]] + [[f"hydra/launcher={o}"] for o in group_options("hydra/launcher")]:
            cfg = compose(config_name="config", overrides=overrides, return_hydra_config=True)
            keys |= flatten(OmegaConf.to_container(cfg, resolve=False))
    for group in GROUPS[:-1]:
        for option in group_options(group):
            keys |= option_keys(group, option)
    return frozenset(keys)


@lru_cache(maxsize=1)
def default_keys() -> frozenset[str]:
    """The dotted keys of the config `rol-run` composes with no override (a `+key` must not be one)."""
    from omegaconf import OmegaConf

    from tests.conftest import compose

    return frozenset(flatten(OmegaConf.to_container(compose([]), resolve=False)))


def option_keys(group: str, option: str) -> set[str]:
    """The dotted keys `conf/<group>/<option>.yaml` sets, where Hydra puts them (its package: the group, or the
    root with `# @package _global_`), and those of the options its defaults list names."""
    text = (CONF / group / f"{option}.yaml").read_text(encoding="utf-8")
    data = yaml.safe_load(text) or {}
    keys: set[str] = set()
    for entry in data.pop("defaults", []):
        if isinstance(entry, str) and entry != "_self_":
            keys |= option_keys(group, entry)
        elif isinstance(entry, dict):
            for where, choice in entry.items():
                other = where.replace("override", "").strip().strip("/")
                if choice and (CONF / other / f"{choice}.yaml").is_file():
                    keys |= option_keys(other, choice)
    return keys | flatten(data, "" if "@package _global_" in text else f"{group}.")


def flatten(node, prefix: str = "") -> set[str]:
    if not isinstance(node, dict):
        return set()
    out = set()
    for k, v in node.items():
        out |= {prefix + str(k)} | flatten(v, f"{prefix}{k}.")
    return out


@lru_cache(maxsize=1)
def report_keys() -> frozenset[str]:
    return frozenset(flatten(yaml.safe_load((CONF / "report.yaml").read_text(encoding="utf-8"))))


@lru_cache(maxsize=1)
def product_words() -> frozenset[str]:
    """Every identifier in the product's Python (a `+key` Hydra adds must be one the code reads)."""
    words: set[str] = set()
    for pkg in ("eval", "llm", "rag", "longctx", "testset", "experiments"):
        for f in (ROOT / pkg).rglob("*.py"):
            words |= set(re.findall(r"[a-z_][a-z_0-9]*", f.read_text(encoding="utf-8")))
    return frozenset(words)


def key_problem(token: str) -> str | None:
    """None when a `key=value` token or a bare dotted key names config that exists; else what is wrong."""
    key, _, value = token.partition("=")
    plus, key = KEY.match(key).groups()
    root = key.split(".")[0]
    if key in GROUPS:  # an option choice: each listed option has its file
        if not value:
            return None
        missing = [o for o in value.split(",") if o not in ("null", "...") and o not in group_options(key)]
        return f"no conf/{key}/{missing[0]}.yaml" if missing else None
    if "." not in key or root not in {k.split(".")[0] for k in config_keys()} | {"plan", "bootstrap", "indexing"}:
        return None  # not config (a file name, a Python name, a CLI option's argument)
    if plus:  # Hydra adds it: it must not be in the default config, and the code (or some option) must read it
        if key in default_keys():
            return f"+{key}: already in the config, drop the +"
        return None if key in config_keys() or key.rsplit(".", 1)[1] in product_words() else f"+{key}: no code reads it"
    if key in REFUSED_KEYS or key in config_keys() or key in report_keys():
        return None
    return f"{key}: not in the composed config (with any option of any group) nor in conf/report.yaml"


def perf_problem(entry: str) -> str | None:
    script, _, flags = entry.partition(" ")
    path = ROOT / script
    if not path.is_file():
        return f"no {script}"
    source = path.read_text(encoding="utf-8")
    ast.parse(source)
    unknown = [f for f in flags.split() if f'"{f}"' not in source]
    return f"{script}: no option {', '.join(unknown)}" if unknown else None


def problems(pages: list[Path]) -> list[str]:
    """Every name the pages write that does not exist, as `page: name: what is wrong`."""
    found, out = names(pages), []
    checks = {"module": module_problem,
              "command": lambda c: None if f"rol-{c}" in scripts() else f"no entry point rol-{c} in pyproject.toml",
              "make": lambda t: None if t in make_targets() else f"no Makefile target {t!r}",
              "key": key_problem, "perf": perf_problem,
              "path": lambda p: None if (ROOT / p.rstrip(".").split("::")[0]).exists() else "no such file or folder"}
    for kind, check in checks.items():
        for name, page in sorted(found[kind]):
            why = check(name)
            if why:
                out.append(f"{page}: {name}: {why}")
    return out


# -- the tests ---------------------------------------------------------------------------------------------------------


def test_every_name_the_docs_write_exists():
    found = names(PAGES)
    assert len(PAGES) >= 15 and all(found[k] for k in found), {k: len(v) for k, v in found.items()}
    assert problems(PAGES) == []


def test_every_paragraph_quoting_a_duration_names_the_perf_script_that_measures_it():
    unsourced = [f"{page.relative_to(ROOT)}: {block.strip()[:160]}" for page in PAGES
                 for block in paragraphs(page.read_text(encoding="utf-8"))
                 if unsourced_duration(block)]
    assert unsourced == []


@pytest.mark.parametrize("stale, why", [
    ("`rol-run rag.min_overlap=0.5`", "rag.min_overlap: not in the composed config"),
    ("`retriever=bm25,splade`", "no conf/retriever/splade.yaml"),
    ("`python -m experiments.reports`", "no experiments/reports.py"),
    ("`make tests`", "no Makefile target 'tests'"),
    ("`rol-decides`", "no entry point rol-decides"),
    ("`python perf/first_run.py --stepz demo`", "no option --stepz"),
    ("`conf/retriever/splade.yaml`", "no such file"),
    ("`+rag.min_coverage=0.5`", "already in the config"),
    ("It took 12 s on 2 idle cores.", None),
])
def test_a_stale_name_is_found(tmp_path, stale, why):
    """Each kind of name, planted stale in a page, is reported (and a duration without its perf script)."""
    page = tmp_path / "page.md"
    page.write_text(f"# A page\n\nSome text, then {stale} and more.\n", encoding="utf-8")
    if why is None:
        assert any(unsourced_duration(b) for b in paragraphs(page.read_text()))
        return
    found = problems([page])
    assert len(found) == 1 and why in found[0], found


def test_the_first_screen_legend_is_five_lines_that_name_the_statistics_page():
    from experiments.report.page.sections import OUTLINE
    from experiments.report.page.sections.first_screen import STATISTICS_PAGE, legend
    from experiments.report.settings import load_settings

    lines = legend(3, load_settings(queries_per_doc=10), "time", OUTLINE)
    assert len(lines) <= 5 and all(len(line) <= 180 for line in lines)
    assert any(STATISTICS_PAGE in line for line in lines) and (ROOT / STATISTICS_PAGE).is_file()
    assert "adjusted for 3 decisions" in lines[0] and "10 queries per document" in " ".join(lines)
    assert "the mean over questions" in lines[0] and "routers" not in lines[0]
    shared = legend(3, load_settings(weight="document"), "time", OUTLINE, routers_shared=True)
    assert "the mean over documents" in shared[0] and "and the routers' claims" in shared[0]


def test_the_readme_is_a_front_door():
    """At most 200 lines; the two commands in its first 40, `make test` the test command CI runs."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    head = "\n".join(readme[:40])
    assert len(readme) <= 200 and "make demo" in head and "make test" in head
    assert "make test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert not re.search(r"\bissue \d+", "\n".join(readme), flags=re.I)
