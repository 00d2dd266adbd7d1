"""``rosetta distill``: one line out per line in, and a stopped run resumes."""

import json

import pytest

from rosetta.cli import main
from rosetta.distill import distill, finished_lines, partial_paths
from rosetta.errors import RosettaError
from rosetta.loading import load_translator
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


class StopsAfter:
    """A translator that is interrupted after ``chunks`` calls."""

    def __init__(self, translator, chunks):
        self.translator, self.left = translator, chunks
        self.device = translator.device
        self.decodes_in_workers = translator.decodes_in_workers

    def translate(self, *args, **kwargs):
        if not self.left:
            raise KeyboardInterrupt
        self.left -= 1
        return self.translator.translate(*args, **kwargs)


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
    assert not out.exists() and finished_lines(partial) == 6
    with partial.open("a") as handle:  # a write cut off mid-line
        handle.write("half a li")
    count = distill(teacher, SOURCES, out, BEAM, what={}, chunk_lines=3)
    assert count == 2
    assert out.read_text(encoding="utf-8").splitlines() == teacher.translate(
        SOURCES, BEAM
    )


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

    import rosetta.cli.distill as command

    run = tmp_path / "run"
    shutil.copytree(toy_run("transformer"), run)
    src = tmp_path / "train.src"
    src.write_text("\n".join(SOURCES) + "\n", encoding="utf-8")
    out = tmp_path / "distilled.txt"
    argv = ["distill", "-m", str(run), "--src", str(src), "-o", str(out)]
    argv += ["--chunk-lines", "3", "--device", "cpu"]
    with monkeypatch.context() as patch:
        patch.setattr(command, "load_translator", lambda args: StopsAfter(teacher, 1))
        assert main(argv) == 130  # interrupted after one chunk
    assert finished_lines(partial_paths(out)[0]) == 3
    capsys.readouterr()
    assert main([*argv, "--precision", "bf16"]) == 2
    assert "other sources or settings" in capsys.readouterr().err
    index = json.loads((run / "checkpoints.json").read_text())
    others = [name for name in index["checkpoints"] if name != index["best"]]
    index["best"] = others[0]  # as if training had gone on and found a better one
    (run / "checkpoints.json").write_text(json.dumps(index))
    assert main(argv) == 2
    assert "other sources or settings" in capsys.readouterr().err
    assert finished_lines(partial_paths(out)[0]) == 3  # nothing mixed in
