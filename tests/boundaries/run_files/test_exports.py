"""A CTranslate2 export read back, whose files CTranslate2 opens itself:
its record (``rosetta.json``) and its vocabulary cut short, edited or
damaged as any record is, its model file gone, a file replaced by a link
out of the folder or by a FIFO (which would block CTranslate2 for good).

The promise: the export translates as the intact one does, or is refused
before it loads, in one line naming the file, exit status 2; never a
traceback, never a hang.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given

from rosetta.cli import main
from tests.runtime.test_outputs import run_refused
from tests.support.bad_input import run_refused_without_traceback
from tests.support.read_back import (
    FUZZ,
    SOURCES,
    copy_run,
    damage,
    fifo_in_place,
    latest,
    list_damage,
    run_main,
    translate,
)


@pytest.fixture(scope="module")
def export(toy_run, tmp_path_factory):
    """A CTranslate2 export of the toy model, and its translation of SOURCES."""
    pytest.importorskip("ctranslate2", reason="CTranslate2 is an optional extra")
    work = tmp_path_factory.mktemp("ct2")
    (work / "in.txt").write_text(SOURCES)
    out = work / "export"
    assert (
        main(
            [
                "export",
                "ctranslate2",
                "-m",
                str(latest(toy_run("transformer"))),
                "-o",
                str(out),
            ]
        )
        == 0
    )
    return out


def translate_export(folder: Path, capsys) -> tuple[int, str, str]:
    source = folder.parent / "in.txt"
    argv = ["translate", "-m", folder, "--engine", "ctranslate2", "-i", source]
    return run_main(capsys, argv)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["rosetta.json", "shared_vocabulary.json"])
def test_a_damaged_export_is_one_line_or_harmless(
    export, tmp_path_factory, capsys, name
):
    intact = translate_export(export, capsys)[1]
    data = json.loads((export / name).read_text())
    strategy = damage(data) if isinstance(data, dict) else list_damage(data)

    @FUZZ
    @given(damaged=strategy)
    def check(damaged):
        folder = copy_run(export, tmp_path_factory.mktemp("ct2") / "export")
        shutil.copy(export.parent / "in.txt", folder.parent / "in.txt")
        text = damaged if isinstance(damaged, str) else json.dumps(damaged)
        (folder / name).write_text(text)
        status, out, _ = translate_export(folder, capsys)
        assert status == 2 or out == intact

    check()


@pytest.mark.slow
@pytest.mark.parametrize("how", ["link", "fifo"])
def test_an_export_file_replaced_is_refused_in_one_line(export, tmp_path, capsys, how):
    """CTranslate2 opens the export's files itself: a link out of the folder
    or a FIFO (which would block it for good) is refused before it loads."""
    shutil.copy(export.parent / "in.txt", tmp_path / "in.txt")
    for name in sorted(p.name for p in export.iterdir()):
        folder = copy_run(export, tmp_path / "export")
        if how == "link":
            (folder / name).unlink()
            (folder / name).symlink_to(export / name)
            status, _, err = translate_export(folder, capsys)
        else:
            with fifo_in_place(folder / name) as released:
                status, _, err = translate_export(folder, capsys)
            assert not released, name
        # named, or its folder (without its marker, not taken for an export)
        assert status == 2 and (name in err or f"{folder}:" in err), (name, err)


def test_an_export_record_cut_short_is_one_line(run, tmp_path, capsys):
    pytest.importorskip("ctranslate2")
    export = tmp_path / "ct2"
    assert main(["export", "ctranslate2", "-m", str(run), "-o", str(export)]) == 0
    record = export / "rosetta.json"
    record.write_text(record.read_text()[:40])
    argv = [*translate(export, tmp_path), "--engine", "ctranslate2"]
    run_refused(argv, capsys, "rosetta.json: not a Rosetta CTranslate2 export's record")


def test_a_damaged_ctranslate2_export_is_one_line(toy_run, tmp_path, capsys):
    pytest.importorskip("ctranslate2")
    export = tmp_path / "ct2"
    argv = ["export", "ctranslate2", "-m", str(toy_run("transformer"))]
    assert main([*argv, "-o", str(export)]) == 0
    vocabulary = export / "shared_vocabulary.json"
    pieces = json.loads(vocabulary.read_text())
    pieces[4], pieces[5] = pieces[5], pieces[4]
    vocabulary.write_text(json.dumps(pieces))
    translate = ["translate", "-m", str(export), "--engine", "ctranslate2"]
    translate += ["-i", "/dev/null"]
    run_refused_without_traceback(
        translate, capsys, "not the vocabulary of the tokenizers"
    )
    (export / "model.bin").unlink()
    run_refused_without_traceback(
        translate, capsys, "CTranslate2 cannot load this export"
    )
