"""Every file Rosetta reads back is untrusted input (``rosetta.runtime.own_files``):
a lock, a swap journal, an output's record, a run's log and its checkpoint
folders, each replaced by what a user, a tool or a copy could leave there (a
link to a user's file, a second name of one, a FIFO, a folder, a device, a
huge or deeply nested file, an edit). The promise for each: the user's files
stay byte-identical, and the command works or refuses in one line; it never
hangs, and never writes or deletes through the file."""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
from pathlib import Path

import pytest

from rosetta.errors import RosettaError
from rosetta.runs import checkpoint as ckpt
from rosetta.runs.lock import run_lock
from rosetta.runtime.atomic import (
    SWAP_MARK,
    atomic_folder,
    finish_swap,
    journal_path,
    swap_places,
)
from rosetta.runtime.outputs import LEDGER_FILE, RUN_LOCK, claim_folder
from rosetta.runtime.records import read_record
from rosetta.train.metrics import MetricsLog

WHAT = "a thing"


def digest_tree(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


@pytest.fixture
def users(tmp_path):
    """A user's file and folder that nothing may change."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("keep me\n")
    (mine / "checkpoint.json").write_text("{}")  # names that look like ours
    (mine / "model.safetensors").write_text("not a model\n")
    notes = tmp_path / "notes.txt"
    notes.write_text("a user's notes\n")
    return tmp_path, digest_tree(tmp_path)


def replace_with(path: Path, how: str, tmp_path: Path) -> None:
    """Put at ``path`` what ``how`` names, in place of whatever was there."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
    notes = tmp_path / "notes.txt"
    if how == "link to a user's file":
        path.symlink_to(notes)
    elif how == "link to a user's folder":
        path.symlink_to(tmp_path / "mine")
    elif how == "second name of a user's file":
        os.link(notes, path)
    elif how == "dangling link":
        path.symlink_to(tmp_path / "nowhere")
    elif how == "link to /dev/full":
        path.symlink_to("/dev/full")
    elif how == "fifo":
        os.mkfifo(path)
    elif how == "folder":
        path.mkdir()
    elif how == "text":
        path.write_text("a user's text, not a record\n")
    elif how == "deep":
        path.write_text("[" * 100_000 + "]" * 100_000)
    elif how == "huge":
        with open(path, "wb") as handle:
            handle.truncate(100 * 2**20)
    else:
        raise AssertionError(how)


TAMPERING = [
    "link to a user's file",
    "link to a user's folder",
    "second name of a user's file",
    "dangling link",
    "link to /dev/full",
    "fifo",
    "folder",
    "text",
    "deep",
    "huge",
]


def one_line(error: RosettaError) -> None:
    assert "\n" not in str(error), str(error)


@pytest.mark.parametrize("how", TAMPERING)
def test_a_lock_that_is_not_rosettas_is_refused_never_written(users, how):
    tmp_path, before = users
    run = tmp_path / "run"
    run.mkdir()
    replace_with(run / RUN_LOCK, how, tmp_path)
    with pytest.raises(RosettaError) as refused, run_lock(run):
        pass
    one_line(refused.value)
    after = digest_tree(tmp_path)
    assert {k: v for k, v in after.items() if k in before} == before
    assert not (tmp_path / "nowhere").exists()


def test_a_lock_rosetta_left_is_taken_over(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / RUN_LOCK).write_text("12345\n")  # a dead holder's PID
    with run_lock(run):
        assert (run / RUN_LOCK).read_text() == f"{os.getpid()}\n"
    with run_lock(run):  # and again, once released
        pass


def made_output(tmp_path: Path, text: str = "old") -> Path:
    target = tmp_path / "out"
    with atomic_folder(target, kind=WHAT) as folder:
        (folder / "a").write_text(text)
    return target


def journals(target: Path, tmp_path: Path) -> list[tuple[str, object]]:
    """Edited journals: names of the user's folders, of the run, of the
    output itself, another target's, another token's, other types."""
    token = secrets.token_hex(16)
    return [
        ("old form", {"new": "mine", "aside": "run"}),
        ("old form, aside", {"new": "out", "aside": "mine"}),
        ("user names", {"token": token, "target": "out", "new": "mine"}),
        ("other target", {"token": token, "target": "mine"}),
        ("bad token", {"token": "../mine", "target": "out"}),
        ("short token", {"token": "ab", "target": "out"}),
        ("number token", {"token": 7, "target": "out"}),
        ("list", [token, "out"]),
        ("deep", "[" * 50_000 + "]" * 50_000),
        ("cut", '{"token": "' + token[:5]),
    ]


@pytest.mark.parametrize("case", range(10))
def test_an_edited_journal_never_leads_out_of_its_swap(users, case):
    tmp_path, before = users
    target = made_output(tmp_path)
    name, entry = journals(target, tmp_path)[case]
    text = entry if isinstance(entry, str) else json.dumps(entry)
    journal_path(target).write_text(text)
    try:  # a journal of the right form leads only to its own folders: none here
        claim_folder(target, overwrite=True, what=WHAT)
    except RosettaError as refused:
        one_line(refused)
        assert "journal" in str(refused), name
    else:
        assert name == "user names" and not journal_path(target).exists()
    after = digest_tree(tmp_path)
    assert {k: v for k, v in after.items() if k in before} == before
    assert (target / "a").read_text() == "old"


@pytest.mark.parametrize("how", TAMPERING)
def test_a_journal_replaced_is_refused(users, how):
    tmp_path, before = users
    target = made_output(tmp_path)
    replace_with(journal_path(target), how, tmp_path)
    with pytest.raises(RosettaError) as refused:
        claim_folder(target, overwrite=True, what=WHAT)
    one_line(refused.value)
    after = digest_tree(tmp_path)
    assert {k: v for k, v in after.items() if k in before} == before
    assert (target / "a").read_text() == "old"


def test_a_journal_whose_folders_are_links_is_refused(users):
    """A journal of the right form, whose token's folders were made links to
    the user's folder: nothing is removed or moved through them."""
    tmp_path, before = users
    target = made_output(tmp_path)
    token = secrets.token_hex(16)
    new, aside = swap_places(target, token)
    new.symlink_to(tmp_path / "mine")
    aside.symlink_to(tmp_path / "mine")
    journal_path(target).write_text(json.dumps({"token": token, "target": "out"}))
    with pytest.raises(RosettaError, match="not the folder the swap made"):
        finish_swap(target)
    after = digest_tree(tmp_path)
    assert {k: v for k, v in after.items() if k in before} == before


def test_a_real_swap_still_completes_after_a_kill(tmp_path):
    """The journal Rosetta writes, with the folders it made: completed."""
    target = made_output(tmp_path)
    token = secrets.token_hex(16)
    new, aside = swap_places(target, token)
    for place in (new, aside):  # as the swap makes them: marked with its token
        place.mkdir()
        (place / SWAP_MARK).write_text(token)
    (new / "a").write_text("new")
    os.replace(target, aside / "out")  # killed between the two renames
    journal_path(target).write_text(json.dumps({"token": token, "target": "out"}))
    assert "completed" in finish_swap(target)
    assert sorted(os.listdir(target)) == ["a"]  # the mark went with the swap
    assert (target / "a").read_text() == "new"
    assert sorted(os.listdir(tmp_path)) == ["out"]


@pytest.mark.parametrize("suffix", ["old", "new"])
def test_a_users_folder_with_a_swaps_name_is_never_removed(users, suffix):
    """A journal of the right form and a real folder of the user's that
    carries the token's name, but not the token inside: refused."""
    tmp_path, _ = users
    target = made_output(tmp_path)
    token = secrets.token_hex(16)
    new, old = swap_places(target, token)
    place = new if suffix == "new" else old
    place.mkdir()
    (place / "precious.txt").write_text("data\n")
    journal_path(target).write_text(json.dumps({"token": token, "target": "out"}))
    with pytest.raises(RosettaError, match="not the folder the swap made"):
        claim_folder(target, overwrite=True, what=WHAT)
    assert (place / "precious.txt").read_text() == "data\n"
    assert (target / "a").read_text() == "old"


def test_a_swap_leaves_no_mark_in_the_output(tmp_path):
    target = made_output(tmp_path)
    with atomic_folder(target, kind=WHAT) as folder:
        (folder / "a").write_text("new")
    assert sorted(os.listdir(target)) == [LEDGER_FILE, "a"]
    assert sorted(os.listdir(tmp_path)) == ["out"]


@pytest.mark.parametrize(
    "ledger",
    [
        {"kind": WHAT, "files": ["a", "notes.txt"]},  # the old form: no fingerprints
        {"kind": WHAT, "files": {"a": "0" * 32, "notes.txt": "0" * 32}},
        {"kind": WHAT, "files": "a"},
        {"kind": 3, "files": {}},
        "[" * 50_000,
    ],
)
def test_an_edited_output_record_never_claims_a_users_file(tmp_path, ledger):
    target = made_output(tmp_path)
    (target / "notes.txt").write_text("the user's, put in the output\n")
    text = ledger if isinstance(ledger, str) else json.dumps(ledger)
    (target / LEDGER_FILE).write_text(text)
    with pytest.raises(RosettaError) as refused:
        claim_folder(target, overwrite=True, what=WHAT)
    one_line(refused.value)
    assert (target / "notes.txt").read_text() == "the user's, put in the output\n"


def test_a_file_changed_in_an_output_is_not_replaced(tmp_path):
    target = made_output(tmp_path)
    (target / "a").write_text("the user edited this")
    with pytest.raises(RosettaError, match=r"changed since \(a\)"):
        claim_folder(target, overwrite=True, what=WHAT)
    (target / "a").write_text("old")  # as written: replaced again
    assert claim_folder(target, overwrite=True, what=WHAT) == target


@pytest.mark.parametrize("how", ["link to a user's file", "fifo", "folder", "huge"])
def test_records_read_back_never_follow_links_or_block(users, how):
    tmp_path, _ = users
    record = tmp_path / "checkpoints.json"
    replace_with(record, how, tmp_path)
    with pytest.raises(RosettaError) as refused:
        read_record(record, dict, "a run's index")
    one_line(refused.value)


def test_pruning_never_deletes_through_a_link_to_another_run(tmp_path, capsys):
    """Run A's old checkpoint folder is a link into run B: pruning A leaves
    the link, and all of B."""
    run_a, run_b = tmp_path / "a", tmp_path / "b"
    for run in (run_a, run_b):
        (run / "checkpoint-0000001").mkdir(parents=True)
        for name in ("model.safetensors", "checkpoint.json", "optimizer.safetensors"):
            (run / "checkpoint-0000001" / name).write_text(f"{run.name} {name}")
    before = digest_tree(run_b)
    shutil.rmtree(run_a / "checkpoint-0000001")
    (run_a / "checkpoint-0000001").symlink_to(run_b / "checkpoint-0000001")
    index = {"checkpoints": ["checkpoint-0000001"], "latest": "checkpoint-0000001"}
    (run_a / "checkpoints.json").write_text(json.dumps(index))
    for step in (2, 3):
        name = f"checkpoint-{step:07d}"
        (run_a / name).mkdir()
        ckpt.record_checkpoint(
            run_a, name, is_best=False, best_score=None, metric="bleu", keep_last=1
        )
    assert digest_tree(run_b) == before
    assert (run_a / "checkpoint-0000001").is_symlink()
    assert "not a checkpoint folder of this run" in capsys.readouterr().out
    assert not (run_a / "checkpoint-0000002").exists()  # a real one: pruned


@pytest.mark.parametrize(
    "how", ["link to a user's file", "second name of a user's file", "fifo"]
)
def test_a_runs_log_is_never_appended_through_a_link(users, how):
    tmp_path, _ = users
    run = tmp_path / "run"
    run.mkdir()
    replace_with(run / "metrics.jsonl", how, tmp_path)
    try:
        log = MetricsLog.for_run(run, tensorboard=False)
        log.append("train", 1, loss=1.0)
    except RosettaError as error:
        one_line(error)
    assert (tmp_path / "notes.txt").read_text() == "a user's notes\n"


def test_an_output_name_the_file_system_cannot_take_is_refused_first(tmp_path):
    """Refused when claimed, before the long work, with room for the
    temporary names written beside it."""
    from rosetta.runtime.outputs import claim_file

    for name in ("a" * 250 + ".txt", "b" * 230):
        for claim in (claim_file, claim_folder):
            with pytest.raises(RosettaError, match="choose a shorter name") as error:
                claim(tmp_path / name, what=WHAT)
            one_line(error.value)
    assert claim_file(tmp_path / ("c" * 150 + ".txt"), what=WHAT)


def test_pruning_a_checkpoint_it_cannot_remove_warns_and_goes_on(
    tmp_path, capsys, monkeypatch
):
    run = tmp_path / "run"
    old = run / "checkpoint-0000001"
    old.mkdir(parents=True)
    (old / "model.safetensors").write_text("weights")

    def refuse(self, missing_ok=False):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(Path, "unlink", refuse)
    ckpt.remove_checkpoint(old, run)
    monkeypatch.undo()
    assert "left (Operation not permitted)" in capsys.readouterr().out
    assert (old / "model.safetensors").read_text() == "weights"


def test_names_too_long_anywhere_are_one_line(tmp_path, capsys):
    """A run folder, an output's folder or an input whose name the file
    system cannot take: one line, never Python's OSError."""
    from rosetta.cli import main

    long = "n" * 300
    source = tmp_path / "in.txt"
    source.write_text("alpha beta\n")
    commands = [
        ["prepare", "missing.yaml", "-o", str(tmp_path / long)],
        ["evaluate", "--hyp", str(tmp_path / long), "--ref", str(source)],
        ["task", "copy", "--count", "20", "-o", str(tmp_path / long / "tk")],
    ]
    for argv in commands:
        capsys.readouterr()
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert "Traceback" not in err and err.count("\n") == 1, err


@pytest.mark.parametrize(
    "how", ["second name of a user's file", "link to a user's file"]
)
def test_a_distillations_partial_output_is_never_written_through_a_link(users, how):
    """Resuming reads and cuts the partial output in place, then appends to
    it: a second name of a user's file (or a link to one) is refused."""
    from rosetta.jobs.distill import finished_lines

    tmp_path, before = users
    partial = tmp_path / "out.txt.partial"
    replace_with(partial, how, tmp_path)
    with pytest.raises(RosettaError) as refused:
        finished_lines(partial, None)
    one_line(refused.value)
    after = digest_tree(tmp_path)
    assert {k: v for k, v in after.items() if k in before} == before


def test_a_distillations_partial_output_keeps_only_what_its_record_vouches_for(
    tmp_path,
):
    import xxhash

    from rosetta.jobs.distill import finished_lines

    partial = tmp_path / "out.txt.partial"
    partial.write_bytes(b"one\ntwo\nthr")  # a kill in a chunk, or a hand's edit
    done = {"bytes": 8, "xxh3_128": xxhash.xxh3_128(b"one\ntwo\n").hexdigest()}
    assert finished_lines(partial, done)[0] == 2
    assert partial.read_bytes() == b"one\ntwo\n"
    for forged in (10**30, 2**40, 3):  # past the file; not on a line's end
        made = {"bytes": forged, "xxh3_128": xxhash.xxh3_128(b"one").hexdigest()}
        with pytest.raises(RosettaError, match="finished lines changed"):
            finished_lines(partial, made)
    partial.write_bytes(b"one\nTWO\n")  # a finished line edited by hand
    with pytest.raises(RosettaError, match="finished lines changed") as refused:
        finished_lines(partial, done)
    one_line(refused.value)
    assert partial.read_bytes() == b"one\nTWO\n"


def test_a_run_whose_latest_checkpoint_is_mid_swap_resumes(toy_run, tmp_path, capsys):
    """Killed between the two renames of rewriting its latest checkpoint: the
    next ``--resume`` completes the swap under the run's lock, then resumes."""
    from rosetta.cli import main
    from tests.support.read_back import command

    template = toy_run("transformer")
    run = tmp_path / "run"
    shutil.copytree(template, run)
    latest = run / ckpt.read_index(run)["latest"]
    token = secrets.token_hex(16)
    new, aside = swap_places(latest, token)
    shutil.copytree(latest, new)  # the same checkpoint written again
    aside.mkdir()
    for place in (new, aside):
        (place / SWAP_MARK).write_text(token)
    os.replace(latest, aside / latest.name)
    journal_path(latest).write_text(json.dumps({"token": token, "target": latest.name}))
    argv = [*command(template, run, tmp_path, "resume"), "--set", "train.max_steps=61"]
    capsys.readouterr()
    assert main(argv) == 0, capsys.readouterr().err
    assert "a swap stopped midway was completed" in capsys.readouterr().out
    assert not journal_path(latest).exists() and not aside.exists()
    assert ckpt.read_index(run)["latest"] == "checkpoint-0000061"


def test_a_fifo_inside_an_earlier_output_is_refused_without_blocking(tmp_path):
    target = made_output(tmp_path)
    os.mkfifo(target / "x")
    with pytest.raises(RosettaError, match=r"changed since \(x\)"):
        claim_folder(target, overwrite=True, what=WHAT)


def test_a_checkpoint_mid_swap_is_named_with_how_to_finish_it(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    name = "checkpoint-0000001"
    index = {"checkpoints": [name], "latest": name, "best": name}
    (run / "checkpoints.json").write_text(json.dumps(index))
    journal_path(run / name).write_text("{}")
    with pytest.raises(RosettaError, match="rosetta train --resume on") as refused:
        ckpt.resolve_checkpoint(run)
    one_line(refused.value)
