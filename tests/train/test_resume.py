"""``--resume`` continues under the configuration the run was trained with:
what the run learns may not change, its budget may (with a notice); and one
writer at a time per run."""

from __future__ import annotations

import pytest

from rosetta.cli import main
from rosetta.errors import RosettaError
from rosetta.runs.lock import run_lock
from rosetta.train.resume import config_changes
from tests.support.toy import toy_config


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
