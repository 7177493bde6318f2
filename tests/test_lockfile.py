"""The lock: pyproject.toml's dependencies all pinned in requirements.lock.txt, and the installed set equal to it.

These fail loudly on drift (a package changed by hand, a new dependency not locked), naming the package,
both versions and the fix."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from eval.lockfile import (
    EXTRAS,
    compare_report,
    drift,
    failed_tests,
    installed_versions,
    project_requirements,
    read_lock,
    uncovered,
)

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements.lock.txt"


def test_every_dependency_of_pyproject_is_locked_within_its_range():
    problems = uncovered(project_requirements(ROOT / "pyproject.toml", EXTRAS), read_lock(LOCK))
    assert not problems, "pyproject.toml and the lock disagree:\n" + "\n".join(problems)


def test_the_installed_set_is_the_locked_set():
    problems = drift(read_lock(LOCK), installed_versions())
    assert not problems, "the environment drifted from the lock:\n" + "\n".join(problems)


def test_the_lock_pins_torch_to_the_cpu_wheel_and_transformers_below_5():
    lock = read_lock(LOCK)
    assert lock["torch"].startswith("2.13.0")
    assert int(lock["transformers"].split(".")[0]) == 4, "FlagEmbedding ([bge]) cannot import under transformers 5"


def test_drift_names_the_package_both_versions_and_the_fix():
    problems = drift({"tqdm": "4.67.1", "numpy": "2.4.6", "rich": "14.0.0"},
                     {"tqdm": "4.66.0", "numpy": "2.4.6"})
    assert len(problems) == 2
    assert ("tqdm: locked 4.67.1, installed 4.66.0" in problems[1] and "make install" in problems[1]
            and "rm -f .venv/.installed" in problems[1])
    assert "make lock" in problems[1]
    assert problems[0].startswith("rich: locked 14.0.0, not installed")


def test_local_version_labels_are_compared_as_versions():
    assert drift({"torch": "2.13.0+cpu"}, {"torch": "2.13.0+cpu"}) == []
    assert drift({"torch": "2.13.0+cpu"}, {"torch": "2.13.0"}) != []


def test_uncovered_names_missing_and_out_of_range_requirements():
    reqs = [Requirement("foo>=2"), Requirement("bar"), Requirement("baz<5"), Requirement("win; sys_platform == 'nt'")]
    problems = uncovered(reqs, {"foo": "1.0", "baz": "4.9"})
    assert len(problems) == 2
    assert "foo: locked 1.0, outside pyproject.toml's >=2" in problems[0]
    assert problems[1].startswith("bar: asked for by pyproject.toml") and "make lock" in problems[1]


def test_a_lock_line_that_is_not_an_exact_pin_names_file_and_line(tmp_path):
    lock = tmp_path / "requirements.lock.txt"
    lock.write_text("# header\nfoo==1.0 \\\n    --hash=sha256:abc\nbar>=2\n")
    with pytest.raises(ValueError, match=r"requirements.lock.txt:4: not an exact pin"):
        read_lock(lock)


def test_a_real_pytest_report_lists_its_failed_tests(tmp_path):
    (tmp_path / "test_two.py").write_text(textwrap.dedent("""
        def test_ok():
            assert True
        def test_broken():
            assert 1 == 2
    """))
    junit = tmp_path / "junit.xml"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                    f"--junitxml={junit}", str(tmp_path / "test_two.py")], cwd=tmp_path, capture_output=True)
    failed = failed_tests(junit)
    assert failed == ["test_two.py::test_broken"]
    report = compare_report({"tqdm": "4.67.1", "numpy": "2.4.6"}, {"tqdm": "4.68.0", "numpy": "2.4.6"}, failed)
    assert "1 of 2 locked packages differ" in report and "tqdm: locked 4.67.1 -> latest 4.68.0" in report
    assert "1 tests failed on the newest releases:\n  test_two.py::test_broken" in report
