"""The file-system chaos test, small (``benchmarks/chaos_files.py`` runs it
large): random sequences of writing commands at random places, some killed
at random moments; every file but the output named stays byte-identical,
and an output is old or new, never neither (``tests/support/chaos.py``)."""

from __future__ import annotations

import pytest

from tests.support.chaos import run_sequence

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
