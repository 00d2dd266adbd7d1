"""The shape of the code base: small modules, imports that point down (no
cycle), one family list."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.support.paths import ROOT

SRC = ROOT / "src"
PACKAGE = SRC / "rosetta"
MAX_LINES = 350
MAX_FUNCTION_LINES = 80  # a screen


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def later_call(node: ast.AST) -> bool:
    """``Later("module", "name")``: a family record naming its code
    (``rosetta.families.family.Later``)."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "Later"
        and bool(node.args)
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    )


def imported_modules(
    path: Path, modules: set[str], type_checking: bool = False
) -> set[str]:
    """The Rosetta modules ``path`` imports when it runs, anywhere in it (a
    function's import counts), but not those only type checkers read
    (``if TYPE_CHECKING:``) unless ``type_checking``. ``from a.b import c``
    imports the module ``a.b.c`` where there is one, else ``a.b``. Importing
    a module runs its packages' ``__init__`` first: a module outside package
    ``a.b`` that imports ``a.b.c`` depends on ``a.b`` too (``rosetta``
    itself, the public API, always runs first)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module_name(path) if path.name == "__init__.py" else None
    here = package or module_name(path).rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        typed_only = isinstance(node, ast.If) and _type_checking_only(node)
        if typed_only and not type_checking:
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = here.rsplit(".", node.level - 1)[0] if node.level > 1 else here
                base = f"{parent}.{base}" if base else parent
            names = [base] + [f"{base}.{alias.name}" for alias in node.names]
        elif later_call(node):
            names = [node.args[0].value]  # imported when called: an arrow all the same
        else:
            names = []
        if isinstance(node, ast.ImportFrom):
            base, *members = names
            named = [m for m in members if m in modules]
            found.update(named or ([base] if base in modules else []))
        else:
            found.update(name for name in names if name in modules)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    me = module_name(path)
    for name in list(found):
        package = name.rpartition(".")[0]
        while package.count("."):  # below the root package
            if not (me == package or me.startswith(package + ".")):
                found.add(package)
            package = package.rpartition(".")[0]
    found.discard(me)
    return found


def import_graph(type_checking: bool = False) -> dict[str, set[str]]:
    """Each module's Rosetta imports; with ``type_checking``, those only type
    checkers read too."""
    paths = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(path) for path in paths}
    return {module_name(p): imported_modules(p, modules, type_checking) for p in paths}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a list of modules, or None."""
    done: set[str] = set()
    for start in sorted(graph):
        stack: list[tuple[str, list[str]]] = [(start, sorted(graph[start]))]
        on_path = {start}
        while stack:
            node, todo = stack[-1]
            if not todo:
                stack.pop()
                on_path.discard(node)
                done.add(node)
                continue
            nxt = todo.pop()
            if nxt in on_path:
                path = [name for name, _ in stack]
                return [*path[path.index(nxt) :], nxt]
            if nxt not in done:
                stack.append((nxt, sorted(graph.get(nxt, ()))))
                on_path.add(nxt)
    return None


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


# The layers, lowest first, one package (or loose module) each: a module
# imports from its own package, and from packages of its layer or below,
# never above (docs/families.md draws the same map). Every package of
# Rosetta is named here: a new one must be placed.
LAYERS = (
    ("rosetta.errors", "rosetta.runtime"),
    ("rosetta.config",),  # the configuration knows no family and no torch
    ("rosetta.nn", "rosetta.data", "rosetta.evaluate"),
    ("rosetta.interfaces", "rosetta.runs", "rosetta.search"),
    ("rosetta.inference", "rosetta.train"),
    ("rosetta.families",),  # each family's package, and the list of them
    ("rosetta.jobs",),  # the application: training runs, loading, exports
    ("rosetta",),  # the public API
    ("rosetta.cli", "rosetta.serve", "rosetta.__main__"),
)


def package_of(module: str) -> str:
    """The package (or loose module) right under ``rosetta`` that holds
    ``module``; ``rosetta`` for the public API itself."""
    return ".".join(module.split(".")[:2])


def layer_of(module: str) -> int:
    package = package_of(module)
    for level, names in enumerate(LAYERS):
        if package in names:
            return level
    raise AssertionError(f"{package} is in no layer: place it in LAYERS")


def test_every_package_is_placed_in_one_layer():
    placed = [name for names in LAYERS for name in names]
    assert len(placed) == len(set(placed))
    packages = {package_of(module) for module in import_graph()}
    assert packages == set(placed), packages ^ set(placed)


def test_the_layer_map_places_modules_as_drawn():
    assert layer_of("rosetta.config.schema") < layer_of("rosetta.data.corpus")
    assert layer_of("rosetta.train.trainer") < layer_of("rosetta.families.nat.training")
    assert layer_of("rosetta.families") < layer_of("rosetta.jobs.training")
    assert layer_of("rosetta.jobs.restore") < layer_of("rosetta.cli.train")
    with pytest.raises(AssertionError, match="no layer"):
        layer_of("rosetta.some_new_module")


@pytest.mark.parametrize("type_checking", [False, True], ids=["run", "typed"])
def test_imports_point_down(type_checking):
    upward = [
        f"{module} -> {imported}"
        for module, imports in sorted(import_graph(type_checking).items())
        for imported in sorted(imports)
        if layer_of(imported) > layer_of(module)
    ]
    assert upward == [], "imports that point up:\n" + "\n".join(upward)


@pytest.mark.parametrize("type_checking", [False, True], ids=["run", "typed"])
def test_no_import_cycle(type_checking):
    """None when the code runs, and none counting the imports only type
    checkers read (``if TYPE_CHECKING:``): those are arrows too."""
    cycle = find_cycle(import_graph(type_checking))
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


@pytest.mark.parametrize(
    "path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC))
)
def test_modules_are_small(path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.name}: {lines} lines (at most {MAX_LINES})"


def long_functions(source: str, limit: int) -> list[str]:
    """The functions (methods, nested ones) of ``source`` over ``limit``
    lines, signature and docstring counted: ``name: N lines``."""
    return [
        f"{node.name}: {node.end_lineno - node.lineno + 1} lines"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > limit
    ]


@pytest.mark.parametrize(
    "path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC))
)
def test_functions_read_in_one_screen(path):
    """A function that outgrows a screen has become several steps: each gets
    a name of its own."""
    found = long_functions(path.read_text(encoding="utf-8"), MAX_FUNCTION_LINES)
    assert found == [], f"{path.name}: at most {MAX_FUNCTION_LINES} lines: {found}"


def test_the_function_guard_counts_what_it_should():
    body = "".join(f"    x{n} = {n}\n" for n in range(MAX_FUNCTION_LINES))
    source = f"def long():\n{body}\ndef short():\n    pass\n"
    assert long_functions(source, MAX_FUNCTION_LINES) == [
        f"long: {MAX_FUNCTION_LINES + 1} lines"
    ]
    nested = "class A:\n    async def m(self):\n" + body.replace("    ", "        ")
    assert long_functions(nested, MAX_FUNCTION_LINES) == [
        f"m: {MAX_FUNCTION_LINES + 1} lines"
    ]


def test_reading_the_configuration_loads_no_pytorch():
    """The configuration knows no family: its schema and reader import
    neither PyTorch nor any model code."""
    import subprocess
    import sys

    script = (
        "import sys, rosetta.config.schema, rosetta.config.reading; "
        "print(sorted(m for m in sys.modules if m == 'torch' "
        "or m.startswith('rosetta.families')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"


def test_every_function_a_family_record_names_exists():
    """A record names its code by module and name (``Later``, imported when
    called): each one must be there, callable."""
    from dataclasses import fields

    from rosetta.families import FAMILIES
    from rosetta.families.family import Later

    records = [
        *FAMILIES,
        *(engine for family in FAMILIES for engine in family.exports),
        *(importer for family in FAMILIES for importer in family.importers),
    ]
    named = [
        getattr(record, field.name)
        for record in records
        for field in fields(record)
        if isinstance(getattr(record, field.name), Later)
    ]
    assert len(named) >= 15
    for later in named:
        assert callable(later.resolve()), later


def test_loading_a_model_to_translate_leaves_the_compiler_unimported():
    """The size check before a model is built (on the ``meta`` device) runs
    no PyTorch reference implementation, whose first use imports
    ``torch._dynamo``: about 2 seconds of a one-sentence translation."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from rosetta.families import FAMILIES, check_model_fits\n"
        "from rosetta.families.transformer.config import TransformerConfig\n"
        "for family in FAMILIES:\n"
        "    check_model_fits(family.config(**family.example), 50, 60)\n"
        "learned = dict(positions='learned', embedding_norm=True)\n"
        "section = TransformerConfig(**learned, share_embeddings=False)\n"
        "check_model_fits(section, 50, 60)\n"
        "print('torch._dynamo' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "False"


def test_the_command_line_and_server_reach_no_family_s_own_modules():
    """The command line and the server use the list of families, their
    records and the application layer (``rosetta.jobs``), never a module
    inside one family's package; and they train, load and export through
    the application layer only: no training building block (``train``), no
    layer (``nn``) and no model interface (``interfaces``)."""
    graph = import_graph(type_checking=True)
    allowed = {"rosetta.families", "rosetta.families.family"}
    below = ("rosetta.train", "rosetta.nn", "rosetta.interfaces")
    reaching = sorted(
        f"{module} -> {imported}"
        for module, imports in graph.items()
        if module.startswith(("rosetta.cli", "rosetta.serve"))
        for imported in imports
        if (imported.startswith("rosetta.families") and imported not in allowed)
        or imported.startswith(below)
    )
    assert reaching == [], "\n".join(reaching)
