"""Which device to run on: one rule for training, translation and scoring."""

from __future__ import annotations

import torch

from rosetta.errors import RosettaError


def pick_device(name: str | torch.device | None = "auto") -> torch.device:
    """``auto`` (or None): a CUDA GPU when there is one, else the CPU; ``cuda``
    with no GPU is a clear error; anything else is passed to ``torch.device``."""
    if name is None or name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if str(name).startswith("cuda") and not torch.cuda.is_available():
        raise RosettaError(
            f"device {str(name)!r} asked for, but no CUDA GPU is available"
        )
    try:
        return torch.device(name)
    except (RuntimeError, ValueError):
        raise RosettaError(
            f"device {str(name)!r}: use auto, cpu, cuda or cuda:N"
        ) from None
