"""Every file and folder a command writes gets the permissions the user's
shell would give it: 0666 or 0777 less the umask, never private and never
more open. One rule (``rosetta.runtime.atomic.as_the_user_makes``, and
``rosetta.runs.checkpoint.save_tensors`` for safetensors, which makes its
files 0600) checked here on every command that writes, under four umasks.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
from pathlib import Path

import pytest
from benchmarks.marian_model import make_marian

from rosetta.cli import build_parser, main
from tests.support.paths import ROOT

pytest.importorskip("transformers")  # makes the MarianMT folder

UMASKS = [0o000, 0o002, 0o022, 0o077]
TINY = ["--set", "train.max_epochs=null", "--set", "train.max_steps=2"]
TINY += ["--set", "train.validate_every=2", "--set", "train.threads=1"]
# every writing command, in an order in which each finds what it reads
WRITES: dict[tuple[str, ...], list[str]] = {
    ("prepare",): ["prepare", "toy.yaml", "--output", "prepared"],
    ("train",): ["train", "toy.yaml", "-o", "trained", *TINY],
    ("average",): ["average", "-m", "run", "--last", "2", "-o", "averaged"],
    ("translate",): ["translate", "-m", "run", "-i", "in.txt", "-o", "out.txt"],
    ("distill",): ["distill", "-m", "run", "--src", "in.txt", "-o", "distilled.txt"],
    ("score",): [
        *("score", "-m", "run", "--src", "in.txt", "--tgt", "in.txt"),
        *("-o", "scored.txt"),
    ],
    ("evaluate",): [
        *("evaluate", "-m", "run", "--src", "in.txt", "--ref", "in.txt"),
        *("-o", "evaluated.txt"),
    ],
    ("export", "ctranslate2"): ["export", "ctranslate2", "-m", "run", "-o", "ct2"],
    ("import", "hf"): ["import", "hf", "opus-mt-tiny", "-o", "imported"],
    ("export", "hf"): ["export", "hf", "-m", "imported", "-o", "exported"],
    ("task",): [
        *("task", "copy", "--count", "30", "--valid", "5", "--test", "5"),
        *("-o", "task"),
    ],
    ("demo",): [
        *("demo", "--config", "toy.yaml", "--steps", "2", "--device", "cpu"),
        *("--output", "demo"),
    ],
    ("plot", "curves"): ["plot", "curves", "run", "-o", "curves.png"],
    ("plot", "positions"): ["plot", "positions", "-o", "positions.svg"],
    ("plot", "attention"): [
        *("plot", "attention", "-m", "run", "alpha beta"),
        *("-o", "attention.png"),
    ],
}


def writing_commands(parser: argparse.ArgumentParser, path=()) -> set[tuple[str, ...]]:
    """The command line's commands that take ``--output``."""
    subparsers = [
        a for a in parser._actions if isinstance(a, argparse._SubParsersAction)
    ]
    if not subparsers:
        takes = any("--output" in a.option_strings for a in parser._actions)
        return {path} if takes else set()
    found: set[tuple[str, ...]] = set()
    for name, sub in subparsers[0].choices.items():
        found |= writing_commands(sub, (*path, name))
    return found


def test_every_writing_command_is_checked():
    """A new command with ``--output`` fails here until it is in WRITES."""
    assert writing_commands(build_parser()) == set(WRITES)


def every_path(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if not p.is_symlink()}


@pytest.mark.slow
@pytest.mark.parametrize("mask", UMASKS, ids=[f"umask-{m:03o}" for m in UMASKS])
def test_every_path_a_command_writes_has_the_users_permissions(
    toy_run, tmp_path, monkeypatch, mask
):
    run = toy_run("transformer")
    work = tmp_path / "work"
    work.mkdir()
    shutil.copytree(run, work / "run")
    shutil.copy(run.parent / "toy.yaml", work / "toy.yaml")
    for corpus in run.parent.glob("*.src"):
        shutil.copy(corpus, work / corpus.name)
        shutil.copy(corpus.with_suffix(".tgt"), work / f"{corpus.stem}.tgt")
    (work / "in.txt").write_text("alpha beta\nzeta eta\n")
    make_marian(work / "opus-mt-tiny")  # a MarianMT folder to import
    before = every_path(work)
    monkeypatch.chdir(work)
    monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path / "matplotlib"))
    previous = os.umask(mask)
    try:
        for argv in WRITES.values():
            out = io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                status = main(argv)
            assert status in (0, None), f"rosetta {' '.join(argv)}:\n{out.getvalue()}"
    finally:
        os.umask(previous)
    wrong = []
    for path in sorted(every_path(work) - before):
        want = (0o777 if path.is_dir() else 0o666) & ~mask
        got = path.stat().st_mode & 0o777
        if got != want:
            wrong.append(f"{path.relative_to(work)}: {got:03o}, not {want:03o}")
    assert wrong == []


def test_safetensors_files_are_written_by_one_function():
    """``save_file`` makes private files: only ``save_tensors`` calls it."""
    callers = [
        path.relative_to(ROOT)
        for path in (ROOT / "src").rglob("*.py")
        if "save_file(" in path.read_text(encoding="utf-8")
    ]
    assert callers == [Path("src/rosetta/runs/checkpoint.py")]
