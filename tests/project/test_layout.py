"""The tests mirror the code: each test file lies in a folder named as a
package of ``src/rosetta/`` (a family's in ``tests/families/NAME/``), or in
``tests/boundaries/`` (robustness across a boundary, a folder below it for a
boundary of many kinds of file) or ``tests/project/`` (the repository as a
whole); none lies in ``tests/`` itself, and every folder of tests is a
package."""

from pathlib import Path

from tests.support.paths import ROOT

TESTS = ROOT / "tests"
PACKAGE = ROOT / "src" / "rosetta"
OWN_FOLDERS = {Path("project"), Path("boundaries")}


def folders(root: Path) -> list[Path]:
    """Every folder under ``root`` but caches (``__pycache__``, hidden ones)."""
    return sorted(
        path
        for path in root.rglob("*")
        if path.is_dir()
        and not any(
            part == "__pycache__" or part.startswith(".")
            for part in path.relative_to(root).parts
        )
    )


def test_no_test_file_lies_in_tests_itself():
    assert sorted(path.name for path in TESTS.glob("test_*.py")) == []


def test_every_test_file_lies_in_a_folder_of_the_source_or_its_own():
    misplaced = [
        str(path.relative_to(TESTS))
        for path in sorted(TESTS.rglob("test_*.py"))
        if (folder := path.parent.relative_to(TESTS)) not in OWN_FOLDERS
        and Path("boundaries") not in folder.parents
        and not (folder.parts and (PACKAGE / folder / "__init__.py").is_file())
    ]
    assert misplaced == [], "a test folder that names no package of src/rosetta/"


def test_every_folder_of_tests_is_a_package():
    assert [
        str(folder.relative_to(ROOT))
        for folder in [TESTS, *folders(TESTS)]
        if not (folder / "__init__.py").is_file()
    ] == []
