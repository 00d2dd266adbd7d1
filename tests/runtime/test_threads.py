"""The thread policy: one ``--threads`` meaning in every command, and a
default that counts the cores other work leaves free."""

import subprocess
import sys
import time
from types import SimpleNamespace

import pytest
import torch

from rosetta.cli import build_parser
from rosetta.cli.common import decoding_workers
from rosetta.cli.train import cmd_train
from rosetta.runtime import threads
from rosetta.search.options import SearchOptions

# Every command that computes with the model, with its required arguments;
# the rest only move files.
COMPUTING = {
    "train": ["config.yaml"],
    "translate": ["-m", "run"],
    "distill": ["-m", "run", "--src", "s.txt", "-o", "out"],
    "evaluate": ["-m", "run", "--src", "s.txt", "--ref", "r.txt"],
    "serve": ["-m", "run"],
    "perplexity": ["-m", "run", "--text", "t.txt"],
    "generate": ["-m", "run", "--prompt", "Once"],
}


STAT = """cpu  900 0 300 5000 40 0 10 0 0 0
cpu0 100 0 50 1000 10 0 0 0 0 0
cpu1 200 0 50 1000 10 0 5 0 0 0
cpu2 300 0 100 1500 10 0 5 0 0 0
cpu3 300 0 100 1500 10 0 0 0 0 0
intr 12345 0 0
"""


def test_only_the_cpus_this_process_may_use_count(tmp_path, monkeypatch):
    """A container given CPUs 1 and 2 of four: the others' work is not its
    business. Busy is user + nice + system + irq + softirq + steal."""
    (tmp_path / "stat").write_text(STAT)
    monkeypatch.setattr(threads, "STAT", tmp_path / "stat")
    monkeypatch.setattr(threads, "cpus", lambda: {1, 2})
    machine, _ = threads.cpu_seconds()
    ticks = (200 + 50 + 5) + (300 + 100 + 5)
    assert machine == pytest.approx(ticks / threads.os.sysconf("SC_CLK_TCK"))


def test_others_busy_leaves_out_this_process(monkeypatch):
    """Over 2 s the CPUs were busy 3 s, 1 s of it this process's."""
    monkeypatch.setattr(threads, "cpu_seconds", lambda: (13.0, 6.0))
    assert threads.others_busy((10.0, 5.0), seconds=2.0) == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("busy", "cores", "siblings", "expected"),
    [
        (0.1, 4, "1", 4),  # idle: every core, up to the ceiling
        (2.0, 4, "1", 2),  # two busy processes leave two cores
        (8.0, 4, "1", 1),  # a fully busy machine: one thread, never none
        (0.0, 8, "1", 4),  # never more than the ceiling
        (0.0, 4, "2", 2),  # two training processes share the cores
    ],
)
def test_the_policy_counts_the_cores_left_free(
    monkeypatch, busy, cores, siblings, expected
):
    monkeypatch.setattr(threads, "cores", lambda: cores)
    monkeypatch.setenv("LOCAL_WORLD_SIZE", siblings)
    assert threads.threads_beside(busy, ceiling=4) == expected


def test_without_proc_the_load_average_stands_in(tmp_path, monkeypatch):
    monkeypatch.setattr(threads, "STAT", tmp_path / "absent")
    monkeypatch.setattr(threads, "cores", lambda: 4)
    monkeypatch.setattr(threads.os, "getloadavg", lambda: (2.6, 1.0, 1.0))
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    assert threads.cpu_seconds() is None
    assert threads.free_threads(ceiling=4) == 1  # 4 - 2.6, rounded


def test_a_machine_busy_on_every_core_gets_one_thread(monkeypatch):
    """Real competing processes, one per core, as ``benchmarks/busy.py``
    starts them."""
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    spinners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"])
        for _ in range(threads.cores())
    ]
    try:
        time.sleep(0.5)  # started and spinning
        assert threads.free_threads(ceiling=threads.cores()) == 1
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def test_use_threads_sets_what_is_asked():
    before = torch.get_num_threads()
    try:
        assert threads.use_threads(1) == 1
        assert torch.get_num_threads() == 1
        cores = threads.cores()  # more than the cores: capped
        assert threads.use_threads(cores + 1) == cores == torch.get_num_threads()
        assert threads.use_threads(None) == torch.get_num_threads() >= 1
    finally:
        torch.set_num_threads(before)


def subcommands():
    (verbs,) = [
        action
        for action in build_parser()._actions
        if action.dest == "verb"  # the sub-commands
    ]
    return verbs.choices


@pytest.mark.parametrize("verb", sorted(COMPUTING))
def test_every_computing_command_takes_threads(verb):
    parser, needed = subcommands()[verb], COMPUTING[verb]
    assert parser.parse_args(needed).threads is None  # auto by default
    assert parser.parse_args([*needed, "--threads", "2"]).threads == 2
    assert parser.parse_args([*needed, "--threads", "auto"]).threads is None


@pytest.mark.parametrize("given", ["0", "-1", "two", "1.5"])
def test_a_bad_thread_count_is_one_usage_error(given, capsys):
    with pytest.raises(SystemExit) as stop:
        subcommands()["translate"].parse_args(["-m", "run", "--threads", given])
    assert stop.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--threads" in error and given in error


def test_train_threads_reaches_the_config(monkeypatch, tmp_path):
    """``rosetta train --threads N`` is ``--set train.threads=N``, so the
    processes torchrun starts get it too."""
    seen = {}

    def fake_run(config, run_dir, resume=False):
        seen["threads"] = config.train.threads

    monkeypatch.setattr("rosetta.jobs.training.run_training", fake_run)
    args = subcommands()["train"].parse_args(
        [
            "configs/multi30k-de-en-transformer.yaml",
            "-o",
            str(tmp_path / "run"),
            "--threads",
            "1",
        ]
    )
    cmd_train(args)
    assert seen == {"threads": 1}
    assert args.set[-1] == "train.threads=1"


class Scripted:
    """Readings of the clock and of CPU seconds (machine, this process)."""

    def __init__(self, monkeypatch, cores):
        self.now, self.machine, self.own = 0.0, 0.0, 0.0
        monkeypatch.setattr(threads.time, "monotonic", lambda: self.now)
        monkeypatch.setattr(threads, "cpu_seconds", lambda: (self.machine, self.own))
        monkeypatch.setattr(threads, "cores", lambda: cores)
        monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)

    def spend(self, seconds, others, own):
        """``seconds`` pass; other processes use ``others`` cores, this one
        ``own``."""
        self.now += seconds
        self.machine += seconds * (others + own)
        self.own += seconds * own


def test_training_threads_follow_the_other_work(monkeypatch):
    """Counted from the CPU time others used, not from runnable threads,
    which would count this process's own."""
    clock = Scripted(monkeypatch, cores=2)
    before = torch.get_num_threads()
    monkeypatch.setattr(threads, "TORCH_DEFAULT", 2)
    try:
        torch.set_num_threads(2)
        reassess = threads.Reassessment(every=30.0)
        clock.spend(10.0, others=1.8, own=0.2)
        assert reassess() is None  # not yet time to look
        clock.spend(20.0, others=1.8, own=0.2)
        change = reassess()
        assert torch.get_num_threads() == 1
        assert change == "threads: 2 -> 1 (other processes are using 1.8 of 2 cores)"
        clock.spend(30.0, others=0.0, own=2.0)  # ours alone: both cores
        assert (
            reassess() == "threads: 1 -> 2 (other processes are using 0.0 of 2 cores)"
        )
        clock.spend(30.0, others=0.3, own=1.7)
        assert reassess() is None  # still two
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize(
    ("workers", "asked", "in_workers", "sample", "expected"),
    [
        ("auto", None, True, False, "cores"),  # both auto: a worker per core
        ("auto", 2, True, False, "auto"),  # threads given: one per thread
        (1, None, True, False, 1),  # a number is used as given (cores at most)
        ("auto", None, False, False, "auto"),  # NAT, CTranslate2: their own way
        ("auto", None, True, True, "auto"),  # sampling keeps one generator
    ],
)
def test_auto_decoding_gives_every_core_a_one_thread_worker(
    workers, asked, in_workers, sample, expected
):
    args = SimpleNamespace(workers=workers, threads=asked)
    translator = SimpleNamespace(
        decodes_in_workers=in_workers, device=torch.device("cpu")
    )
    options = SearchOptions(sample=sample, seed=1 if sample else None)
    chosen = decoding_workers(args, translator, options)
    assert chosen == (threads.TORCH_DEFAULT if expected == "cores" else expected)
