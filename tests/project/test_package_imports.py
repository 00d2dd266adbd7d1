"""Packages of one layer import one another one way only: two sibling
packages that import each other both ways are one package in two folders,
even where no module imports its way back to itself (which
``test_architecture`` checks)."""

from __future__ import annotations

from tests.project.test_architecture import PACKAGE, import_graph, module_name


def sibling_arrows(
    graph: dict[str, set[str]], packages: set[str]
) -> dict[tuple[str, str], list[str]]:
    """For two packages under one parent (``rosetta.inference`` and
    ``rosetta.search``, or two families), one's modules importing the
    other's: the imports that draw that arrow, ``module -> imported``. A
    package and what it holds are no siblings."""
    arrows: dict[tuple[str, str], list[str]] = {}
    for module, imports in sorted(graph.items()):
        for imported in sorted(imports):
            here, there = module.split("."), imported.split(".")
            pairs = zip(here, there, strict=False)
            split = next((n for n, (a, b) in enumerate(pairs) if a != b), None)
            if split is None:  # one holds the other
                continue
            pair = (".".join(here[: split + 1]), ".".join(there[: split + 1]))
            if set(pair) <= packages:
                arrows.setdefault(pair, []).append(f"{module} -> {imported}")
    return arrows


def both_ways(arrows: dict[tuple[str, str], list[str]]) -> list[str]:
    """The sibling packages that import each other, with the imports."""
    return [
        f"{a} <-> {b}: {', '.join(arrows[a, b])}; {', '.join(arrows[b, a])}"
        for a, b in sorted(arrows)
        if a < b and (b, a) in arrows
    ]


def test_the_sibling_check_finds_two_packages_importing_each_other():
    graph = {
        "rosetta.inference.translator": {"rosetta.search.beam", "rosetta.search"},
        "rosetta.search.beam": {"rosetta.search.topk"},
        "rosetta.search.topk": {"rosetta.inference.constraints"},
        "rosetta.inference": {"rosetta.inference.translator"},
    }
    packages = {"rosetta", "rosetta.inference", "rosetta.search"}
    assert both_ways(sibling_arrows(graph, packages)) == [
        "rosetta.inference <-> rosetta.search: "
        "rosetta.inference.translator -> rosetta.search, "
        "rosetta.inference.translator -> rosetta.search.beam; "
        "rosetta.search.topk -> rosetta.inference.constraints"
    ]
    del graph["rosetta.search.topk"]  # one way only
    assert both_ways(sibling_arrows(graph, packages)) == []


def test_no_two_sibling_packages_import_each_other():
    """Packages of one layer may import one another, one way: two that do it
    both ways are one package in two folders, even without a module cycle.
    Every import counts: a function's, and those only type checkers read."""
    packages = {module_name(path) for path in PACKAGE.rglob("__init__.py")}
    found = both_ways(sibling_arrows(import_graph(type_checking=True), packages))
    assert found == [], "\n".join(found)
