"""Numerical faults and failed writes: skipped, reported, and nothing lost."""

from __future__ import annotations

import errno
import json
import shutil

import pytest
import torch

import rosetta.runs.checkpoint as ckpt
import rosetta.train.trainer as trainer_module
import rosetta.train.translation_task as task_module
from rosetta.errors import RosettaError
from rosetta.jobs.loading import load_translator
from rosetta.jobs.training import run_training
from tests.support.toy import toy_config
from tests.train.test_trainer import latest, weights

STEPS = ("train.max_epochs=null", "train.validate_every=10")


def config(tmp_path, steps=30):
    return toy_config(tmp_path, *STEPS, f"train.max_steps={steps}")[0]


def poison_losses(monkeypatch, bad_calls):
    """Make the loss of the given (1-based) training calls NaN."""
    original = task_module.projected_label_smoothed_cross_entropy
    calls = {"n": 0}

    def loss(*args, **kwargs):
        calls["n"] += 1
        total, nll, count = original(*args, **kwargs)
        if calls["n"] in bad_calls:
            total = total * float("nan")
        return total, nll, count

    monkeypatch.setattr(task_module, "projected_label_smoothed_cross_entropy", loss)


def test_a_nan_loss_skips_the_update_with_a_warning_and_a_count(
    tmp_path, monkeypatch, capsys
):
    poison_losses(monkeypatch, {3, 4, 9})
    state = run_training(config(tmp_path), tmp_path / "run")
    out = capsys.readouterr().out
    assert "warning: non-finite loss at step 3; update skipped (1 so far)" in out
    assert "(3 so far)" in out
    assert state.skipped_steps == 3 and state.step == 30
    folder, _ = latest(tmp_path / "run")
    meta = json.loads((folder / "checkpoint.json").read_text())
    assert meta["trainer"]["skipped_steps"] == 3
    assert all(w.isfinite().all() for w in weights(folder).values())


def test_an_infinite_gradient_skips_the_update(tmp_path, monkeypatch, capsys):
    original = trainer_module.Trainer.train_step
    calls = {"n": 0}

    def train_step(self, indices):
        calls["n"] += 1
        if calls["n"] == 5:
            weight = next(self.model.parameters())
            handle = weight.register_hook(lambda grad: grad * float("inf"))
            try:
                return original(self, indices)
            finally:
                handle.remove()
        return original(self, indices)

    monkeypatch.setattr(trainer_module.Trainer, "train_step", train_step)
    state = run_training(config(tmp_path, steps=12), tmp_path / "run")
    assert "non-finite gradient norm at step 5" in capsys.readouterr().out
    assert state.skipped_steps == 1


def test_too_many_nan_losses_in_a_row_stop_with_a_clear_error(tmp_path, monkeypatch):
    poison_losses(monkeypatch, set(range(5, 100)))
    with pytest.raises(RosettaError, match="10 non-finite losses in a row"):
        run_training(config(tmp_path), tmp_path / "run")


def test_non_finite_weights_are_never_written(tmp_path, monkeypatch):
    run_training(config(tmp_path, steps=10), tmp_path / "run")
    original = trainer_module.Trainer.train_step

    def train_step(self, indices):
        outcome = original(self, indices)
        if self.state.step == 15:
            with torch.no_grad():
                next(self.model.parameters())[0, 0] = float("nan")
        return outcome

    monkeypatch.setattr(trainer_module.Trainer, "train_step", train_step)
    with pytest.raises(RosettaError, match="non-finite weights at step 20"):
        run_training(config(tmp_path), tmp_path / "run", resume=True)
    folder, _ = latest(tmp_path / "run")
    assert folder.name == "checkpoint-0000010"  # the good one, untouched
    load_translator(tmp_path / "run")


@pytest.mark.parametrize(
    ("where", "error"),
    [
        (ckpt.MODEL_FILE, OSError(errno.ENOSPC, "No space left on device")),
        (ckpt.OPTIMIZER_FILE, PermissionError(errno.EACCES, "Permission denied")),
    ],
)
def test_a_failed_write_keeps_the_last_good_checkpoint(
    tmp_path, monkeypatch, where, error
):
    run_training(config(tmp_path, steps=10), tmp_path / "run")
    good, _ = latest(tmp_path / "run")
    before = weights(good)
    save_file = ckpt.save_file

    def fail(tensors, filename, *args, **kwargs):
        if filename.endswith(where):
            raise error
        save_file(tensors, filename, *args, **kwargs)

    monkeypatch.setattr(ckpt, "save_file", fail)
    with pytest.raises(
        RosettaError, match=f"checkpoint not written \\({error.strerror}"
    ):
        run_training(config(tmp_path), tmp_path / "run", resume=True)
    folder, index = latest(tmp_path / "run")
    assert folder == good and index["checkpoints"] == [good.name]
    assert not list((tmp_path / "run").glob("*.tmp"))
    after = weights(folder)
    assert all(torch.equal(before[k], after[k]) for k in before)
    load_translator(tmp_path / "run")


def test_a_corrupted_latest_checkpoint_leaves_the_previous_one_loadable(tmp_path):
    run_training(config(tmp_path, steps=20), tmp_path / "run")
    index = json.loads((tmp_path / "run" / "checkpoints.json").read_text())
    previous, last = (tmp_path / "run" / n for n in index["checkpoints"])
    (last / "model.safetensors").write_bytes(b"\0" * 64)
    with pytest.raises(RosettaError, match="checksum mismatch"):
        load_translator(last)
    load_translator(previous)


def test_resuming_twice_from_the_same_checkpoint_gives_the_same_result(tmp_path):
    run_training(config(tmp_path, steps=15), tmp_path / "a")
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    for run in ("a", "b"):
        run_training(config(tmp_path), tmp_path / run, resume=True)
    wa, wb = weights(latest(tmp_path / "a")[0]), weights(latest(tmp_path / "b")[0])
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
