"""Data-parallel training with PyTorch's own engine: the process group that
``torchrun`` sets up, and the few collective steps the trainer needs.

``torchrun --nproc_per_node N -m rosetta.cli train CONFIG`` starts N copies of
``rosetta train`` with ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK`` and the
rendezvous in the environment; ``init_process_group`` joins them (NCCL on
GPUs, Gloo on CPUs). The model is wrapped in ``DistributedDataParallel``,
which averages gradients across processes during ``backward``. Everything
else the processes must agree on goes through ``Group``: the token count of
an update, the update's loss, whether to stop, and each process's random
state for checkpoints. A single process is a ``Group`` of one, for which each
of these is the identity.

``rosetta train --nproc N`` starts torchrun through ``launch``, which says
once, in one line, why the first process that failed stopped.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

from rosetta.errors import RosettaError, Stopped, one_line

# How long a collective may wait for a silent peer before the processes give
# up with an error instead of hanging (validation on rank 0 must fit in it).
TIMEOUT = timedelta(minutes=30)
# the exit status of a process that stopped because another had ended first:
# ``launch`` reports that other one
PEERS_STOPPED = 3
PEERS_GRACE_S = 5.0


@dataclass(frozen=True)
class Group:
    """The training processes: this one's rank and how many there are."""

    rank: int = 0
    world_size: int = 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    def sum(self, value: float, device: torch.device) -> float:
        """Σ of ``value`` over every process."""
        if not self.distributed:
            return value
        total = torch.tensor([value], dtype=torch.float64, device=device)
        with self.with_peers():
            dist.all_reduce(total)
        return float(total.item())

    def sum_tensor(self, value: torch.Tensor) -> torch.Tensor:
        """Σ of the tensor ``value`` over every process, left on its device
        (nothing read on the host)."""
        if not self.distributed:
            return value
        with self.with_peers():
            dist.all_reduce(value)
        return value

    def decide(self, flag: bool, device: torch.device) -> bool:
        """Rank 0's ``flag``, the same in every process."""
        if not self.distributed:
            return flag
        value = torch.tensor([int(flag)], device=device)
        with self.with_peers():
            dist.broadcast(value, src=0)
        return bool(value.item())

    def gather(self, value: Any) -> list[Any]:
        """Every process's ``value``, in rank order (any picklable object)."""
        if not self.distributed:
            return [value]
        values: list[Any] = [None] * self.world_size
        with self.with_peers():
            dist.all_gather_object(values, value)
        return values

    def barrier(self) -> None:
        if self.distributed:
            with self.with_peers():
                dist.barrier()

    @contextmanager
    def with_peers(self) -> Iterator[None]:
        """A step taken with every process. Where another process has ended
        (rank 0 refusing the data it alone reads, say), the step fails here;
        the process that ended says why, and one other than rank 0 stops
        without a word, with status ``PEERS_STOPPED``."""
        try:
            yield
        except RuntimeError as error:  # torch.distributed's errors included
            if self.is_main:
                raise
            # time for the process that ended to be seen ending first (torchrun
            # looks every 0.1 s, then stops this one): it is the one to report
            time.sleep(PEERS_GRACE_S)
            raise Stopped(
                f"process {self.rank}: the other training processes stopped "
                f"({type(error).__name__})",
                PEERS_STOPPED,
            ) from None


SINGLE_PROCESS = Group()


def join(device_kind: str) -> Group:
    """The group of this process: joined from ``torchrun``'s environment when
    it started several, else a group of one."""
    if dist.is_available() and dist.is_initialized():
        return Group(dist.get_rank(), dist.get_world_size())
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size == 1:
        return Group()
    if not dist.is_available():
        raise RosettaError("this PyTorch build has no torch.distributed")
    backend = "nccl" if device_kind == "cuda" else "gloo"
    dist.init_process_group(backend, timeout=TIMEOUT)
    return Group(dist.get_rank(), dist.get_world_size())


def local_device(device: torch.device) -> torch.device:
    """This process's GPU (``LOCAL_RANK``) where training runs on CUDA."""
    if device.type != "cuda" or "LOCAL_RANK" not in os.environ:
        return device
    index = int(os.environ["LOCAL_RANK"])
    if index >= torch.cuda.device_count():
        raise RosettaError(
            f"process {index} on this machine has no GPU of its own "
            f"({torch.cuda.device_count()} visible): start at most one per GPU"
        )
    torch.cuda.set_device(index)
    return torch.device("cuda", index)


def leave() -> None:
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def launch(argv: list[str]) -> int:
    """``torchrun ARGV`` (how ``rosetta train --nproc`` starts its processes),
    its exit status: that of the first process that failed on its own (not
    one that stopped because another had). That process has said why, or
    written its refusal to torchrun's error file (``rosetta.cli``), said
    here once for every process; torchrun's traceback is left out."""
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import parse_args, run

    # torchrun's own report of a failure, in several lines, is the one below;
    # its warnings (a banner on threads, the signal it passed on) are noise
    logging.getLogger("torch.distributed.elastic").setLevel(logging.CRITICAL)
    logging.disable(logging.WARNING)
    try:
        run(parse_args(argv))
    except ChildFailedError as failed:
        failures = failed.failures
        own = [r for r, f in failures.items() if f.exitcode != PEERS_STOPPED]
        rank = min(own or failures, key=lambda r: failures[r].timestamp)
        failure = failures[rank]
        if failure.exitcode < 0:
            name = failure.signal_name()
            say(f"rosetta train: process {rank} was killed by {name}")
            return 128 - failure.exitcode
        message = refusal(failure.error_file)
        if failure.exitcode == 2 and message is not None:
            say(f"rosetta train: error: {one_line(message)}")
        return failure.exitcode
    except SignalException as stop:  # the processes have said where they stopped
        return 128 + int(stop.sigval)
    return 0


def refusal(error_file: str) -> str | None:
    """The refusal a process wrote to its torchrun error file, if any."""
    try:
        with open(error_file, encoding="utf-8") as file:
            message = json.load(file).get("message")
    except (OSError, ValueError, AttributeError, RecursionError):
        return None
    return message if isinstance(message, str) else None


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(launch(sys.argv[1:]))
