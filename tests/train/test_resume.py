"""``--resume`` continues under the configuration the run was trained with:
what the run learns may not change, its budget may (with a notice); one
writer at a time per run; and resuming twice from the same checkpoint gives
the same weights."""

from __future__ import annotations

import shutil

import pytest
import torch

from rosetta.cli import main
from rosetta.config.reading import config_to_dict
from rosetta.errors import RosettaError
from rosetta.jobs.training import run_training
from rosetta.runs.lock import run_lock
from rosetta.train.resume import config_changes
from tests.support.toy import toy_config, toy_config_for_steps
from tests.train.test_trainer import latest, weights


def test_config_changes_split_what_is_learned_from_the_budget():
    saved = {"model": {"d_model": 32}, "train": {"lr": 1e-3, "max_steps": 10}}
    current = {"model": {"d_model": 64}, "train": {"lr": 1e-3, "max_steps": 20}}
    refused, accepted = config_changes(saved, current)
    assert refused == ["model.d_model: 32 -> 64"]
    assert accepted == ["train.max_steps: 10 -> 20"]
    assert config_changes(saved, saved) == ([], [])


def test_resume_refuses_a_changed_model_or_override_and_accepts_a_budget(
    tmp_path, capsys
):
    _, config = toy_config(tmp_path)
    run = tmp_path / "run"
    budget = ["--set", "train.max_epochs=null", "--set", "train.validate_every=5"]
    train = ["train", str(config), "-o", str(run), *budget]
    assert main([*train, "--set", "train.max_steps=5", "--set", "train.lr=0.002"]) == 0
    capsys.readouterr()
    # the earlier --set train.lr forgotten: the run would go on another way
    assert main([*train, "--set", "train.max_steps=10", "--resume"]) == 2
    err = capsys.readouterr().err
    assert "train.lr: 0.002 -> 0.003" in err and err.count("\n") == 1, err
    again = [*train, "--set", "train.max_steps=10", "--set", "train.lr=0.002"]
    assert main([*again, "--set", "model.d_model=64", "--resume"]) == 2
    assert "model.d_model: 32 -> 64" in capsys.readouterr().err
    assert main([*again, "--resume"]) == 0
    out = capsys.readouterr().out
    assert "resuming with changed settings: train.max_steps: 5 -> 10" in out, out


def test_a_key_added_after_the_run_was_written_is_no_change():
    """A run written before a key existed holds no value for it: read as
    the current configuration is, it has the key's default, so resuming it
    is no change; a value other than the default is one."""
    from rosetta.jobs.run_config import config_from_dict
    from rosetta.train.resume import check_resumed_config

    current = config_from_dict({"data": {}, "model": {"arch": "transformer"}})
    saved = config_to_dict(current)
    for later in ("first_position", "embedding_norm", "scale_embeddings"):
        del saved["model"][later]
    assert check_resumed_config({"config": saved}, current, "run") == []
    changed = config_from_dict(
        {"data": {}, "model": {"arch": "transformer", "embedding_norm": True}}
    )
    with pytest.raises(RosettaError, match=r"model\.embedding_norm: False -> True"):
        check_resumed_config({"config": saved}, changed, "run")


def test_one_writer_per_run(tmp_path, capsys):
    _, config = toy_config(tmp_path)
    run = tmp_path / "run"
    with run_lock(run):
        held = pytest.raises(RosettaError, match=r"another process \(PID \d+\)")
        with held, run_lock(run):
            pass
        for verb in ("prepare", "train"):
            assert main([verb, str(config), "-o", str(run)]) == 2
            assert "is being written by another process" in capsys.readouterr().err
    with run_lock(run):  # released: taken again
        pass


def test_resuming_twice_from_the_same_checkpoint_gives_the_same_result(tmp_path):
    run_training(toy_config_for_steps(tmp_path, steps=15), tmp_path / "a")
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    for run in ("a", "b"):
        run_training(toy_config_for_steps(tmp_path), tmp_path / run, resume=True)
    wa, wb = weights(latest(tmp_path / "a")[0]), weights(latest(tmp_path / "b")[0])
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
