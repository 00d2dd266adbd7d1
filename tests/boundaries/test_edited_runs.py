"""Every file Rosetta reads back is a boundary: a run's files edited, cut
short or replaced (checksums recomputed, so only the content check can
tell) give one line naming the file and what is wrong, exit 2, no
traceback, and never a silently wrong result."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from rosetta.cli import main
from rosetta.runs.checkpoint import read_index
from rosetta.runs.integrity import seal_meta, sha256_file
from tests.runs.test_integrity import edit_meta, resealed
from tests.runtime.test_outputs import run_refused


@pytest.fixture
def run(toy_run, tmp_path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(toy_run("transformer"), copy)
    return copy


def translate(run: Path, tmp_path: Path) -> list[str]:
    source = tmp_path / "in.txt"
    source.write_text("alpha beta\n")
    return ["translate", "-m", str(run), "-i", str(source)]


def rewrite_weights(checkpoint: Path, change) -> None:
    """Weights changed and every checksum recomputed, as a careless tool would."""
    path = checkpoint / "model.safetensors"
    tensors = {name: change(tensor) for name, tensor in load_file(path).items()}
    save_file(tensors, path)

    def sums(meta):
        meta["sha256"]["model.safetensors"] = sha256_file(path)
        meta.update(seal_meta(meta))

    edit_meta(checkpoint, sums)


def latest(run: Path) -> Path:
    return run / read_index(run)["latest"]


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


GARBAGE = {"kind": "sentencepiece", "model": "bm90IGEgbW9kZWw="}  # "not a model"


@pytest.mark.parametrize(
    "change, expected",
    [
        (lambda _: [], "tokenizers.json: not a run's tokenizers file (must be an"),
        (lambda state: state.pop("tokenizers") and state, "Field required"),
        (
            lambda state: state | {"tokenizers": {"joint": GARBAGE}},
            "tokenizers that cannot be loaded",
        ),
    ],
    ids=["list", "no tokenizers", "garbage model"],
)
def test_a_damaged_tokenizers_file_is_one_line(run, capsys, change, expected, tmp_path):
    path = run / "tokenizers.json"
    path.write_text(json.dumps(change(json.loads(path.read_text()))))
    meta = json.loads((latest(run) / "checkpoint.json").read_text())
    config = tmp_path / "run.yaml"
    config.write_text(json.dumps(meta["config"]))  # the run's own configuration
    run_refused(["train", str(config), "-o", str(run), "--resume"], capsys, expected)


def test_an_index_with_a_mistyped_field_is_one_line(run, tmp_path, capsys):
    index = json.loads((run / "checkpoints.json").read_text())
    index["metric"] = 5
    (run / "checkpoints.json").write_text(json.dumps(index))
    run_refused(translate(run, tmp_path), capsys, "metric: must be a valid string")


def groups(change):
    return lambda meta: change(meta["optimizer_param_groups"])


def trainer(change):
    return lambda meta: change(meta["trainer"])


@pytest.mark.parametrize(
    "change, expected",
    [
        (trainer(lambda t: t.update(stepp=t.pop("step"))), "stepp: Unexpected"),
        (trainer(lambda t: t.update(step="ten")), "step: must be a valid integer"),
        (groups(lambda g: g[0].update(betas=[0.9])), "param_groups.0.betas"),
        (groups(lambda g: g[0].update(lr="fast")), "param_groups.0.lr"),
        (groups(lambda g: g[0].pop("eps")), "not this optimizer's settings"),
        (groups(lambda g: g.append({})), "not 1 group(s) of settings"),
    ],
    ids=["renamed", "mistyped", "betas", "lr", "eps gone", "a group more"],
)
def test_a_training_state_edited_is_refused_at_resume(
    run, tmp_path, capsys, change, expected
):
    edit_meta(latest(run), resealed(change))
    meta = json.loads((latest(run) / "checkpoint.json").read_text())
    config = tmp_path / "run.yaml"
    config.write_text(json.dumps(meta["config"]))  # the run's own configuration
    argv = ["train", str(config), "-o", str(run), "--resume"]
    run_refused([*argv, "--set", "train.max_steps=61"], capsys, expected)


def test_an_export_record_cut_short_is_one_line(run, tmp_path, capsys):
    pytest.importorskip("ctranslate2")
    export = tmp_path / "ct2"
    assert main(["export", "ctranslate2", "-m", str(run), "-o", str(export)]) == 0
    record = export / "rosetta.json"
    record.write_text(record.read_text()[:40])
    argv = [*translate(export, tmp_path), "--engine", "ctranslate2"]
    run_refused(argv, capsys, "rosetta.json: not a Rosetta CTranslate2 export's record")
