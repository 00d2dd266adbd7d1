"""The type hints hold: mypy, as ``make lint`` runs it (``[tool.mypy]`` of
pyproject.toml), finds no error in the packages it checks."""

import subprocess
import sys
import tomllib

import pytest

from tests.support.paths import ROOT

CHECKED = ("interfaces", "config", "runtime", "nn", "data")


def test_the_type_check_covers_the_lower_layers():
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    files = settings["tool"]["mypy"]["files"]
    assert {f"src/rosetta/{name}" for name in CHECKED} <= set(files)


@pytest.mark.slow
def test_mypy_finds_no_error():
    # the cache (.mypy_cache) makes a second run take seconds, not a minute
    done = subprocess.run(
        [sys.executable, "-m", "mypy"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
