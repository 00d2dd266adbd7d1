"""Signals: Ctrl-C, SIGTERM and SIGKILL, and resuming after them.

Ctrl-C at any moment of a command is one line on standard error and exit
status 130: while the command line loads, while PyTorch is imported inside
a command, and while the command works. SIGTERM or Ctrl-C during training
saves the update reached and says how to continue. SIGKILL at several
points of a real ``rosetta train`` (each kill point freezes the training
process there, ``tests/support/kill_harness.py``, and the test sends
SIGKILL) loses nothing: ``rosetta train --resume`` then finishes the run,
whose weights and optimizer state must equal an uninterrupted run's
exactly.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from rosetta.cli import main
from rosetta.runs.checkpoint import read_index
from tests.support.paths import ROOT
from tests.support.toy import RNN_ATTENTION, TRANSFORMER, toy_config

# ``python -X importtime`` writes a line to standard error as each import
# ends: the moments below count from one of them, so each lands where it
# names, however fast this machine is
IMPORTED = "import time:"


LOADED = "| rosetta.cli"  # the command line loaded: ``main`` runs next


MOMENTS = [
    (LOADED, 0.0),
    (" sympy", 0.0),  # inside PyTorch's import, where it once broke
    (LOADED, 0.05),
    (LOADED, 0.2),
    (LOADED, 0.5),
    (LOADED, 1.0),
    (LOADED, 2.0),
]


def interrupted_at(command: list[str], marker: str, delay: float):
    """``command`` started with ``python -X importtime -m rosetta``, sent
    SIGINT ``delay`` seconds after the import line naming ``marker`` (none
    if it ends first); its status and its standard error, less the import
    lines."""
    process = subprocess.Popen(
        [sys.executable, "-X", "importtime", "-m", "rosetta", *command],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    said: list[str] = []
    seen = threading.Event()

    def read() -> None:
        for line in process.stderr:
            if line.startswith(IMPORTED):
                if line.rstrip().endswith(marker):
                    seen.set()
            else:
                said.append(line)

    reader = threading.Thread(target=read)
    reader.start()
    while not seen.wait(0.01):
        if process.poll() is not None:
            break
    else:
        time.sleep(delay)
        process.send_signal(signal.SIGINT)
    status = process.wait(timeout=120)
    reader.join(timeout=10)
    return status, "".join(said)


@pytest.fixture(scope="module")
def translating(toy_run, tmp_path_factory):
    """A translation command that works for a few seconds, and the lines it
    writes to standard error when nobody interrupts it."""
    source = tmp_path_factory.mktemp("interrupt") / "in.txt"
    source.write_text("alpha beta gamma\n" * 200, encoding="utf-8")
    run = toy_run("transformer")
    command = ["translate", "-m", str(run), "-i", str(source), "--beam", "4"]
    command += ["--device", "cpu"]
    status, stderr = interrupted_at(command, "(never)", 0.0)
    assert status == 0, stderr
    return command, stderr.splitlines()


@pytest.mark.slow
@pytest.mark.parametrize(("marker", "delay"), MOMENTS)
def test_ctrl_c_at_any_moment_is_one_line(translating, marker, delay):
    command, said = translating
    status, stderr = interrupted_at(command, marker, delay)
    assert "Traceback" not in stderr, stderr
    # the closing summary's figures (its seconds) differ from run to run
    usual = {re.sub(r"[\d.,]+", "#", line) for line in said}
    added = [
        line
        for line in stderr.splitlines()
        if re.sub(r"[\d.,]+", "#", line) not in usual
    ]
    # 0: it had finished. -SIGINT, which a shell reports as 130 too: Python
    # ends so when the interrupt came inside code that PyTorch runs through
    # the C API, or as Python shut down after the command had finished
    assert status in (130, 0, -signal.SIGINT), (status, stderr)
    allowed = [["interrupted"]] if status == 130 else [[]]
    allowed += [["interrupted"]] if status == -signal.SIGINT else []
    assert added in allowed, (status, stderr)


def test_an_error_that_follows_ctrl_c_reports_the_interrupt(monkeypatch, capsys):
    """An import cut short by Ctrl-C leaves a module half made; the error
    its next use raises is reported as the interrupt it came from."""
    import rosetta.cli as cli

    def half_imported(argv, noted):
        # the interrupt swallowed, as code that cleans up after a failed
        # import may, and the half-made module used
        with contextlib.suppress(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
        raise AttributeError("partially initialized module 'sympy'")

    monkeypatch.setattr(cli, "run_command", half_imported)
    # Python's own handler, as in a terminal: a shell starts a background job
    # (a CI run started with &) with Ctrl-C ignored, which main leaves alone
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        assert main(["translate"]) == 130
        assert capsys.readouterr().err == "interrupted\n"
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, before)


def test_errors_without_ctrl_c_are_not_taken_for_one(monkeypatch):
    import rosetta.cli as cli

    def broken(argv, noted):
        raise AttributeError("a plain bug")

    monkeypatch.setattr(cli, "run_command", broken)
    with pytest.raises(AttributeError, match="a plain bug"):
        main(["translate"])


BUDGET = ("train.max_epochs=null", "train.max_steps=30", "train.validate_every=10")


# kill point -> the step the resumed run must continue from (0: from scratch)
KILL_POINTS = {
    "validation:1": 0,  # during the first evaluation, before any checkpoint
    "write:2": 10,  # during a checkpoint write
    "index:2": 10,  # checkpoint 20 in place, the index not yet naming it
    "step:23": 20,  # mid-epoch, after two checkpoints
}


def command(*args: str) -> list[str]:
    return [sys.executable, *args]


def train_args(config: Path, run: Path, *extra: str) -> list[str]:
    flags = [flag for o in BUDGET for flag in ("--set", o)]
    return ["train", str(config), "-o", str(run), *flags, *extra]


def final_state(run: Path) -> dict[str, torch.Tensor]:
    folder = run / read_index(run)["latest"]
    tensors = load_file(str(folder / "model.safetensors"))
    optimizer = load_file(str(folder / "optimizer.safetensors"))
    return {**tensors, **{f"adam.{k}": v for k, v in optimizer.items()}}


def resume_to_the_end(
    config: Path, run: Path, expected: dict[str, torch.Tensor], what: str
) -> str:
    """``--resume`` the run to its end, check that it ends bitwise equal to
    ``expected`` (an uninterrupted run); the resumed run's log."""
    resumed = subprocess.run(
        command("-m", "rosetta.cli", *train_args(config, run, "--resume")),
        capture_output=True,
        cwd=ROOT,
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stderr.decode()[-2000:]
    got = final_state(run)
    assert got.keys() == expected.keys()
    different = [k for k in expected if not torch.equal(got[k], expected[k])]
    assert different == [], f"{len(different)} tensors differ after {what}"
    return resumed.stdout.decode()


MODELS = {"transformer": TRANSFORMER, "rnn-attention": RNN_ATTENTION}


CASES = [("transformer", point) for point in KILL_POINTS] + [
    ("rnn-attention", "write:2"),
    ("marian-finetune", "step:23"),
]


def marian_finetune(folder: Path) -> Path:
    """A MarianMT model made and imported here, and a configuration that
    fine-tunes it (``train.init``, no model section)."""
    from benchmarks.marian_model import make_marian, sentences

    from rosetta.families import all_importers
    from rosetta.jobs.importers import import_run

    marian = make_marian(folder / "marian", d_model=16, layers=1, heads=2, d_ff=32)
    hf = next(importer for importer in all_importers() if importer.name == "hf")
    import_run(hf, str(marian), folder / "imported", log=lambda *_: None)
    for split, count in (("train", 300), ("val", 30)):
        for language in ("de", "en"):
            text = "\n".join(sentences(language, count, split)) + "\n"
            (folder / f"{split}.{language}").write_text(text)
    config = folder / "finetune.yaml"
    config.write_text(
        "data: {train: {src: train.de, tgt: train.en},\n"
        "       valid: {src: val.de, tgt: val.en}}\n"
        f"train: {{init: {folder / 'imported'}, batch_tokens: 600, "
        "warmup_steps: 5, keep_last: 3}\n"
    )
    return config


@pytest.fixture(scope="module")
def setup(request, tmp_path_factory):
    """The model's config and the state an uninterrupted run ends with."""
    folder = tmp_path_factory.mktemp(request.param)
    if request.param == "marian-finetune":
        config = marian_finetune(folder)
    else:
        _, config = toy_config(folder, model=MODELS[request.param])
    straight = folder / "straight"
    done = subprocess.run(
        command("-m", "rosetta.cli", *train_args(config, straight)),
        capture_output=True,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    return request.param, folder, config, final_state(straight)


@pytest.mark.slow
@pytest.mark.parametrize(("setup", "point"), CASES, indirect=["setup"])
def test_killed_and_resumed_training_ends_bitwise_identical(setup, point):
    _, folder, config, expected = setup
    run = folder / point.replace(":", "-")
    marker = folder / f"{run.name}.pid"
    harness = subprocess.Popen(
        command(
            "tests/support/kill_harness.py",
            point,
            str(marker),
            "--",
            *train_args(config, run),
        ),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert harness.poll() is None, harness.stderr.read().decode()[-2000:]
        assert time.monotonic() < deadline, "the kill point was never reached"
        time.sleep(0.05)
    os.kill(harness.pid, signal.SIGKILL)
    assert harness.wait(timeout=30) == -signal.SIGKILL
    harness.stderr.close()

    log = resume_to_the_end(config, run, expected, point)
    if KILL_POINTS[point]:  # it really continued from the checkpoint
        assert f"(step {KILL_POINTS[point]}, " in log, log
    else:
        assert "no checkpoint yet; starting from the beginning" in log, log
    index = read_index(run)
    assert all((run / name).is_dir() for name in index["checkpoints"])
    assert not list(run.glob("*.tmp"))  # no half-written leftovers named


@pytest.mark.slow
@pytest.mark.parametrize("setup", ["transformer"], indirect=True)
@pytest.mark.parametrize("name", ["term", "int"])
def test_a_signal_saves_the_update_and_resume_ends_identical(setup, name):
    """SIGTERM or Ctrl-C at a random update (not one that validates): the
    update is saved, the message says how to continue, and the resumed run
    ends bitwise equal to an uninterrupted one."""
    _, folder, config, expected = setup
    step = random.choice([s for s in range(1, 30) if s % 10])
    run = folder / f"{name}-{step}"
    marker = folder / f"{run.name}.pid"
    stopped = subprocess.run(
        command(
            "tests/support/kill_harness.py",
            f"{name}:{step}",
            str(marker),
            "--",
            *train_args(config, run),
        ),
        capture_output=True,
        cwd=ROOT,
        timeout=300,
    )
    number = signal.SIGTERM if name == "term" else signal.SIGINT
    err = stopped.stderr.decode()
    assert stopped.returncode == 128 + number, err[-2000:]
    assert f"stopped by {number.name} at update {step}" in err, err[-2000:]
    assert "--resume" in err and "Traceback" not in err, err[-2000:]
    assert read_index(run)["latest"] == f"checkpoint-{step:07d}"
    log = resume_to_the_end(config, run, expected, f"{name}:{step}")
    assert f"(step {step}, " in log


def test_ctrl_c_during_an_import_of_pytorch_is_raised_once_it_ends():
    """Raised inside PyTorch's import, KeyboardInterrupt can end the process
    with SIGABRT (its C++ calls Python code that cannot raise it): Ctrl-C
    then is noted at once and raised when the import has ended."""
    import importlib.machinery
    import types

    from rosetta.cli import interrupts_noted

    name = "torch._an_import_under_way"
    fake = types.ModuleType(name)
    fake.__spec__ = importlib.machinery.ModuleSpec(name, None)
    fake.__spec__._initializing = True
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.modules[name] = fake
    noted: list[bool] = []
    try:
        with interrupts_noted(noted):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.3)  # nothing raised while the import is under way
            assert noted == [True]
            fake.__spec__._initializing = False
            with pytest.raises(KeyboardInterrupt):
                time.sleep(10)
    finally:
        del sys.modules[name]
        signal.signal(signal.SIGINT, previous)
    assert noted == [True, True]
