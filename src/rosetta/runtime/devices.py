"""Which device to run on: one rule for training, translation and scoring."""

from __future__ import annotations

import torch

from rosetta.errors import RosettaError


def parse_device(name: str | torch.device | None = "auto") -> torch.device:
    """The device ``name`` means: ``auto`` (or None) a CUDA GPU when there is
    one, else the CPU; a name ``torch.device`` does not know is a clear error."""
    if name is None or name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        return torch.device(name)
    except (RuntimeError, ValueError):
        raise RosettaError(
            f"device {str(name)!r}: use auto, cpu, cuda or cuda:N"
        ) from None


def pick_device(name: str | torch.device | None = "auto") -> torch.device:
    """``parse_device``, and ``cuda`` with no GPU a clear error."""
    device = parse_device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise RosettaError(
            f"device {str(name)!r} asked for, but no CUDA GPU is available"
        )
    return device
