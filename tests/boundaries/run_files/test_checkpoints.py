"""Generated damage to a checkpoint's tensor files with their checksums
resealed over it (as a careless tool would: only the reading can tell), and
to a CTranslate2 export's files, which CTranslate2 opens itself: a tensor of
another shape or dtype, non-finite, missing or extra, the file cut short or
its JSON header damaged; an export's record and vocabulary damaged as any
record is; a file replaced by a link to an intact copy or by a FIFO.

The promise: the command that reads the file works, with the result the
intact file gives, or exits 2 in one line; never a traceback, never a hang.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from safetensors.torch import load_file, save_file

from rosetta.cli import main
from rosetta.runs.integrity import seal_meta, sha256_file
from tests.boundaries.test_file_fuzz import command, damage
from tests.support.read_back import (
    FUZZ,
    SOURCES,
    copy_run,
    fifo_in_place,
    latest,
    list_damage,
    run_main,
)
from tests.support.toy import toy_lm_config


def reseal(folder: Path) -> None:
    """The checkpoint's checksums recomputed over whatever its files hold."""
    meta = json.loads((folder / "checkpoint.json").read_text())
    meta["sha256"] = {name: sha256_file(folder / name) for name in meta["sha256"]}
    meta.pop("meta_sha256")
    (folder / "checkpoint.json").write_text(json.dumps(seal_meta(meta)))


@st.composite
def tensor_damage(draw, tensors: dict[str, torch.Tensor], raw: bytes):
    """Damaged safetensors content: tensors (one of another shape or dtype,
    non-finite, gone, or one more) or bytes (cut short, or the JSON header
    damaged as any record is)."""
    kind = draw(
        st.sampled_from(["shape", "dtype", "nan", "drop", "extra", "cut", "header"])
    )
    name = draw(st.sampled_from(sorted(tensors)))
    copy = dict(tensors)
    if kind == "cut":
        return raw[: draw(st.integers(0, len(raw) - 1))]
    if kind == "header":
        size = int.from_bytes(raw[:8], "little")
        header = draw(damage(json.loads(raw[8 : 8 + size])))
        text = (header if isinstance(header, str) else json.dumps(header)).encode()
        return len(text).to_bytes(8, "little") + text + raw[8 + size :]
    if kind == "shape":
        copy[name] = torch.zeros(draw(st.lists(st.integers(0, 3), max_size=3)))
    elif kind == "dtype":
        kinds = [torch.float16, torch.float64, torch.int32, torch.int64, torch.bool]
        copy[name] = copy[name].to(draw(st.sampled_from(kinds)))
    elif kind == "nan":  # or, in a count, a value no count has
        odd = [float("nan"), float("inf")] if copy[name].is_floating_point() else [-1]
        copy[name] = torch.full_like(copy[name], draw(st.sampled_from(odd)))
    elif kind == "drop":
        del copy[name]
    else:
        copy[draw(st.sampled_from(["extra", "0.extra", f"{name}.x"]))] = torch.zeros(2)
    return copy


def write_damaged(path: Path, damaged) -> None:
    if isinstance(damaged, bytes):
        path.write_bytes(damaged)
    else:
        save_file({k: v.contiguous() for k, v in damaged.items()}, str(path))


# (the tensor file, the command that reads it)
TENSOR_FILES = [
    ("model.safetensors", "translate"),
    ("model.safetensors", "average"),
    ("optimizer.safetensors", "resume"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "which"), TENSOR_FILES)
def test_resealed_tensor_files_are_one_line_or_harmless(
    toy_run, tmp_path_factory, capsys, name, which
):
    template = toy_run("transformer")
    path = latest(template) / name
    tensors, raw = load_file(str(path)), path.read_bytes()
    work = tmp_path_factory.mktemp("tensors")
    (work / "in.txt").write_text(SOURCES)
    translate = ["translate", "-m", latest(template), "-i", work / "in.txt"]
    intact = run_main(capsys, translate)[1]

    @FUZZ
    @given(damaged=tensor_damage(tensors, raw))
    def check(damaged):
        run = copy_run(template, work / "run")
        write_damaged(latest(run) / name, damaged)
        reseal(latest(run))
        if which == "translate":
            argv = ["translate", "-m", latest(run), "-i", work / "in.txt"]
        elif which == "average":
            shutil.rmtree(work / "avg", ignore_errors=True)
            argv = ["average", "-m", run, "-o", work / "avg"]
        else:
            argv = [
                *command(template, run, work, "resume"),
                "--set",
                "train.max_steps=61",
            ]
        status, out, _ = run_main(capsys, argv)
        if status == 0 and which == "translate":
            assert out == intact  # the damage did not matter
        elif status == 0 and which == "average":
            argv = ["translate", "-m", work / "avg", "-i", work / "in.txt"]
            run_main(capsys, argv)

    check()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("slot", "value", "message"),
    [
        ("0.exp_avg", torch.zeros(2), "0.exp_avg is torch.float32 (2,)"),
        ("0.step", torch.zeros(2), "0.step is torch.float32 (2,)"),
        ("0.exp_avg_sq", None, "parameter 0 has no exp_avg_sq"),
    ],
)
def test_an_optimizer_slot_missing_or_of_another_shape_is_refused(
    toy_run, tmp_path, capsys, slot, value, message
):
    """Found by the damage above: ``load_state_dict`` takes a moment of
    another shape as it is (then broadcasts it, or fails at the next step),
    and a parameter without one of its moments fails at the next step."""
    template = toy_run("transformer")
    run = copy_run(template, tmp_path / "run")
    path = latest(run) / "optimizer.safetensors"
    tensors = load_file(str(path))
    tensors[slot] = value
    save_file({k: v for k, v in tensors.items() if v is not None}, str(path))
    reseal(latest(run))
    argv = [*command(template, run, tmp_path, "resume"), "--set", "train.max_steps=61"]
    status, _, err = run_main(capsys, argv)
    assert status == 2 and message in err, err


@pytest.fixture(scope="module")
def lm_run(tmp_path_factory):
    """A toy language model's run: its training state holds its memory."""
    from rosetta.jobs.training import run_training

    folder = tmp_path_factory.mktemp("lm")
    config, _ = toy_lm_config(folder)
    run_training(config, folder / "run")
    return folder / "run"


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["nat", "lm"])
def test_a_resealed_training_state_is_one_line_or_harmless(
    toy_run, lm_run, tmp_path_factory, capsys, kind
):
    """``state.safetensors``: the NAT's count of updates (its glancing
    schedule), the language model's memory of the segments before."""
    template = lm_run if kind == "lm" else toy_run("nat")
    path = latest(template) / "state.safetensors"
    tensors, raw = load_file(str(path)), path.read_bytes()
    work = tmp_path_factory.mktemp("state")
    steps = json.loads((latest(template) / "checkpoint.json").read_text())
    steps = steps["trainer"]["step"] + 1

    @FUZZ
    @given(damaged=tensor_damage(tensors, raw))
    def check(damaged):
        run = copy_run(template, work / "run")
        write_damaged(latest(run) / "state.safetensors", damaged)
        reseal(latest(run))
        resume = command(template, run, work, "resume")
        run_main(capsys, [*resume, "--set", f"train.max_steps={steps}"])

    check()


@pytest.mark.slow
def test_a_checkpoint_file_linked_to_an_intact_copy_is_refused(
    toy_run, tmp_path, capsys
):
    run = copy_run(toy_run("transformer"), tmp_path / "run")
    path = latest(run) / "model.safetensors"
    shutil.copy(path, tmp_path / "intact")
    path.unlink()
    path.symlink_to(tmp_path / "intact")
    (tmp_path / "in.txt").write_text(SOURCES)
    for argv in (
        ["translate", "-m", latest(run), "-i", tmp_path / "in.txt"],
        ["average", "-m", run, "-o", tmp_path / "avg"],
    ):
        status, _, err = run_main(capsys, argv)
        assert status == 2 and "model.safetensors: a symbolic link" in err


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
