"""``rosetta distill``: one line out per line in, and a stopped run resumes."""

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rosetta.cli import main
from rosetta.errors import RosettaError
from rosetta.jobs.distill import distill, partial_paths
from rosetta.jobs.loading import load_translator
from rosetta.search.options import SearchOptions

SOURCES = [
    "alpha beta",
    "",
    "gamma delta eps",
    "zeta",
    "eta theta iota kappa",
    "beta beta",
    "",
    "kappa alpha",
]
BEAM = SearchOptions(beam_size=3)


def finished(out):
    """The lines a stopped run's record vouches for (what a resume keeps)."""
    partial, record = partial_paths(out)
    done = json.loads(record.read_text()).get("done")
    return partial.read_bytes()[: done["bytes"] if done else 0].count(b"\n")


class StopsAfter:
    """A translator that is interrupted after ``chunks`` calls."""

    def __init__(self, translator, chunks):
        self.translator, self.left = translator, chunks
        self.device = translator.device
        self.decodes_in_workers = translator.decodes_in_workers

    def translate_nbest(self, *args, **kwargs):
        if not self.left:
            raise KeyboardInterrupt
        self.left -= 1
        return self.translator.translate_nbest(*args, **kwargs)


@pytest.fixture(scope="module")
def teacher(toy_run):
    return load_translator(toy_run("transformer"), device="cpu")


def test_each_line_gets_its_translation_and_blank_lines_stay_blank(teacher, tmp_path):
    out = tmp_path / "out.txt"
    count = distill(teacher, SOURCES, out, BEAM, what={}, chunk_lines=3)
    assert count == len(SOURCES)
    lines = out.read_text(encoding="utf-8").split("\n")
    assert lines[-1] == "" and lines[:-1] == teacher.translate(SOURCES, BEAM)
    assert lines[1] == lines[6] == ""
    assert not any(path.exists() for path in partial_paths(out))


def test_a_stopped_run_resumes_from_its_last_finished_chunk(teacher, tmp_path):
    out = tmp_path / "out.txt"
    with pytest.raises(KeyboardInterrupt):
        distill(StopsAfter(teacher, 2), SOURCES, out, BEAM, what={}, chunk_lines=3)
    partial, _ = partial_paths(out)
    assert not out.exists() and finished(out) == 6
    with partial.open("a") as handle:  # a write cut off mid-line
        handle.write("half a li")
    count = distill(teacher, SOURCES, out, BEAM, what={}, chunk_lines=3)
    assert count == 2
    assert out.read_text(encoding="utf-8").splitlines() == teacher.translate(
        SOURCES, BEAM
    )


@pytest.mark.parametrize("resumed", [False, True], ids=["new", "resumed"])
@pytest.mark.parametrize("shown", [False, True], ids=["quiet", "progress"])
def test_the_progress_bar_is_shown_as_asked(teacher, tmp_path, capsys, resumed, shown):
    out = tmp_path / "out.txt"
    if resumed:
        with pytest.raises(KeyboardInterrupt):
            distill(StopsAfter(teacher, 1), SOURCES, out, BEAM, what={}, chunk_lines=3)
    capsys.readouterr()
    distill(teacher, SOURCES, out, BEAM, what={}, chunk_lines=3, progress=shown)
    assert ("distill:" in capsys.readouterr().err) == shown


def test_resuming_with_other_sources_is_refused(teacher, tmp_path):
    out = tmp_path / "out.txt"
    with pytest.raises(KeyboardInterrupt):
        distill(StopsAfter(teacher, 1), SOURCES, out, BEAM, what={}, chunk_lines=3)
    with pytest.raises(RosettaError, match="other sources or settings"):
        distill(teacher, SOURCES[:-1], out, BEAM, what={}, chunk_lines=3)
    with pytest.raises(RosettaError, match="other sources or settings"):
        distill(teacher, SOURCES, out, BEAM, what={"beam": 4}, chunk_lines=3)


def test_the_command_uses_beam_five_by_default(teacher, toy_run, tmp_path, capsys):
    src = tmp_path / "train.src"
    src.write_text("\n".join(SOURCES) + "\n", encoding="utf-8")
    out = tmp_path / "distilled.txt"
    run = str(toy_run("transformer"))
    flags = ["--src", str(src), "-o", str(out), "--device", "cpu"]
    assert main(["distill", "-m", run, *flags]) == 0
    expected = teacher.translate(SOURCES, SearchOptions(beam_size=5))
    assert out.read_text(encoding="utf-8").splitlines() == expected
    assert f"{len(SOURCES)} lines" in capsys.readouterr().err


def test_a_resumed_command_refuses_another_teacher_or_precision(
    teacher, toy_run, tmp_path, monkeypatch, capsys
):
    """The record beside the partial output names the teacher's checkpoint by
    checksum and the precision: a run whose best moved on, or another
    precision, would mix two teachers' translations in one file."""
    import shutil

    import rosetta.cli.common as command

    run = tmp_path / "run"
    shutil.copytree(toy_run("transformer"), run)
    src = tmp_path / "train.src"
    src.write_text("\n".join(SOURCES) + "\n", encoding="utf-8")
    out = tmp_path / "distilled.txt"
    argv = ["distill", "-m", str(run), "--src", str(src), "-o", str(out)]
    argv += ["--chunk-lines", "3", "--device", "cpu"]
    with monkeypatch.context() as patch:
        patch.setattr(command, "load_translator", lambda *_: StopsAfter(teacher, 1))
        assert main(argv) == 130  # interrupted after one chunk
    assert finished(out) == 3
    capsys.readouterr()
    assert main([*argv, "--precision", "bf16"]) == 2
    assert "other sources or settings" in capsys.readouterr().err
    index = json.loads((run / "checkpoints.json").read_text())
    others = [name for name in index["checkpoints"] if name != index["best"]]
    index["best"] = others[0]  # as if training had gone on and found a better one
    (run / "checkpoints.json").write_text(json.dumps(index))
    assert main(argv) == 2
    assert "other sources or settings" in capsys.readouterr().err
    assert finished(out) == 3  # nothing mixed in


# ``rosetta distill ARGV`` that freezes once CHUNKS chunks are on disk,
# writing its pid to MARKER, to be killed there:
#   python -c FREEZES MARKER CHUNKS ARGV...
FREEZES = """
import os, sys, time
from pathlib import Path

import rosetta.cli.common as command
from rosetta.cli import main

marker, chunks, argv = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
load = command.load_translator


class Freezes:
    def __init__(self, translator):
        self.translator, self.left = translator, chunks
        self.device = translator.device
        self.decodes_in_workers = translator.decodes_in_workers

    def translate_nbest(self, *args, **kwargs):
        if not self.left:  # the earlier chunks are written and fsynced
            marker.write_text(str(os.getpid()))
            while True:
                time.sleep(0.5)
        self.left -= 1
        return self.translator.translate_nbest(*args, **kwargs)


command.load_translator = lambda args, paths: Freezes(load(args, paths))
sys.exit(main(argv))
"""


def killed_midway(argv: list[str], marker: Path, chunks: int) -> None:
    """``rosetta distill ARGV`` in another process, killed with SIGKILL
    once ``chunks`` chunks are written."""
    process = subprocess.Popen(
        [sys.executable, "-c", FREEZES, str(marker), str(chunks), *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert process.poll() is None, process.stderr.read().decode()[-2000:]
        assert time.monotonic() < deadline, "the kill point was never reached"
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    assert process.wait(timeout=60) == -signal.SIGKILL
    process.stderr.close()


def whole_and_killed(run: Path, tmp_path: Path, copies: int):
    """``rosetta distill`` of ``copies`` × SOURCES run whole, and the same
    command killed after two chunks: (its argv, the whole output, its output)."""
    src = tmp_path / "train.src"
    src.write_text("\n".join(SOURCES * copies) + "\n", encoding="utf-8")
    flags = ["-m", str(run), "--src", str(src), "--chunk-lines", "3"]
    flags += ["--device", "cpu"]
    whole, out = tmp_path / "whole.txt", tmp_path / "distilled.txt"
    assert main(["distill", *flags, "-o", str(whole)]) == 0
    argv = ["distill", *flags, "-o", str(out)]
    killed_midway(argv, tmp_path / "pid", chunks=2)
    return argv, whole, out


@pytest.mark.parametrize("again", [[], ["--overwrite"]], ids=["same", "overwrite"])
def test_a_killed_command_resumes_to_the_uninterrupted_output(
    toy_run, tmp_path, capsys, again
):
    argv, whole, out = whole_and_killed(toy_run("transformer"), tmp_path, 3)
    assert finished(out) == 6 and not out.exists()
    capsys.readouterr()
    # another search is refused, in one line that names what changed
    assert main([*argv, "--beam", "4"]) == 2
    error = capsys.readouterr().err
    assert "search.beam_size: 5 -> 4" in error and len(error.splitlines()) == 1
    assert main([*argv, *again]) == 0
    assert f"{len(SOURCES) * 3} lines ({len(SOURCES) * 3 - 6} translated now)" in (
        capsys.readouterr().err
    )
    assert out.read_bytes() == whole.read_bytes()
    assert not any(path.exists() for path in partial_paths(out))


def test_lines_added_to_a_killed_runs_partial_output_are_not_kept(
    toy_run, tmp_path, capsys
):
    """Only what the record vouches for is kept: lines added by hand after a
    kill are cut off and translated again; the output is the uninterrupted
    one's."""
    argv, whole, out = whole_and_killed(toy_run("transformer"), tmp_path, 2)
    partial, _ = partial_paths(out)
    with partial.open("a", encoding="utf-8") as handle:
        handle.write("junk\nmore junk\nand more\n")
    assert main(argv) == 0
    assert out.read_bytes() == whole.read_bytes()


def test_a_killed_run_resumes_after_its_folder_is_moved(toy_run, tmp_path, capsys):
    """The record knows the teacher by its weights, not its path."""
    inner = tmp_path / "inner"
    inner.mkdir()
    teacher = inner / "teacher"
    shutil.copytree(toy_run("transformer"), teacher)
    argv, whole, out = whole_and_killed(teacher, inner, 2)
    moved = tmp_path / "moved"
    inner.rename(moved)
    again = [
        str(moved / Path(a).relative_to(inner)) if a.startswith(str(inner)) else a
        for a in argv
    ]
    capsys.readouterr()
    assert main(again) == 0, capsys.readouterr().err
    result = moved / out.relative_to(inner)
    assert result.read_bytes() == (moved / whole.relative_to(inner)).read_bytes()
