"""Writing never destroys: the claims before the work, the atomic writes, and
every command that writes, tried against the places a careless user names."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from rosetta.cli import main
from rosetta.errors import RosettaError
from rosetta.runtime.outputs import (
    atomic_file,
    atomic_folder,
    claim_file,
    claim_folder,
    write_text_atomic,
)


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` and the SHA-256 of its bytes."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def folder_of_someone_else(tmp_path: Path) -> Path:
    foreign = tmp_path / "notes"
    foreign.mkdir()
    (foreign / "todo.txt").write_text("keep me")
    return foreign


def ours(folder: Path) -> bool:
    return (folder / "mine.json").is_file()


def test_a_file_output_may_not_be_an_input_a_folder_or_existing(tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("keep\n")
    with pytest.raises(RosettaError, match="the output is the input"):
        claim_file(source, inputs=[source], overwrite=True)
    with pytest.raises(RosettaError, match="a folder; name a file"):
        claim_file(tmp_path)
    with pytest.raises(RosettaError, match="exists; pass --overwrite"):
        claim_file(source)
    assert claim_file(source, overwrite=True) == source
    new = claim_file(tmp_path / "deep" / "new.txt")  # its folder is made
    assert new.parent.is_dir() and not new.exists()
    assert source.read_text() == "keep\n"


def test_the_same_file_under_another_name_is_still_the_input(tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("keep\n")
    (tmp_path / "link.txt").symlink_to(source)
    with pytest.raises(RosettaError, match="the output is the input"):
        claim_file(tmp_path / "link.txt", inputs=[source], overwrite=True)
    with pytest.raises(RosettaError, match="the output is the input"):
        claim_file(tmp_path / "sub" / ".." / "in.txt", inputs=[source])


def test_a_folder_output_replaces_only_its_own_kind_and_never_a_run(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "checkpoints.json").write_text("{}")
    (run / "mine.json").write_text("{}")
    kind = dict(ours=ours, what="a thing")
    with pytest.raises(RosettaError, match="is a training run; it is never replaced"):
        claim_folder(run, overwrite=True, **kind)
    other = tmp_path / "photos"
    other.mkdir()
    (other / "cat.jpg").write_bytes(b"\xff")
    with pytest.raises(RosettaError, match="exists and is not a thing"):
        claim_folder(other, overwrite=True, **kind)
    with pytest.raises(RosettaError, match="the output holds the input"):
        claim_folder(tmp_path, inputs=[run / "checkpoint-1"], overwrite=True, **kind)
    made = tmp_path / "made"
    made.mkdir()
    (made / "mine.json").write_text("{}")
    with pytest.raises(RosettaError, match="pass --overwrite"):
        claim_folder(made, **kind)
    assert claim_folder(made, overwrite=True, **kind) == made
    # inside an input is a new place, not the input
    assert claim_folder(run / "average", inputs=[run], **kind) == run / "average"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old\n")
    with pytest.raises(ZeroDivisionError), atomic_file(target) as tmp:
        tmp.write_text("half")
        raise ZeroDivisionError
    assert target.read_text() == "old\n"
    assert sorted(os.listdir(tmp_path)) == ["out.txt"]
    write_text_atomic(target, "new\n")
    assert target.read_text() == "new\n"
    assert sorted(os.listdir(tmp_path)) == ["out.txt"]


def test_a_folder_is_swapped_whole_or_not_at_all(tmp_path):
    target = tmp_path / "export"
    target.mkdir()
    (target / "a").write_text("old")
    with pytest.raises(ZeroDivisionError), atomic_folder(target) as tmp:
        (tmp / "b").write_text("new")
        raise ZeroDivisionError
    assert snapshot(target) == {"a": hashlib.sha256(b"old").hexdigest()}
    with atomic_folder(target) as tmp:
        (tmp / "b").write_text("new")
    assert sorted(os.listdir(target)) == ["b"]
    assert sorted(os.listdir(tmp_path)) == ["export"]


# Every command that writes, pointed at what it must not destroy.


def run_refused(argv: list[str], capsys, expected: str) -> None:
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert expected in err, err
    assert "Traceback" not in err and err.count("\n") <= 3, err


def test_average_into_its_own_run_or_a_foreign_folder_is_refused(
    toy_run, tmp_path, capsys
):
    run = toy_run("transformer")
    before = snapshot(run)
    average = ["average", "-m", str(run), "--last", "2", "--overwrite"]
    run_refused([*average, "-o", str(run)], capsys, "the output is the input")
    run_refused([*average, "-o", str(run.parent)], capsys, "holds the input")
    checkpoint = next(run.glob("checkpoint-*"))
    run_refused([*average, "-o", str(checkpoint)], capsys, "the output is the input")
    foreign = folder_of_someone_else(tmp_path)
    run_refused([*average, "-o", str(foreign)], capsys, "is not an averaged checkpoint")
    assert (foreign / "todo.txt").read_text() == "keep me"
    assert snapshot(run) == before
    # an average of its own may be replaced, but only when asked
    output = tmp_path / "avg"
    assert main([*average[:-1], "-o", str(output)]) == 0
    run_refused([*average[:-1], "-o", str(output)], capsys, "pass --overwrite")
    assert main([*average, "-o", str(output)]) == 0


def test_distill_and_translate_never_write_over_their_input(toy_run, tmp_path, capsys):
    run = toy_run("transformer")
    source = tmp_path / "src.txt"
    source.write_text("alpha beta\nzeta\n")
    for verb, flag in (("distill", "--src"), ("translate", "-i")):
        argv = [verb, "-m", str(run), flag, str(source), "--overwrite"]
        run_refused([*argv, "-o", str(source)], capsys, "the output is the input")
        folder = tmp_path / "folder"
        folder.mkdir(exist_ok=True)
        run_refused([*argv, "-o", str(folder)], capsys, "a folder; name a file")
        assert source.read_text() == "alpha beta\nzeta\n"
    translation = tmp_path / "out.txt"
    translation.write_text("precious\n")
    argv = ["translate", "-m", str(run), "-i", str(source), "-o", str(translation)]
    run_refused(argv, capsys, "exists; pass --overwrite")
    assert translation.read_text() == "precious\n"
    assert main([*argv, "--overwrite"]) == 0
    assert len(translation.read_text().splitlines()) == 2


@pytest.mark.parametrize("chunk", ["0", "-1"])
def test_distill_refuses_chunks_of_no_lines(toy_run, tmp_path, capsys, chunk):
    source = tmp_path / "src.txt"
    source.write_text("alpha\n")
    argv = ["distill", "-m", str(toy_run("transformer")), "--src", str(source)]
    argv += ["-o", str(tmp_path / "out.txt"), "--chunk-lines", chunk]
    run_refused(argv, capsys, "--chunk-lines: must be greater than or equal to 1")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src.txt"]


def test_export_into_the_run_or_a_foreign_folder_is_refused(toy_run, tmp_path, capsys):
    pytest.importorskip("ctranslate2")
    run = toy_run("transformer")
    before = snapshot(run)
    export = ["export", "ctranslate2", "-m", str(run), "--overwrite"]
    run_refused([*export, "-o", str(run)], capsys, "the output is the input")
    foreign = folder_of_someone_else(tmp_path)
    run_refused([*export, "-o", str(foreign)], capsys, "is not a CTranslate2 export")
    assert (foreign / "todo.txt").read_text() == "keep me"
    assert snapshot(run) == before


def test_task_and_plot_refuse_what_they_did_not_write(tmp_path, capsys):
    existing = tmp_path / "file.txt"
    existing.write_text("keep me")
    task = ["task", "copy", "--count", "20", "--valid", "5", "--test", "5"]
    run_refused([*task, "-o", str(existing)], capsys, "exists and is not a folder")
    assert main([*task, "-o", str(tmp_path / "copy")]) == 0
    run_refused([*task, "-o", str(tmp_path / "copy")], capsys, "pass --overwrite")
    assert main([*task, "-o", str(tmp_path / "copy"), "--overwrite"]) == 0
    image = tmp_path / "pe.png"
    image.write_bytes(b"mine")
    plot = ["plot", "positions", "--d-model", "8", "--length", "10"]
    run_refused([*plot, "-o", str(image)], capsys, "exists; pass --overwrite")
    assert image.read_bytes() == b"mine"
    assert existing.read_text() == "keep me"


def test_train_and_prepare_refuse_a_folder_of_other_files(tmp_path, capsys):
    from tests.toy import toy_config

    _, config = toy_config(tmp_path)
    foreign = tmp_path / "thesis"
    foreign.mkdir()
    (foreign / "chapter1.tex").write_text("keep me")
    for verb in ("prepare", "train"):
        argv = [verb, str(config), "-o", str(foreign)]
        run_refused(argv, capsys, "holds files that are not a Rosetta run")
    run_refused(
        ["train", str(config), "-o", str(foreign), "--resume"],
        capsys,
        "holds files that are not a Rosetta run",
    )
    assert sorted(p.name for p in foreign.iterdir()) == ["chapter1.tex"]
