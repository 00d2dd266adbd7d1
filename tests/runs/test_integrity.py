"""A checkpoint's checksums cover its metadata and cannot be switched off; a
run's index never leads outside the run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rosetta.errors import RosettaError
from rosetta.runs.checkpoint import choose_checkpoint, read_index, read_meta
from rosetta.runs.integrity import META_DIGEST, seal_meta


@pytest.fixture
def checkpoint(toy_run, tmp_path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(toy_run("transformer"), run)
    return run / read_index(run)["latest"]


def edit_meta(checkpoint: Path, change) -> None:
    path = checkpoint / "checkpoint.json"
    meta = json.loads(path.read_text())
    change(meta)
    path.write_text(json.dumps(meta))


def test_an_intact_checkpoint_reads(checkpoint):
    assert read_meta(checkpoint)["config"]["model"]["arch"] == "transformer"


@pytest.mark.parametrize(
    "change, expected",
    [
        (lambda m: m.pop(META_DIGEST), "checksum of the metadata missing"),
        (lambda m: m["config"]["model"].update(d_model=1234), "metadata mismatch"),
        (lambda m: m["tokenizers"].clear(), "metadata mismatch"),
        (lambda m: m.pop("sha256"), "metadata mismatch"),
    ],
    ids=["digest removed", "architecture edited", "tokenizers edited", "sums gone"],
)
def test_edited_metadata_is_refused(checkpoint, change, expected):
    edit_meta(checkpoint, change)
    with pytest.raises(RosettaError, match=expected):
        read_meta(checkpoint)


def resealed(change):
    """An edit whose author also recomputed the metadata's own checksum."""

    def apply(meta):
        change(meta)
        meta.update(seal_meta(meta))

    return apply


@pytest.mark.parametrize(
    "change, expected",
    [
        (lambda m: m.pop("sha256"), "no checksum of model.safetensors"),
        (lambda m: m["sha256"].pop("model.safetensors"), "no checksum of model"),
        (
            lambda m: m["sha256"].update({"../../etc/passwd": "0"}),
            "checksums of unknown files",
        ),
        (lambda m: m["sha256"].pop("optimizer.safetensors"), "not covered"),
        (lambda m: m.pop("config"), "config: Field required"),
    ],
    ids=["no sums", "no weights sum", "a path outside", "a file unlisted", "no config"],
)
def test_checksums_cannot_be_switched_off_even_when_resealed(
    checkpoint, change, expected
):
    edit_meta(checkpoint, resealed(change))
    with pytest.raises(RosettaError, match=expected):
        read_meta(checkpoint)


def test_flipped_weights_are_found(checkpoint):
    path = checkpoint / "model.safetensors"
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(RosettaError, match="checksum mismatch"):
        read_meta(checkpoint)


@pytest.mark.parametrize(
    "name", ["../../other/run/checkpoint-0000001", "/etc", "checkpoint-1/..", 7]
)
def test_the_index_never_points_outside_the_run(checkpoint, name):
    run = checkpoint.parent
    index = json.loads((run / "checkpoints.json").read_text())
    index["best"] = name
    (run / "checkpoints.json").write_text(json.dumps(index))
    refused = "is not a checkpoint folder of this run|best: must be a valid string"
    with pytest.raises(RosettaError, match=refused):
        choose_checkpoint(run)


def test_a_checkpoint_linked_in_from_another_run_is_refused(checkpoint, tmp_path):
    run = checkpoint.parent
    elsewhere = tmp_path / "elsewhere"
    checkpoint.rename(elsewhere)
    checkpoint.symlink_to(elsewhere)
    with pytest.raises(RosettaError, match="a link out of the run"):
        choose_checkpoint(run)


def test_metadata_that_is_not_an_object_is_refused(checkpoint):
    (checkpoint / "checkpoint.json").write_text("[1, 2]")
    with pytest.raises(RosettaError, match="metadata \\(must be an object\\)"):
        read_meta(checkpoint)
