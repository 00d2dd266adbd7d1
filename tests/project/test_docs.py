"""The repository explains itself: no citations of material users do not
have, and a README that stays short."""

import re

from tests.support.paths import ROOT

PRODUCT = ["src", "docs", "configs", "benchmarks", "README.md", "mkdocs.yml"]


def product_files():
    for entry in PRODUCT:
        path = ROOT / entry
        files = [path] if path.is_file() else sorted(path.rglob("*"))
        for file in files:
            text = file.suffix in {".py", ".md", ".yaml", ".yml", ".js", ".html"}
            if text and ".egg-info" not in str(file):
                yield file


def test_no_citations_of_unpublished_notes():
    pattern = re.compile(r"\bSPEC\b|\b[Tt]he notes\b|\bnotes'")
    found = [
        f"{file.relative_to(ROOT)}:{number}: {line.strip()}"
        for file in product_files()
        for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert found == []


def test_the_readme_stays_a_readme():
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 300


def test_the_site_reads_from_the_file_system_and_docstrings_have_one_style():
    """Plain ``page.html`` links (a folder link shows a directory listing on
    ``file://``), and the docstrings' sections (``Args:``, ``Returns:``)
    rendered as the Google style they are written in."""
    import yaml

    settings = yaml.safe_load(
        (ROOT / "mkdocs.yml").read_text(encoding="utf-8").replace("!!python", "#")
    )
    assert settings["use_directory_urls"] is False
    handler = settings["plugins"][1]["mkdocstrings"]["handlers"]["python"]
    assert handler["options"]["docstring_style"] == "google"
    other_styles = re.compile(
        r"^\s*(:param |:returns?:|Parameters\n\s*-{4,})|\S::$", re.M
    )
    assert [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "src").rglob("*.py"))
        if other_styles.search(path.read_text(encoding="utf-8"))
    ] == []


def test_every_file_the_docs_name_exists():
    """A path in a page's code span (``tests/...``, ``benchmarks/...``,
    ``src/...``; in the formula table, a module under ``src/rosetta/``)
    names a file or folder there: a moved file leaves no stale pointer.
    Placeholders (``NAME``, ``PACKAGE``) and what benchmarks write
    (``benchmarks/results/``) are not files of the repository."""
    full = re.compile(r"`((?:tests|benchmarks|src)/[\w./-]+)(?:::[\w.]+)?`")
    module = re.compile(r"`([\w/]+\.py)(?:::[\w.]+)?`")
    missing = []
    formulas = ROOT / "docs" / "textbook" / "formulas.md"
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            paths = full.findall(line)
            if page == formulas:
                paths += [
                    ROOT / "src" / "rosetta" / m
                    for m in module.findall(line)
                    if not m.startswith(("tests/", "benchmarks/", "src/"))
                ]
            for path in paths:
                name = str(path)
                if re.search(r"\b[A-Z]{4,}\b", name) or "benchmarks/results/" in name:
                    continue
                if not (ROOT / path).exists():
                    missing.append(f"{page.relative_to(ROOT)}:{number}: {name}")
    assert missing == [], "\n".join(missing)


def test_every_install_line_names_the_distribution_rosetta_is_published_as():
    """``pip install rosetta`` fetches another project from the package
    index: Rosetta installs as ``rosetta-nmt`` (its extras too), or from a
    clone (``pip install -e .``)."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == "rosetta-nmt"
    ours = re.compile(
        r"""^['"]?(rosetta-nmt(\[[a-z0-9,-]+\])?|\.(\[[a-z0-9,-]+\])?)['"]?$"""
    )
    install = re.compile(
        r"""pip install ((?:-[-\w]+ )*)(['"]?[\w.-]+(\[[\w,-]+\])?['"]?)"""
    )
    wrong = []
    tests = [
        f for f in sorted((ROOT / "tests").rglob("*.py")) if f.name != "test_docs.py"
    ]
    for file in [*product_files(), *tests]:
        lines = file.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, 1):
            for found in install.finditer(line):
                name = found[2]
                ours_or_not = name.strip("'\"").startswith(("rosetta", "."))
                if ours_or_not and not ours.match(name):
                    wrong.append(f"{file.relative_to(ROOT)}:{number}: {line.strip()}")
    assert wrong == []
    text = "pip install 'rosetta[hub]' or pip install -e '.[ct2]'"
    assert [m[2] for m in install.finditer(text)] == ["'rosetta[hub]'", "'.[ct2]'"]
    assert not ours.match("'rosetta[hub]'") and ours.match("'rosetta-nmt[hub]'")
