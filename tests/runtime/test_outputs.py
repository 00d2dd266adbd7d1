"""Writing never destroys: the claims before the work, the atomic writes, and
every command that writes, tried against the places a careless user names."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from rosetta.cli import main
from rosetta.errors import RosettaError
from rosetta.runtime.atomic import atomic_file, atomic_folder, write_text_atomic
from rosetta.runtime.outputs import claim_file, claim_folder, record_written

WHAT = "rosetta test"


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


def test_a_file_output_may_not_be_an_input_a_folder_or_existing(tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("keep\n")
    with pytest.raises(RosettaError, match="the output is the input"):
        claim_file(source, inputs=[source], overwrite=True, what=WHAT)
    with pytest.raises(RosettaError, match="a folder; name a file"):
        claim_file(tmp_path, what=WHAT)
    with pytest.raises(RosettaError, match="exists; pass --overwrite"):
        claim_file(source, what=WHAT)
    # a file the command did not write is not replaced, even when asked
    with pytest.raises(RosettaError, match="not a file rosetta test wrote"):
        claim_file(source, overwrite=True, what=WHAT)
    record_written(source, WHAT)
    assert claim_file(source, overwrite=True, what=WHAT) == source
    with pytest.raises(RosettaError, match="not a file rosetta other wrote"):
        claim_file(source, overwrite=True, what="rosetta other")
    source.write_text("edited by the user\n")  # changed since: the user's now
    with pytest.raises(RosettaError, match="or it changed since"):
        claim_file(source, overwrite=True, what=WHAT)
    new = claim_file(tmp_path / "deep" / "new.txt", what=WHAT)  # its folder is made
    assert new.parent.is_dir() and not new.exists()


def test_the_same_file_under_another_name_is_still_the_input(tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("keep\n")
    (tmp_path / "link.txt").symlink_to(source)
    with pytest.raises(RosettaError, match="the output is the input"):
        claim_file(tmp_path / "link.txt", inputs=[source], overwrite=True, what=WHAT)
    with pytest.raises(RosettaError, match="the output is the input"):
        claim_file(tmp_path / "sub" / ".." / "in.txt", inputs=[source], what=WHAT)


def test_a_folder_output_replaces_only_its_own_kind_and_never_a_run(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "checkpoints.json").write_text("{}")
    with pytest.raises(RosettaError, match="is a training run; it is never replaced"):
        claim_folder(run, overwrite=True, what="a thing")
    other = tmp_path / "photos"
    other.mkdir()
    (other / "cat.jpg").write_bytes(b"\xff")
    with pytest.raises(RosettaError, match="exists and is not a thing"):
        claim_folder(other, overwrite=True, what="a thing")
    with pytest.raises(RosettaError, match="the output holds the input"):
        claim_folder(tmp_path, inputs=[run / "checkpoint-1"], overwrite=True, what="x")
    made = tmp_path / "made"
    with atomic_folder(made, kind="a thing") as folder:
        (folder / "mine.json").write_text("{}")
    with pytest.raises(RosettaError, match="pass --overwrite"):
        claim_folder(made, what="a thing")
    with pytest.raises(RosettaError, match="exists and is not another thing"):
        claim_folder(made, overwrite=True, what="another thing")
    assert claim_folder(made, overwrite=True, what="a thing") == made
    # inside a run is never a place to write, even a new one
    with pytest.raises(RosettaError, match="a training run; Rosetta never writes"):
        claim_folder(run / "average", what="a thing")


def test_overwrite_never_replaces_what_the_command_did_not_write(tmp_path):
    made = tmp_path / "made"
    with atomic_folder(made, kind="a thing") as folder:
        (folder / "sub").mkdir()
        (folder / "sub" / "a.txt").write_text("ours")
    (made / "notes.txt").write_text("a user's")
    with pytest.raises(RosettaError, match=r"changed since \(notes.txt\)"):
        claim_folder(made, overwrite=True, what="a thing")
    (made / "notes.txt").unlink()
    inner = made / "sub" / "myrun"  # a run trained inside the output
    inner.mkdir()
    (inner / "checkpoints.json").write_text("{}")
    with pytest.raises(RosettaError, match=r"sub/myrun/checkpoints\.json"):
        claim_folder(made, overwrite=True, what="a thing")
    assert (inner / "checkpoints.json").is_file()


@pytest.mark.parametrize(
    "marker",
    [
        "checkpoints.json",
        "checkpoint.json",
        "tokenizers.json",
        "rosetta.json",
        "source.spm",
        "sentencepiece.bpe.model",
    ],
)
def test_no_file_is_ever_written_inside_what_rosetta_keeps(tmp_path, marker):
    kept = tmp_path / "kept"
    (kept / "deeper").mkdir(parents=True)
    (kept / marker).write_text("{}")
    (kept / "deeper" / "model.safetensors").write_text("weights")
    for target in (kept / marker, kept / "new.txt", kept / "deeper/model.safetensors"):
        with pytest.raises(RosettaError, match="Rosetta never writes there"):
            claim_file(target, overwrite=True, what=WHAT)
    link = tmp_path / "link"  # a link does not lead around the rule
    link.symlink_to(kept)
    with pytest.raises(RosettaError, match="Rosetta never writes there"):
        claim_file(link / "x.txt", overwrite=True, what=WHAT)


@pytest.mark.parametrize(
    "name", [".rosetta-written.json", ".rosetta-output.json", ".out.swap.json"]
)
def test_rosettas_own_records_are_never_an_output(tmp_path, name):
    with pytest.raises(RosettaError, match="keeps its own records under"):
        claim_file(tmp_path / name, overwrite=True, what=WHAT)
    with pytest.raises(RosettaError, match="keeps its own records under"):
        claim_folder(tmp_path / name, overwrite=True, what="a thing")


def test_the_current_folder_is_never_replaced(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in (".", "..", str(tmp_path)):
        with pytest.raises(RosettaError, match="the current folder"):
            claim_folder(name, overwrite=True, what="a thing")


def test_temporary_names_never_take_a_users_file(tmp_path):
    target = tmp_path / "out"
    users = [
        tmp_path / ".out.tmp",
        tmp_path / f".out.{os.getpid()}.tmp",
        tmp_path / ".out.partial",
    ]
    for path in users:
        path.mkdir()
        (path / "keep.txt").write_text("mine")
    with atomic_folder(target, kind="a thing") as folder:
        (folder / "a").write_text("new")
    with atomic_folder(target, kind="a thing") as folder:
        (folder / "a").write_text("newer")
    write_text_atomic(tmp_path / "file.txt", "x")
    for path in users:
        assert (path / "keep.txt").read_text() == "mine"
    assert (target / "a").read_text() == "newer"


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
    run_refused([*argv, "--overwrite"], capsys, "not a file rosetta translate wrote")
    assert translation.read_text() == "precious\n"
    translation.unlink()
    assert main(argv) == 0
    assert main([*argv, "--overwrite"]) == 0  # its own output: replaced
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
    from tests.support.toy import toy_config

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


SWAP_SCRIPT = """
import sys
from pathlib import Path
from rosetta.runtime.atomic import atomic_folder
with atomic_folder(Path(sys.argv[1]), kind="a thing") as folder:
    (folder / "a").write_text("new")
"""


def test_a_kill_between_the_renames_of_a_swap_is_completed_next_time(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    target = tmp_path / "out"
    with atomic_folder(target, kind="a thing") as folder:
        (folder / "a").write_text("old")
    env = {**os.environ, "ROSETTA_TEST_SWAP_PAUSE": "60"}
    argv = [sys.executable, "-c", SWAP_SCRIPT, str(target)]
    process = subprocess.Popen(argv, env=env)
    deadline = time.monotonic() + 60
    while target.exists() and time.monotonic() < deadline:  # old moved aside
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert not target.exists()  # between the renames: the journal knows
    assert claim_folder(target, overwrite=True, what="a thing") == target
    assert (target / "a").read_text() == "new"
    assert sorted(os.listdir(tmp_path)) == ["out"]


def test_no_command_writes_a_file_inside_a_run(toy_run, tmp_path, capsys):
    run = toy_run("transformer")
    before = snapshot(run)
    source = tmp_path / "src.txt"
    source.write_text("alpha beta\n")
    checkpoint = next(run.glob("checkpoint-*"))
    inside = [
        run / "checkpoints.json",
        checkpoint / "model.safetensors",
        checkpoint / "checkpoint.json",
        run / "notes.txt",
    ]
    for target in inside:
        for verb, flag in (("translate", "-i"), ("distill", "--src")):
            argv = [verb, "-m", str(run), flag, str(source), "-o", str(target)]
            run_refused([*argv, "--overwrite"], capsys, "Rosetta never writes there")
    assert snapshot(run) == before


def test_a_task_is_never_replaced_over_a_run_trained_inside_it(tmp_path, capsys):
    task = ["task", "copy", "--count", "20", "--valid", "5", "--test", "5"]
    folder = tmp_path / "tk"
    assert main([*task, "-o", str(folder)]) == 0
    (folder / "notes.txt").write_text("mine")
    run_refused([*task, "-o", str(folder), "--overwrite"], capsys, "notes.txt")
    assert (folder / "notes.txt").read_text() == "mine"


def test_distill_never_takes_a_users_partial_file(toy_run, tmp_path, capsys):
    source = tmp_path / "src.txt"
    source.write_text("alpha beta\n")
    partial = tmp_path / "out.en.partial"
    partial.write_text("a user's draft\n")
    argv = ["distill", "-m", str(toy_run("transformer")), "--src", str(source)]
    run_refused([*argv, "-o", str(tmp_path / "out.en")], capsys, "not started by")
    assert partial.read_text() == "a user's draft\n"


def test_no_run_is_trained_or_prepared_inside_a_run(toy_run, tmp_path, capsys):
    from tests.support.toy import toy_config

    run = toy_run("transformer")
    _, config = toy_config(tmp_path)
    for verb in ("train", "prepare"):
        argv = [verb, str(config), "-o", str(run / "inner")]
        run_refused(argv, capsys, "a training run; Rosetta never writes there")
    assert not (run / "inner").exists()


def test_an_empty_folder_is_taken_as_new(tmp_path):
    empty = tmp_path / "out"
    empty.mkdir()
    assert claim_folder(empty, what="a thing") == empty
    with atomic_folder(empty, kind="a thing") as folder:
        (folder / "a").write_text("new")
    assert (empty / "a").read_text() == "new"


@pytest.mark.parametrize("mask", [0o022, 0o002, 0o077])
def test_written_files_and_folders_have_the_permissions_the_umask_gives(tmp_path, mask):
    """A file or folder Rosetta writes reads like one the user's shell would
    make (0666 / 0777 less the umask), not private as a temporary is."""
    previous = os.umask(mask)
    try:
        write_text_atomic(tmp_path / "out.txt", "text\n")
        with atomic_folder(tmp_path / "folder") as folder:
            (folder / "inside.txt").write_text("x")
        (tmp_path / "shell.txt").write_text("made as the shell makes it")
    finally:
        os.umask(previous)
    assert (tmp_path / "out.txt").stat().st_mode & 0o777 == 0o666 & ~mask
    assert (tmp_path / "shell.txt").stat().st_mode & 0o777 == 0o666 & ~mask
    assert (tmp_path / "folder").stat().st_mode & 0o777 == 0o777 & ~mask


def test_the_kept_markers_are_the_names_their_owners_write():
    """``outputs.KEPT`` sits below the modules that own these files, so it
    spells their names; each must be the owner's, and every engine's export
    marker must be there (an export is never written over as an output)."""
    from rosetta.data.store import MANIFEST_FILE, STORE_DIR
    from rosetta.families import all_export_formats
    from rosetta.families.transformer.hf.multilingual.settings import SPM_FILE
    from rosetta.runs.checkpoint import INDEX_FILE, META_FILE
    from rosetta.runtime.outputs import KEPT, RUN_LOCK
    from rosetta.train.prepare import TOKENIZER_FILE

    kept = {name for name, _ in KEPT}
    owned = {INDEX_FILE, META_FILE, RUN_LOCK, TOKENIZER_FILE}
    owned |= {f"{STORE_DIR}/{MANIFEST_FILE}", *(e.marker for e in all_export_formats())}
    owned.add(SPM_FILE)  # the hf format's other layout: NLLB-200, M2M100, mBART-50
    assert kept == owned
