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
one and at most PyTorch's own default. A number given by the user is used as
given.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

import torch

LOADAVG = Path("/proc/loadavg")

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


def free_threads(ceiling: int = TORCH_DEFAULT) -> int:
    """The policy's choice: the cores other work leaves free now, shared
    among the training processes of this machine, between 1 and ``ceiling``.

    Where the system does not report what is running (not Linux), the one
    minute load average stands in.
    """
    busy = others_running()
    if busy is None:
        busy = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    # torchrun's processes on this machine share the cores
    siblings = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    free = int(cores() - busy + 0.5)
    return max(1, min(free, ceiling // max(1, siblings)))


def use_threads(threads: int | None) -> int:
    """Sets PyTorch's intra-op threads to ``threads``, or (None) to the
    policy's choice; returns the number set."""
    chosen = free_threads() if threads is None else threads
    torch.set_num_threads(chosen)
    return chosen
