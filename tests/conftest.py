import os
from pathlib import Path

import pytest
import torch
from hypothesis import settings

# Property-based tests draw the same examples on every run: CI must not turn
# red by the draw. To explore, drop it locally (or raise max_examples):
# its finds become regression tests (tests/boundaries/run_files/test_records.py
# has some).
settings.register_profile("rosetta", derandomize=True)
settings.load_profile("rosetta")

# Test models are tiny: one thread is faster than two (no wake-up cost) and
# leaves the other core to CLI subprocesses started by the end-to-end tests.
torch.set_num_threads(1)
os.environ.setdefault("OMP_NUM_THREADS", "1")


def pytest_sessionstart(session: pytest.Session) -> None:
    """``make test-gpu`` sets ROSETTA_REQUIRE_CUDA: there the device tests
    (parametrized over "cpu" and, where CUDA is visible, "cuda"; the trainer
    on its "auto" device) must run on a GPU rather than quietly on the CPU."""
    if os.environ.get("ROSETTA_REQUIRE_CUDA") and not torch.cuda.is_available():
        raise pytest.UsageError(
            f"ROSETTA_REQUIRE_CUDA is set, but this PyTorch ({torch.__version__}) "
            "sees no CUDA GPU"
        )


@pytest.fixture(scope="session")
def toy_run(tmp_path_factory):
    """A toy model trained once per test session, by kind: its run folder.

    ``toy_run("transformer")``, ``toy_run("rnn-attention")``, ...; the reversal
    task of ``tests/support/toy.py``, 60 steps, enough for sensible attention.
    """
    from rosetta.jobs.training import run_training
    from tests.support.toy import TOY_MODELS, toy_config

    runs: dict[str, Path] = {}

    def trained(kind: str) -> Path:
        if kind not in runs:
            folder = tmp_path_factory.mktemp(f"toy-{kind}")
            config, _ = toy_config(
                folder,
                "train.max_epochs=null",
                "train.max_steps=60",
                "train.validate_every=30",
                model=TOY_MODELS[kind],
            )
            run_training(config, folder / "run")
            runs[kind] = folder / "run"
        return runs[kind]

    return trained
