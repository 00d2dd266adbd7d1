"""How many CPU threads a command computes with: one policy for every command.

PyTorch's default is one intra-op thread per core. On an idle machine that is
the fastest choice; on a machine busy with other work it is the slowest. The
threads of one operation meet at a barrier after every small kernel, and while
the operating system has one of them waiting behind somebody else's process,
the others spin or sleep until it comes back. Decoding and training on a CPU
run thousands of small kernels, so a 2-core laptop with two other busy
processes can run a translation 5-7x slower on two threads than on one.

So the default (``threads`` unset, or ``--threads auto``) measures, for a
tenth of a second as the command starts, how busy other work keeps the CPUs
this process may run on, and uses the cores left free: at least one thread,
at most PyTorch's own default. Training, which can last hours while the
machine's other work comes and goes, measures again every 30 seconds
(``Reassessment``). A number given by the user is used as given.

Only this process's CPUs count (``sched_getaffinity``), read per CPU from
``/proc/stat``: in a container limited to some of a large machine's cores,
the machine's other tasks do not count against it.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import torch

from rosetta.errors import RosettaError

STAT = Path("/proc/stat")

# PyTorch's own choice, read before any command changes it: one per core.
TORCH_DEFAULT = torch.get_num_threads()


def cpus() -> set[int]:
    """The CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return set(os.sched_getaffinity(0))
    return set(range(os.cpu_count() or 1))


def cores() -> int:
    """How many CPUs this process may run on."""
    return len(cpus())


def free_threads(ceiling: int | None = None, window: float = 0.1) -> int:
    """The policy's choice: the cores other work leaves free, measured over
    ``window`` seconds, shared among the training processes of this
    machine, between 1 and ``ceiling``.

    Where the system does not report CPU time per CPU (not Linux), the one
    minute load average stands in.
    """
    before = cpu_seconds()
    if before is None:
        busy = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    else:
        time.sleep(window)
        busy = others_busy(before, window)
    return threads_beside(busy, ceiling)


def threads_beside(busy: float, ceiling: int | None = None) -> int:
    """The threads to use beside ``busy`` cores' worth of other work, at
    most ``ceiling`` (default: PyTorch's own default)."""
    ceiling = TORCH_DEFAULT if ceiling is None else ceiling
    # torchrun's processes on this machine share the cores
    siblings = local_processes()
    free = int(cores() - busy + 0.5)
    return max(1, min(free, ceiling // max(1, siblings)))


def cpu_seconds() -> tuple[float, float] | None:
    """CPU seconds this process's CPUs, and this process, have spent busy so
    far, or None where the system does not say (not Linux)."""
    if not STAT.is_file():
        return None
    mine = cpus()
    ticks = 0
    for line in STAT.read_text().splitlines():
        name, *fields = line.split()
        if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in mine:
            # user nice system idle iowait irq softirq steal: not idle, iowait
            ticks += sum(int(v) for i, v in enumerate(fields[:8]) if i not in (3, 4))
    return ticks / os.sysconf("SC_CLK_TCK"), time.process_time()


def others_busy(since: tuple[float, float], seconds: float) -> float:
    """The cores' worth of work other processes did on this process's CPUs
    over the last ``seconds``, from a ``cpu_seconds()`` reading then."""
    now = cpu_seconds()
    assert now is not None
    machine, own = (b - a for a, b in zip(since, now, strict=True))
    return max(0.0, (machine - own) / seconds)


class Reassessment:
    """The policy's choice made again every ``every`` seconds of a long
    command, from the CPU time other processes used meanwhile.

    The CPU time of this process's own threads, which are running, is left
    out.
    """

    def __init__(self, every: float = 30.0):
        self.every = every
        self.since = time.monotonic()
        self.used = cpu_seconds()

    def __call__(self) -> str | None:
        """Sets PyTorch's threads anew once ``every`` seconds have passed;
        a line saying so when the number changes, else None."""
        now = time.monotonic()
        if self.used is None or now - self.since < self.every:
            return None
        others = others_busy(self.used, now - self.since)
        self.since, self.used = now, cpu_seconds()
        before, chosen = torch.get_num_threads(), threads_beside(others)
        if chosen == before:
            return None
        torch.set_num_threads(chosen)
        return (
            f"threads: {before} -> {chosen} (other processes are using "
            f"{others:.1f} of {cores()} cores)"
        )


def at_most_cores(count: int, what: str = "threads") -> int:
    """``count`` threads, or workers, capped at the cores this process may run
    on, with a notice: more only wait on each other (thousands of runnable
    threads slow the whole machine, and far more end the process)."""
    available = cores()
    if count <= available:
        return count
    print(
        f"notice: {what} {count} is more than the {available} cores this process "
        f"may run on; using {available}",
        file=sys.stderr,
    )
    return available


def use_threads(threads: int | None) -> int:
    """Sets PyTorch's intra-op threads to ``threads`` (at most the cores), or
    (None) to the policy's choice; returns the number set."""
    chosen = free_threads() if threads is None else at_most_cores(threads)
    torch.set_num_threads(chosen)
    return chosen


def local_processes() -> int:
    """How many training processes ``torchrun`` started on this machine
    (``LOCAL_WORLD_SIZE``; 1 outside it)."""
    text = os.environ.get("LOCAL_WORLD_SIZE", "1")
    if not text.isdigit() or int(text) < 1:
        raise RosettaError(
            f"LOCAL_WORLD_SIZE={text!r}: the environment variable must be a "
            "whole number of processes (torchrun sets it)"
        )
    return int(text)
