"""What the tests of the files Rosetta reads back share
(``tests/boundaries/run_files/``): their settings, the promise they assert
(and the command line run to check it), generated damage to a record or a
list, the command that reads a damaged run (translating with it, or
resuming it), and a FIFO that cannot hang a test."""

from __future__ import annotations

import json
import os
import shutil
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from rosetta.cli import main
from rosetta.runs.checkpoint import read_index

# derandomized, as every property test here (tests/conftest.py); few
# examples, so that each file's damage runs in seconds
FUZZ = settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
DEEP = "[" * 100_000 + "]" * 100_000  # nested past any parser's stack
RELEASE_AFTER = 60.0  # seconds: far beyond any command these tests run
SOURCES = "alpha beta\ngamma delta eps\n"
ODD_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.text(max_size=4),
    st.just([]),
    st.just({}),
    st.just([[[[[]]]]]),
)


def paths_in(data, prefix=()):
    """Every key path into nested dicts."""
    if isinstance(data, dict):
        for key, value in data.items():
            yield (*prefix, key)
            yield from paths_in(value, (*prefix, key))


@st.composite
def damage(draw, data):
    """A damaged copy of ``data`` (a dict read from JSON), or text."""
    kind = draw(st.sampled_from(["remove", "retype", "cut", "other json", "deep"]))
    if kind == "deep":  # nested past any parser's stack
        depth = draw(st.sampled_from([1_000, 100_000]))
        return "[" * depth + "]" * depth
    if kind == "cut":
        text = json.dumps(data)
        return text[: draw(st.integers(0, max(0, len(text) - 1)))]
    if kind == "other json":
        return json.dumps(draw(ODD_VALUES))
    paths = sorted(paths_in(data), key=str)
    path = draw(st.sampled_from(paths))
    copy = json.loads(json.dumps(data))
    holder = copy
    for key in path[:-1]:
        holder = holder[key]
    if kind == "remove":
        del holder[path[-1]]
    else:
        holder[path[-1]] = draw(ODD_VALUES)
    return copy


def command(template: Path, run: Path, tmp_path: Path, which: str) -> list[str]:
    """The command that reads the damaged file: ``translate``, or resuming
    with the run's own configuration (taken from the undamaged ``template``)."""
    if which == "translate":
        source = tmp_path / "in.txt"
        source.write_text("alpha beta\n")
        return ["translate", "-m", str(run), "-i", str(source)]
    latest = template / read_index(template)["latest"]
    meta = json.loads((latest / "checkpoint.json").read_text())
    config = tmp_path / "config.yaml"
    config.write_text(json.dumps(meta["config"]))
    return ["train", str(config), "-o", str(run), "--resume"]


def translate(run: Path, tmp_path: Path) -> list[str]:
    source = tmp_path / "in.txt"
    source.write_text("alpha beta\n")
    return ["translate", "-m", str(run), "-i", str(source)]


def latest(run: Path) -> Path:
    """The run's latest checkpoint folder."""
    return run / read_index(run)["latest"]


def copy_run(template: Path, folder: Path) -> Path:
    """A fresh copy of ``template`` at ``folder``."""
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(template, folder)
    return folder


def run_main(capsys, argv: list) -> tuple[int, str, str]:
    """``rosetta ARGV`` in this process, checked to keep the promise; its
    status, standard output and standard error."""
    capsys.readouterr()
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    works_or_one_line(status, err)
    return status, out, err


def works_or_one_line(status: int, err: str) -> None:
    """The promise: the command worked, or exited 2 saying why in one line
    (after, at most, the line that names the checkpoint loaded)."""
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if not line.startswith("model: ")]
    assert status == 0 or (status == 2 and len(lines) == 1), (status, err)


def one_line(error: BaseException) -> str:
    """A refusal's message, checked to be one line."""
    message = str(error)
    assert message and "\n" not in message, message
    return message


@st.composite
def list_damage(draw, items: list) -> str:
    """A damaged copy of the JSON list ``items``, as text: an item removed or
    of another type, the text cut short, other JSON, or nesting too deep."""
    kind = draw(st.sampled_from(["remove", "retype", "cut", "other json", "deep"]))
    text = json.dumps(items)
    if kind == "deep":
        return DEEP
    if kind == "cut":
        return text[: draw(st.integers(0, len(text) - 1))]
    if kind == "other json":
        return json.dumps(draw(ODD_VALUES))
    copy = list(items)
    index = draw(st.integers(0, len(copy) - 1))
    if kind == "remove":
        del copy[index]
    else:
        copy[index] = draw(ODD_VALUES)
    return json.dumps(copy)


@contextmanager
def fifo_in_place(path: Path) -> Iterator[list[bool]]:
    """``path`` replaced by a FIFO for the block. A reader or a writer still
    blocked on it after ``RELEASE_AFTER`` seconds is let go and recorded in
    the list yielded, so a command that would hang fails its test instead."""
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    released: list[bool] = []
    done = threading.Event()

    def release() -> None:
        if done.wait(RELEASE_AFTER):
            return
        if not stat.S_ISFIFO(os.lstat(path).st_mode):
            return
        reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # frees a writer
        writer = os.open(path, os.O_WRONLY | os.O_NONBLOCK)  # frees a reader
        released.append(True)
        os.close(writer)
        while not done.wait(0.05):  # drain what a freed writer writes
            with suppress(BlockingIOError):
                os.read(reader, 1 << 16)
        os.close(reader)

    thread = threading.Thread(target=release, daemon=True)
    thread.start()
    try:
        yield released
    finally:
        done.set()
        thread.join()
