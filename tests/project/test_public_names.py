"""A package that names its public names without importing them lists each
three times (the ``TYPE_CHECKING`` import for type checkers, ``WHERE`` for
the lazy import, ``__all__``): the three lists agree, and each name is
defined where ``WHERE`` says."""

from __future__ import annotations

import ast
import importlib

import pytest

from tests.support.paths import ROOT

LAZY = sorted(
    path
    for path in (ROOT / "src" / "rosetta").rglob("__init__.py")
    if "exports(__name__" in path.read_text(encoding="utf-8")
)


def package_of(path) -> str:
    return ".".join(path.parent.relative_to(ROOT / "src").parts)


def typed_imports(path) -> dict[str, str]:
    """The names the ``if TYPE_CHECKING:`` block imports, and from where."""
    typed: dict[str, str] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            for imported in node.body:
                assert isinstance(imported, ast.ImportFrom)
                for alias in imported.names:
                    typed[alias.asname or alias.name] = imported.module or ""
    return typed


def test_there_are_lazy_packages():
    assert len(LAZY) >= 2


@pytest.mark.parametrize("path", LAZY, ids=lambda p: str(p.parent.name))
def test_the_three_lists_of_public_names_agree(path):
    module = importlib.import_module(package_of(path))
    where, listed = module.WHERE, set(module.__all__)
    assert typed_imports(path) == where
    assert set(where) <= listed
    for name in listed - set(where):  # imported at the top, as RosettaError is
        assert name in vars(module), f"{module.__name__}.{name} is not there"
    for name, home in where.items():
        assert getattr(importlib.import_module(home), name) is getattr(module, name)
