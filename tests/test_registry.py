"""eval.registry: lazy entries, checked keyword arguments, one-line errors for missing extras."""

import sys

import pytest

from eval.registry import Registry, check_kwargs


class Thing:
    def __init__(self, size: int, name: str = "x"):
        self.size, self.name = size, name


def test_lazy_entry_is_imported_only_when_asked(tmp_path, monkeypatch):
    (tmp_path / "lazy_mod_for_registry.py").write_text("LOADED = True\ndef make(a=1):\n    return ('made', a)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    reg = Registry("widget.kind", {"lazy": "lazy_mod_for_registry:make"})
    assert "lazy_mod_for_registry" not in sys.modules
    assert reg.build("lazy", {"a": 3, "kind": "lazy"}, drop=("kind",)) == ("made", 3)
    assert "lazy_mod_for_registry" in sys.modules


def test_unknown_key_names_section_and_settings():
    reg = Registry("widget.kind", {"thing": Thing})
    with pytest.raises(ValueError,
                       match=r"widget\.sise is not a setting of widget.kind=thing; its settings: name, size"):
        reg.build("thing", {"sise": 3})
    assert reg.build("thing", {"size": 3}).size == 3


def test_unknown_name_lists_names():
    reg = Registry("widget.kind", {"a": Thing, "b": Thing})
    with pytest.raises(ValueError, match=r"widget.kind='c'; allowed: a, b"):
        reg.get("c")


def test_missing_optional_package_is_one_line_with_install_hint(tmp_path, monkeypatch):
    (tmp_path / "needs_missing_pkg.py").write_text("import surely_not_installed_pkg_xyz\nclass X: pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    reg = Registry("retriever.kind", {"fancy": "needs_missing_pkg:X"}, install_hints={"fancy": "pip install '.[bge]'"})
    with pytest.raises(ValueError) as err:
        reg.get("fancy")
    assert "surely_not_installed_pkg_xyz" in str(err.value) and "pip install '.[bge]'" in str(err.value)


def test_broken_own_module_is_not_mistaken_for_a_missing_extra():
    reg = Registry("widget.kind", {"gone": "no_such_module_in_project_abc:X"})
    with pytest.raises(ImportError):
        reg.get("gone")


def test_var_kwargs_accept_anything_and_register_refuses_conflicts():
    def anything(**kw):
        return kw
    check_kwargs(anything, {"whatever": 1}, "s")
    reg = Registry("widget.kind", {"a": Thing})
    reg.register("a", Thing)  # same target: fine
    with pytest.raises(ValueError, match="registered twice"):
        reg.register("a", anything)
