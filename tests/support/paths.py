"""The repository's root, for the tests that read its files or run its
commands from there, wherever in ``tests/`` they lie."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
