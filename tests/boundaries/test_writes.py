"""Writes that fail or are interrupted: a full disk or a permission error
while a checkpoint is saved, standard output on a full disk (or standard
input closed), and the file-system chaos test, small here
(``benchmarks/chaos_files.py`` runs it large): random sequences of writing
commands at random places, some killed at random moments, with Rosetta's
own files tampered with between them.

The promise: one clear line, exit status 2, and nothing lost: the last good
checkpoint stays loadable and no temporary folder is left; every file but
the output named stays byte-identical, and an output is old or new, never
neither (``tests/support/chaos.py``).
"""

from __future__ import annotations

import errno

import pytest
import torch

import rosetta.runs.checkpoint as ckpt
from rosetta.errors import RosettaError
from rosetta.jobs.loading import load_translator
from rosetta.jobs.training import run_training
from tests.support.chaos import run_sequence
from tests.support.toy import toy_config_for_steps
from tests.train.test_trainer import latest, weights

SEEDS = range(1, 5)


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
def test_no_sequence_of_commands_destroys_anything(toy_run, tmp_path, seed):
    run = toy_run("transformer")
    config = run.parent / "toy.yaml"
    outcome = run_sequence(run, config, tmp_path, seed, steps=4)
    assert outcome.steps == 4
    assert outcome.violations == []


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(101, 104))
def test_no_sequence_destroys_anything_when_rosettas_files_are_tampered_with(
    toy_run, tmp_path, seed
):
    """The same, with a tamperer's turns between the commands: Rosetta's own
    locks, records, journals and checkpoint folders edited, linked or
    replaced (``tests/support/tamper.py``)."""
    run = toy_run("transformer")
    config = run.parent / "toy.yaml"
    outcome = run_sequence(run, config, tmp_path, seed, steps=6, tampering=0.4)
    assert outcome.steps == 6
    assert outcome.violations == []


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
    run_training(toy_config_for_steps(tmp_path, steps=10), tmp_path / "run")
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
        run_training(toy_config_for_steps(tmp_path), tmp_path / "run", resume=True)
    folder, index = latest(tmp_path / "run")
    assert folder == good and index["checkpoints"] == [good.name]
    assert not list((tmp_path / "run").glob("*.tmp"))
    after = weights(folder)
    assert all(torch.equal(before[k], after[k]) for k in before)
    load_translator(tmp_path / "run")


def test_closed_standard_input_and_a_full_disk_are_one_line(toy_run):
    import subprocess
    import sys

    command = [sys.executable, "-m", "rosetta.cli", "translate"]
    command += ["-m", str(toy_run("transformer"))]
    closed = subprocess.run(
        command,
        stdin=None,
        capture_output=True,
        text=True,
        close_fds=True,
        preexec_fn=lambda: __import__("os").close(0),
    )
    assert closed.returncode == 2, closed.stderr
    assert "standard input is closed" in closed.stderr
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            command, input="alpha\n", stdout=full, stderr=subprocess.PIPE, text=True
        )
    assert result.returncode == 2, result.stderr
    assert "<stdout>: not written (No space left on device)" in result.stderr
    assert "Traceback" not in result.stderr + closed.stderr
