"""What the tests of a run's files share as a fixture: a copy of the toy
Transformer's run, to damage."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest


@pytest.fixture
def run(toy_run, tmp_path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(toy_run("transformer"), copy)
    return copy
