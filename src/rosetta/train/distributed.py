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
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

from rosetta.errors import RosettaError

# How long a collective may wait for a silent peer before the processes give
# up with an error instead of hanging (validation on rank 0 must fit in it).
TIMEOUT = timedelta(minutes=30)


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
        dist.all_reduce(total)
        return float(total.item())

    def decide(self, flag: bool, device: torch.device) -> bool:
        """Rank 0's ``flag``, the same in every process."""
        if not self.distributed:
            return flag
        value = torch.tensor([int(flag)], device=device)
        dist.broadcast(value, src=0)
        return bool(value.item())

    def gather(self, value: Any) -> list[Any]:
        """Every process's ``value``, in rank order (any picklable object)."""
        if not self.distributed:
            return [value]
        values: list[Any] = [None] * self.world_size
        dist.all_gather_object(values, value)
        return values

    def barrier(self) -> None:
        if self.distributed:
            dist.barrier()


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
