"""How many CPU threads a command computes with: one policy for every command.

PyTorch's default is one intra-op thread per core. On an idle machine that is
the fastest choice; on a machine busy with other work it is the slowest. The
threads of one operation meet at a barrier after every small kernel, and while
the operating system has one of them waiting behind somebody else's process,
the others spin or sleep until it comes back. Decoding and training on a CPU
run thousands of small kernels, so a 2-core laptop with two other busy
processes can run a translation 5-7x slower on two threads than on one.

So the default (``threads`` unset, or ``--threads auto``) counts the cores
that other work leaves free when the command starts, from the number of
processes the kernel has ready to run, and uses that many threads, at least
one and at most PyTorch's own default. Training, which can last hours while
the machine's other work comes and goes, counts again now and then
(``Reassessment``). A number given by the user is used as given.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

import torch

LOADAVG = Path("/proc/loadavg")
STAT = Path("/proc/stat")

# PyTorch's own choice, read before any command changes it: one per core.
TORCH_DEFAULT = torch.get_num_threads()


def others_running(samples: int = 3, interval: float = 0.01) -> float | None:
    """How many other threads the machine has ready to run now (the median
    of ``samples`` readings), or None where the system does not say.

    ``/proc/loadavg``'s fourth field, ``running/total``, counts what is
    runnable at this instant, this process included, unlike the load
    averages, which take a minute to follow a change.
    """
    if not LOADAVG.is_file():
        return None
    readings = []
    for sample in range(samples):
        if sample:
            time.sleep(interval)
        running = LOADAVG.read_text().split()[3].split("/")[0]
        readings.append(int(running) - 1)  # less this thread
    return max(0.0, statistics.median(readings))


def cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def free_threads(ceiling: int | None = None) -> int:
    """The policy's choice: the cores other work leaves free now, shared
    among the training processes of this machine, between 1 and ``ceiling``.

    Where the system does not report what is running (not Linux), the one
    minute load average stands in.
    """
    busy = others_running()
    if busy is None:
        busy = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    return threads_beside(busy, ceiling)


def threads_beside(busy: float, ceiling: int | None = None) -> int:
    """The threads to use beside ``busy`` cores' worth of other work, at
    most ``ceiling`` (default: PyTorch's own default)."""
    ceiling = TORCH_DEFAULT if ceiling is None else ceiling
    # torchrun's processes on this machine share the cores
    siblings = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    free = int(cores() - busy + 0.5)
    return max(1, min(free, ceiling // max(1, siblings)))


def cpu_seconds() -> tuple[float, float] | None:
    """CPU seconds the whole machine and this process have used so far, or
    None where the system does not say (not Linux)."""
    if not STAT.is_file():
        return None
    fields = STAT.read_text().split("\n", 1)[0].split()[1:]
    # user nice system idle iowait irq softirq steal: all but idle and iowait
    busy = sum(int(value) for i, value in enumerate(fields[:8]) if i not in (3, 4))
    return busy / os.sysconf("SC_CLK_TCK"), time.process_time()


class Reassessment:
    """The policy's choice made again every ``every`` seconds of a long
    command, from the CPU time other processes used meanwhile.

    Counting runnable threads would count this process's own threads, which
    are running; CPU time used by everything but this process does not.
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
        used = cpu_seconds()
        assert used is not None
        machine, own = (b - a for a, b in zip(self.used, used, strict=True))
        others = max(0.0, (machine - own) / (now - self.since))
        self.since, self.used = now, used
        before, chosen = torch.get_num_threads(), threads_beside(others)
        if chosen == before:
            return None
        torch.set_num_threads(chosen)
        return (
            f"threads: {before} -> {chosen} (other processes are using "
            f"{others:.1f} of {cores()} cores)"
        )


def use_threads(threads: int | None) -> int:
    """Sets PyTorch's intra-op threads to ``threads``, or (None) to the
    policy's choice; returns the number set."""
    chosen = free_threads() if threads is None else threads
    torch.set_num_threads(chosen)
    return chosen
