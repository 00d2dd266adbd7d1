"""A package's public names imported when first used.

``rosetta``, ``rosetta.data`` and ``rosetta.search`` name what they offer in
their ``__init__`` without importing it: each name's module (and PyTorch) is
imported the first time the name is read, so that importing a light module
of the package (a vocabulary constant, the search options) or asking the
command line for help does not wait for PyTorch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def exports(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """The package's ``__getattr__``: ``where`` maps each public name to the
    module that defines it."""

    def attribute(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(where[name]), name)

    return attribute
