"""The file-system chaos test, small (``benchmarks/chaos_files.py`` runs it
large): random sequences of writing commands at random places, some killed
at random moments; every file but the output named stays byte-identical,
and an output is old or new, never neither (``tests/chaos.py``)."""

from __future__ import annotations

import pytest

from tests.chaos import run_sequence

SEEDS = range(1, 5)


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
def test_no_sequence_of_commands_destroys_anything(toy_run, tmp_path, seed):
    run = toy_run("transformer")
    config = run.parent / "toy.yaml"
    outcome = run_sequence(run, config, tmp_path, seed, steps=4)
    assert outcome.steps == 4
    assert outcome.violations == []
