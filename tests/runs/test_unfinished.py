"""A model folder caught between the two renames of a swap (a kill after the
old folder moved aside, before the new one moved in) is named as that, with
the command that completes it, never as "no such model"."""

from __future__ import annotations

import pytest

from rosetta.cli import main
from rosetta.errors import RosettaError
from rosetta.jobs.importers import IMPORTED_KIND
from rosetta.jobs.loading import load_translator
from rosetta.runs.average import AVERAGE_KIND
from rosetta.runs.unfinished import WRITERS
from rosetta.runtime import atomic


class Killed(BaseException):
    """A kill, where ``ROSETTA_TEST_SWAP_PAUSE`` pauses: between the renames."""


def killed_between_the_renames(monkeypatch, argv: list[str]) -> None:
    def kill() -> None:
        raise Killed

    with monkeypatch.context() as patch:
        patch.setattr(atomic, "_pause_for_tests", kill)
        with pytest.raises(Killed):
            main(argv)


def test_an_import_stopped_between_its_renames_is_named_with_its_command(
    tmp_path, monkeypatch, capsys
):
    transformers = pytest.importorskip("transformers")
    assert transformers
    from benchmarks.marian_model import make_marian

    source = make_marian(tmp_path / "opus-mt-de-en")
    run = tmp_path / "run"
    command = ["import", "hf", str(source), "-o", str(run)]
    assert main(command) == 0
    killed_between_the_renames(monkeypatch, [*command, "--overwrite"])
    assert not run.exists()
    with pytest.raises(RosettaError) as refused:
        load_translator(run, device="cpu")
    said = str(refused.value)
    assert "no such model" not in said
    assert ".run.swap.json" in said and "stopped midway" in said
    assert f"running rosetta import again with -o {run}" in said
    # on the command line, in one line
    references = tmp_path / "ref.txt"
    references.write_text("a\n")
    capsys.readouterr()
    argv = ["evaluate", "-m", str(run), "--src", str(references)]
    assert main([*argv, "--ref", str(references), "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert "rosetta import again" in err and err.count("\n") == 1, err
    translate = ["translate", "-m", str(run), "-i", str(references)]
    assert main(translate) == 2
    err = capsys.readouterr().err
    assert "rosetta import again" in err and err.count("\n") == 1, err
    # what it says completes it: the new model takes its place
    main(command)
    assert load_translator(run, device="cpu").translate(["ein Hund"])


def test_a_missing_folder_without_a_swap_is_no_such_model(tmp_path):
    with pytest.raises(RosettaError, match="no-model: no such model file or folder"):
        load_translator(tmp_path / "no-model", device="cpu")


def test_the_writers_named_are_the_kinds_their_commands_record():
    from rosetta.families import FAMILIES

    kinds = {IMPORTED_KIND, AVERAGE_KIND}
    kinds |= {export.kind for family in FAMILIES for export in family.exports}
    assert set(WRITERS) <= kinds
    assert {IMPORTED_KIND, AVERAGE_KIND} <= set(WRITERS)
