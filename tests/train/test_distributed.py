"""Data-parallel training: processes, accumulation and one big batch agree;
runs under torchrun resume after a kill and stop together on an error."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from safetensors.torch import load_file

from rosetta.cli import main
from rosetta.families import build_model, family_of
from rosetta.jobs.processes import end_worker
from rosetta.runs.checkpoint import read_index
from rosetta.train.distributed import Group, leave
from rosetta.train.prepare import prepare_data
from rosetta.train.trainer import Trainer
from rosetta.train.translation_task import TranslationTask
from tests.support.paths import ROOT
from tests.support.toy import toy_config, toy_lm_config

CPU = torch.device("cpu")
NO_DROPOUT = """{encoder_layers: 1, decoder_layers: 1, d_model: 32, heads: 2,
   d_ff: 64, dropout: 0.0, share_embeddings: false, max_positions: 64}"""


def trainer_for(folder, group=None):
    folder.mkdir(parents=True, exist_ok=True)
    # Adam with eps 1e-9 turns a gradient that is zero in exact arithmetic (an
    # attention key bias: softmax ignores it) into a full step of either sign
    # from float noise alone; eps 1e-6 keeps such noise a noise-sized step.
    overrides = ("train.warmup_steps=2", "train.eps=1e-6")
    config, _ = toy_config(folder, *overrides, model=NO_DROPOUT)
    data = prepare_data(config, folder / "run", log=lambda *_: None)
    torch.manual_seed(0)
    model = build_model(
        config.model, len(data.tokenizers.src), len(data.tokenizers.tgt)
    )
    translator = family_of(config.model).inference
    task = TranslationTask(
        config, model, replace(data, valid=[], valid_pairs=[]), CPU, translator
    )
    return Trainer(config, folder / "run", model, task, CPU, group or Group())


def updates(trainer):
    """Three updates of two batches, then one of one and one of three: uneven
    for 2 processes."""
    batches = trainer.task.epoch_batches(0) + trainer.task.epoch_batches(1)
    two = [batches[i : i + 2] for i in range(0, 6, 2)]
    return [*two, batches[6:7], batches[7:10]]


def train_in_process(rank, world_size, folder, init_file, out):
    dist.init_process_group(
        "gloo", init_method=f"file://{init_file}", rank=rank, world_size=world_size
    )
    try:
        torch.set_num_threads(1)
        trainer = trainer_for(folder / f"rank{rank}", Group(rank, world_size))
        for group in updates(trainer):
            assert trainer.train_step(group) is not None
        if rank == 0:
            torch.save(trainer.model.state_dict(), out)
        dist.barrier()
    finally:
        leave()
    end_worker()  # as rosetta train ends a process torchrun started


def test_two_processes_equal_accumulation_and_one_doubled_batch(tmp_path):
    out = tmp_path / "ddp.pt"
    mp.spawn(
        train_in_process,
        args=(2, tmp_path, tmp_path / "rendezvous", out),
        nprocs=2,
        join=True,
    )
    distributed = torch.load(out)

    accumulated = trainer_for(tmp_path / "accumulated")
    doubled = trainer_for(tmp_path / "doubled")
    for group in updates(accumulated):
        accumulated.train_step(group)  # a process of one runs every batch
        doubled.train_step([[i for batch in group for i in batch]])  # one batch
    for name, weight in accumulated.model.state_dict().items():
        assert torch.allclose(weight, distributed[name], atol=1e-5), name
        assert torch.allclose(weight, doubled.model.state_dict()[name], atol=1e-5)


# ---- whole runs under torchrun: killed, resumed, failing -------------------

BUDGET = ("train.max_epochs=null", "train.max_steps=30", "train.validate_every=10")


def train_args(config: Path, run: Path, *extra: str) -> list[str]:
    flags = [flag for o in BUDGET for flag in ("--set", o)]
    return ["train", str(config), "-o", str(run), *flags, *extra]


def torchrun(*args: str) -> list[str]:
    launcher = ["-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2"]
    return [sys.executable, *launcher, *args]


def harness(point: str, marker: Path, rank: int, config: Path, run: Path):
    """``rosetta train`` in 2 processes, rank ``rank`` stopping at ``point``."""
    return subprocess.Popen(
        torchrun(
            "tests/support/kill_harness.py",
            point,
            str(marker),
            "--",
            *train_args(config, run),
        ),
        cwd=ROOT,
        env={**os.environ, "KILL_RANK": str(rank)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # apart from pytest
    )


def wait_for(marker: Path, process: subprocess.Popen) -> int:
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert process.poll() is None, process.stderr.read().decode()[-2000:]
        assert time.monotonic() < deadline, "the kill point was never reached"
        time.sleep(0.05)
    time.sleep(0.2)  # the pid is written
    return int(marker.read_text())


def descendants(pid: int) -> list[int]:
    """The processes started, directly or not, by ``pid`` (Linux's /proc)."""
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # it ended meanwhile
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    found, frontier = [], [pid]
    while frontier:
        children = [c for c, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


def final_state(run: Path) -> dict[str, torch.Tensor]:
    folder = run / read_index(run)["latest"]
    tensors = load_file(str(folder / "model.safetensors"))
    optimizer = load_file(str(folder / "optimizer.safetensors"))
    return {**tensors, **{f"adam.{k}": v for k, v in optimizer.items()}}


def what_failed(done: subprocess.CompletedProcess) -> str:
    """A failed multi-process run's stderr: the processes' own output comes
    first, torchrun's summary (which names only the signal) last."""
    text = done.stderr.decode()
    return text if len(text) < 6000 else f"{text[:4000]}\n[...]\n{text[-2000:]}"


def rosetta(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rosetta.cli", *args],
        capture_output=True,
        cwd=ROOT,
        timeout=300,
    )


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """A 2-process run's config and the state it ends with."""
    folder = tmp_path_factory.mktemp("ddp")
    _, config = toy_config(folder)
    done = rosetta(*train_args(config, folder / "straight", "--nproc", "2"))
    assert done.returncode == 0, what_failed(done)
    assert "2 processes" in done.stdout.decode()
    return folder, config, final_state(folder / "straight")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("point", "rank", "whole", "resumed_from"),
    [("step:13", 1, False, 10), ("write:2", 0, True, 10)],
    ids=["one-rank-mid-epoch", "whole-run-in-a-checkpoint-write"],
)
def test_a_killed_run_resumes_to_the_uninterrupted_weights(
    uninterrupted, point, rank, whole, resumed_from
):
    folder, config, expected = uninterrupted
    run = folder / point.replace(":", "-")
    marker = folder / f"{run.name}.pid"
    process = harness(point, marker, rank, config, run)
    pid = wait_for(marker, process)
    if whole:  # torchrun and its workers, which run in sessions of their own
        for victim in [process.pid, *descendants(process.pid)]:
            os.kill(victim, signal.SIGKILL)
    else:
        os.kill(pid, signal.SIGKILL)  # torchrun then stops the other rank
    assert process.wait(timeout=60) != 0
    process.stderr.close()

    resumed = rosetta(*train_args(config, run, "--nproc", "2", "--resume"))
    assert resumed.returncode == 0, what_failed(resumed)
    assert f"(step {resumed_from}, " in resumed.stdout.decode()
    got = final_state(run)
    different = [k for k in expected if not torch.equal(got[k], expected[k])]
    assert got.keys() == expected.keys() and different == []


@pytest.mark.slow
@pytest.mark.parametrize("rank", [0, 1])
def test_a_signal_to_one_rank_saves_the_update_in_every_process(uninterrupted, rank):
    """SIGTERM to either process (``tests/support/kill_harness.py`` sends it to
    itself after update 13): every process saves update 13 and stops, and
    the resumed run ends with the uninterrupted run's weights."""
    folder, config, expected = uninterrupted
    run = folder / f"term-rank{rank}"
    process = harness("term:13", folder / f"{run.name}.pid", rank, config, run)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode != 0
    assert b"stopped by SIGTERM at update 13" in stderr, stderr.decode()[-2000:]
    assert read_index(run)["latest"] == "checkpoint-0000013"
    resumed = rosetta(*train_args(config, run, "--nproc", "2", "--resume"))
    assert resumed.returncode == 0, what_failed(resumed)
    got = final_state(run)
    different = [k for k in expected if not torch.equal(got[k], expected[k])]
    assert got.keys() == expected.keys() and different == []


@pytest.mark.slow
def test_a_failing_rank_stops_every_process_with_its_error(uninterrupted):
    folder, config, _ = uninterrupted
    process = harness("raise:5", folder / "never", 1, config, folder / "failing")
    _, stderr = process.communicate(timeout=90)  # no hang: a bounded wait
    assert process.returncode != 0
    assert b"injected failure at step 5" in stderr


def test_a_run_resumes_only_with_as_many_processes(uninterrupted):
    folder, config, _ = uninterrupted
    done = rosetta(*train_args(config, folder / "straight", "--resume"))
    assert done.returncode == 2
    assert b"written by 2 training process(es); resume it with as many, not 1" in (
        done.stderr
    )


@pytest.mark.slow
def test_rosetta_train_in_two_processes_equals_update_freq_two(tmp_path):
    """The whole command: ``--nproc 2`` and ``train.update_freq=2`` group the
    same batches into the same updates and end with the same weights."""
    _, config = toy_config(tmp_path, model=NO_DROPOUT)
    same = ["--set", "train.eps=1e-6", "--set", "train.warmup_steps=2"]
    two = rosetta(*train_args(config, tmp_path / "two"), *same, "--nproc", "2")
    assert two.returncode == 0, what_failed(two)
    one = rosetta(
        *train_args(config, tmp_path / "one"), *same, "--set", "train.update_freq=2"
    )
    assert one.returncode == 0, what_failed(one)
    processes, accumulated = (
        final_state(tmp_path / "two"),
        final_state(tmp_path / "one"),
    )
    for name, weight in accumulated.items():
        if not name.startswith("adam."):
            assert torch.allclose(weight, processes[name], atol=1e-5), name


@pytest.mark.slow
def test_two_processes_train_a_language_model_as_one_process_does(tmp_path):
    """Each process reads its half of the streams and keeps its own memory:
    the weights and the memories end as those of one process reading all."""
    _, config = toy_lm_config(tmp_path)
    # eps 1e-6: see trainer_for; Adam turns float noise in a zero gradient into
    # a full step at eps 1e-9
    no_dropout = ("--set", "model.dropout=0.0", "--set", "train.eps=1e-6")
    one = rosetta("train", str(config), "-o", str(tmp_path / "one"), *no_dropout)
    assert one.returncode == 0, what_failed(one)
    two = rosetta(
        "train", str(config), "-o", str(tmp_path / "two"), "--nproc", "2", *no_dropout
    )
    assert two.returncode == 0, what_failed(two)
    single, split = final_state(tmp_path / "one"), final_state(tmp_path / "two")
    for name, weight in single.items():
        assert torch.allclose(weight, split[name], atol=1e-5), name
    last = "checkpoint-0000012/state.safetensors"
    memory = load_file(str(tmp_path / "one" / last))
    halves = load_file(str(tmp_path / "two" / last))
    for layer in range(2):
        joined = torch.cat(
            [halves[f"rank{r}.memory.{layer}"] for r in range(2)]
        )  # (8, 16, 32): rank 0's streams, then rank 1's
        assert torch.allclose(memory[f"rank0.memory.{layer}"], joined, atol=1e-5)


# ---- refusals: said once, however many processes -------------------------


def test_a_refusal_under_nproc_is_said_once_before_torchrun_starts(tmp_path):
    """Resuming a one-process run in two is refused by ``rosetta train``
    itself, before torchrun starts processes that would each say so."""
    _, config = toy_config(tmp_path)
    run = tmp_path / "one"
    short = ("--set", "train.max_steps=2", "--set", "train.validate_every=2")
    assert main(train_args(config, run, *short)) == 0
    done = rosetta(*train_args(config, run, *short, "--nproc", "2", "--resume"))
    stderr = done.stderr.decode()
    assert done.returncode == 2, stderr
    refusal = "written by 1 training process(es); resume it with as many, not 2"
    assert stderr.count(refusal) == 1 and len(stderr.splitlines()) == 1, stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("setting", "said"),
    [
        ("model.max_positions=4", "(model.max_positions)"),
        ("data.train.src=missing.src", "missing.src: file not found"),
    ],
    ids=["every-process", "rank-0-alone"],
)
def test_a_refusal_inside_the_processes_is_said_once(tmp_path, setting, said):
    """A refusal every process reaches once the data is read (positions too
    few for it), or one that rank 0 alone meets while the others wait for it
    (a corpus it cannot read): one line, without torchrun's traceback or the
    waiting processes' own."""
    _, config = toy_config(tmp_path)
    two = ("--set", setting, "--nproc", "2")
    done = rosetta(*train_args(config, tmp_path / "run", *two))
    stderr = done.stderr.decode()
    assert done.returncode == 2, stderr
    errors = [line for line in stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1 and said in errors[0], stderr
    assert errors[0].startswith("rosetta train: error: ")
    assert "Traceback" not in stderr and "ChildFailedError" not in stderr


@pytest.mark.slow
def test_ctrl_c_under_nproc_is_said_once_and_saves(uninterrupted, tmp_path):
    """Ctrl-C reaches every process of the terminal's group: rosetta,
    torchrun and each training process. The update under way is saved and
    said once, with how to continue; status 130, nothing from torchrun."""
    _, config, _ = uninterrupted
    run = tmp_path / "ctrl-c"
    process = subprocess.Popen(
        [sys.executable, "-m", "rosetta.cli", *train_args(config, run, "--nproc", "2")],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own group, as a terminal's job
    )
    deadline = time.monotonic() + 180
    while (
        not (run / "metrics.jsonl").is_file()
        or not (run / "metrics.jsonl").read_text().strip()
    ):
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.1)
    os.killpg(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=180)
    said = [
        line
        for line in stderr.decode().replace("\r", "\n").splitlines()
        if line.strip() and "update/s" not in line and "%|" not in line
    ]
    assert process.returncode == 130, said
    assert sum("finishing this update" in line for line in said) == 1, said
    assert sum("stopped by SIGINT at update" in line for line in said) == 1, said
    assert not any("error" in line or line.startswith("W1") for line in said), said
    assert read_index(run)["latest"]
