"""A checkpoint, and whatever is given as a model. Its tensor files are
damaged with their checksums resealed over them (as a careless tool would:
only the reading can tell): a tensor of another shape or dtype, non-finite,
missing or extra, the file cut short or its JSON header damaged, the file
replaced by a link to an intact copy. Without a reseal: a checkpoint of
another format version, missing a file or cut short, the latest one
corrupted. Given as the model: a folder that is not there, a run with no
checkpoint yet, a pickle or a ``torch.save`` file (as the model, or where
the weights belong).

The promise: the command that reads the checkpoint works, with the result
the intact one gives, or exits 2 in one line naming the file; never a
traceback, never a hang, and nothing is ever unpickled.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import shutil
from pathlib import Path

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from safetensors.torch import load_file, save_file

from rosetta.errors import RosettaError
from rosetta.jobs.loading import load_translator
from rosetta.jobs.training import run_training
from rosetta.runs.checkpoint import FORMAT_VERSION, read_index
from rosetta.runs.integrity import seal_meta, sha256_file
from tests.runs.test_integrity import edit_meta
from tests.runtime.test_outputs import run_refused
from tests.support.bad_input import (
    MARKER,
    Case,
    gets_a_clear_error,
    model_case,
    write,
)
from tests.support.read_back import (
    FUZZ,
    SOURCES,
    command,
    copy_run,
    damage,
    latest,
    run_main,
    translate,
)
from tests.support.toy import toy_config_for_steps, toy_lm_config


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


def rewrite_weights(checkpoint: Path, change) -> None:
    """Weights changed and every checksum recomputed, as a careless tool would."""
    path = checkpoint / "model.safetensors"
    tensors = {name: change(tensor) for name, tensor in load_file(path).items()}
    save_file(tensors, path)

    def sums(meta):
        meta["sha256"]["model.safetensors"] = sha256_file(path)
        meta.update(seal_meta(meta))

    edit_meta(checkpoint, sums)


@pytest.mark.parametrize(
    "change, expected",
    [
        (lambda t: torch.full_like(t, float("nan")), "holds NaN or infinite values"),
        (lambda t: t.to(torch.int32), "is stored as torch.int32"),
    ],
    ids=["nan", "int32"],
)
def test_weights_are_checked_finite_and_of_their_dtype(
    run, tmp_path, capsys, change, expected
):
    for name in read_index(run)["checkpoints"]:
        rewrite_weights(run / name, change)
    run_refused(translate(run, tmp_path), capsys, expected)


class Payload:
    """Unpickling this creates a file: proof that code ran."""

    def __init__(self, target: Path):
        self.target = target

    def __reduce__(self):
        return (open, (str(self.target), "w"))


def set_meta(checkpoint: Path, **changes) -> None:
    meta_path = checkpoint / "checkpoint.json"
    meta = json.loads(meta_path.read_text())
    meta.update(changes)
    meta_path.write_text(json.dumps(meta))


def other_version(tmp: Path, checkpoint: Path) -> Path:
    set_meta(checkpoint, format_version=99)
    return checkpoint


def missing_weights(tmp: Path, checkpoint: Path) -> Path:
    (checkpoint / "model.safetensors").unlink()
    return checkpoint


def truncated_weights(tmp: Path, checkpoint: Path) -> Path:
    path = checkpoint / "model.safetensors"
    path.write_bytes(path.read_bytes()[:100])
    return checkpoint


def pickle_as_weights(tmp: Path, checkpoint: Path) -> Path:
    """A malicious pickle where the weights belong, checksum made to match."""
    payload = pickle.dumps({"weights": Payload(tmp / MARKER)})
    (checkpoint / "model.safetensors").write_bytes(payload)
    meta = json.loads((checkpoint / "checkpoint.json").read_text())
    meta["sha256"]["model.safetensors"] = hashlib.sha256(payload).hexdigest()
    (checkpoint / "checkpoint.json").write_text(json.dumps(seal_meta(meta)))
    return checkpoint


def pickle_file_as_model(tmp: Path, checkpoint: Path) -> Path:
    return write(tmp, "model.pkl", pickle.dumps(Payload(tmp / MARKER)))


def torch_file_as_model(tmp: Path, checkpoint: Path) -> Path:
    """A real ``torch.save`` file whose unpickling would run code."""
    import torch

    torch.save({"state_dict": Payload(tmp / MARKER)}, tmp / "model.pt")
    return tmp / "model.pt"


def torch_file_as_weights(tmp: Path, checkpoint: Path) -> Path:
    torch_file_as_model(tmp, checkpoint)
    payload = (tmp / "model.pt").read_bytes()
    (checkpoint / "model.safetensors").write_bytes(payload)
    meta = json.loads((checkpoint / "checkpoint.json").read_text())
    meta["sha256"]["model.safetensors"] = hashlib.sha256(payload).hexdigest()
    (checkpoint / "checkpoint.json").write_text(json.dumps(seal_meta(meta)))
    return checkpoint


CASES = [
    Case(
        "missing model folder",
        lambda tmp: ["translate", "-m", str(tmp / "no-model"), "-i", "-"],
        "no-model: no such model file or folder",
    ),
    Case(
        "model from another format version",
        model_case(other_version),
        f"checkpoint format 99, this Rosetta reads {FORMAT_VERSION}",
    ),
    Case(
        "model with missing files",
        model_case(missing_weights),
        "model.safetensors: missing from the checkpoint",
    ),
    Case(
        "truncated weights",
        model_case(truncated_weights),
        "checksum mismatch (truncated or corrupted)",
    ),
    Case(
        "a pickle where the weights belong is never unpickled",
        model_case(pickle_as_weights),
        "model.safetensors: cannot load weights",
    ),
    Case(
        "a pickle file given as the model is refused",
        model_case(pickle_file_as_model),
        "model.pkl: neither a checkpoint nor a run with checkpoints",
    ),
    Case(
        "a torch.save .pt file given as the model is refused",
        model_case(torch_file_as_model),
        "model.pt: neither a checkpoint nor a run with checkpoints",
    ),
    Case(
        "a torch.save file where the weights belong is never unpickled",
        model_case(torch_file_as_weights),
        "model.safetensors: cannot load weights",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_gets_a_clear_error(case, tmp_path, capsys, recwarn):
    gets_a_clear_error(case, tmp_path, capsys, recwarn)


def test_a_run_without_a_checkpoint_yet_says_so(tmp_path, capsys):
    """A run prepared (or training, before its first validation) is not
    called "neither a checkpoint nor a run": it is a run with none yet."""
    from rosetta.cli import main
    from tests.support.toy import toy_config_file

    config = toy_config_file(tmp_path)
    run = tmp_path / "run"
    assert main(["prepare", str(config), "-o", str(run)]) == 0
    (tmp_path / "in.txt").write_text("alpha\n")
    capsys.readouterr()
    command = ["translate", "-m", str(run), "-i", str(tmp_path / "in.txt")]
    assert main(command) == 2
    error = capsys.readouterr().err
    assert "a run with no checkpoint yet" in error
    assert "train.validate_every" in error


def test_a_corrupted_latest_checkpoint_leaves_the_previous_one_loadable(tmp_path):
    run_training(toy_config_for_steps(tmp_path, steps=20), tmp_path / "run")
    index = json.loads((tmp_path / "run" / "checkpoints.json").read_text())
    previous, last = (tmp_path / "run" / n for n in index["checkpoints"])
    (last / "model.safetensors").write_bytes(b"\0" * 64)
    with pytest.raises(RosettaError, match="checksum mismatch"):
        load_translator(last)
    load_translator(previous)
