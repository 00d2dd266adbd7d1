"""Numerical faults in training: a non-finite loss or gradient norm skips
the update with a warning and a running count (kept in the checkpoint), too
many in a row stop training with a clear error, and non-finite weights are
never written."""

from __future__ import annotations

import json

import pytest
import torch

import rosetta.train.dense_loss as loss_module
import rosetta.train.trainer as trainer_module
from rosetta.errors import RosettaError
from rosetta.jobs.loading import load_translator
from rosetta.jobs.training import run_training
from tests.support.toy import toy_config_for_steps
from tests.train.test_trainer import latest, weights


def poison_losses(monkeypatch, bad_calls):
    """Make the loss of the given (1-based) training calls NaN."""
    original = loss_module.projected_label_smoothed_cross_entropy
    calls = {"n": 0}

    def loss(*args, **kwargs):
        calls["n"] += 1
        total, nll, count = original(*args, **kwargs)
        if calls["n"] in bad_calls:
            total = total * float("nan")
        return total, nll, count

    monkeypatch.setattr(loss_module, "projected_label_smoothed_cross_entropy", loss)


def test_a_nan_loss_skips_the_update_with_a_warning_and_a_count(
    tmp_path, monkeypatch, capsys
):
    poison_losses(monkeypatch, {3, 4, 9})
    state = run_training(toy_config_for_steps(tmp_path), tmp_path / "run")
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
    state = run_training(toy_config_for_steps(tmp_path, steps=12), tmp_path / "run")
    assert "non-finite gradient norm at step 5" in capsys.readouterr().out
    assert state.skipped_steps == 1


def test_too_many_nan_losses_in_a_row_stop_with_a_clear_error(tmp_path, monkeypatch):
    poison_losses(monkeypatch, set(range(5, 100)))
    with pytest.raises(RosettaError, match="10 non-finite losses in a row"):
        run_training(toy_config_for_steps(tmp_path), tmp_path / "run")


def test_non_finite_weights_are_never_written(tmp_path, monkeypatch):
    run_training(toy_config_for_steps(tmp_path, steps=10), tmp_path / "run")
    original = trainer_module.Trainer.train_step

    def train_step(self, indices):
        outcome = original(self, indices)
        if self.state.step == 15:
            with torch.no_grad():
                next(self.model.parameters())[0, 0] = float("nan")
        return outcome

    monkeypatch.setattr(trainer_module.Trainer, "train_step", train_step)
    with pytest.raises(RosettaError, match="non-finite weights at step 20"):
        run_training(toy_config_for_steps(tmp_path), tmp_path / "run", resume=True)
    folder, _ = latest(tmp_path / "run")
    assert folder.name == "checkpoint-0000010"  # the good one, untouched
    load_translator(tmp_path / "run")
