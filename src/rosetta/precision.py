"""Numeric precision: float32 everywhere, or bfloat16 matrix products.

``bf16`` runs the forward pass under ``torch.autocast``: matrix products and
the layers built on them compute in bfloat16 (on CPUs with AMX or AVX-512
BF16, and on recent GPUs, several times the float32 rate), while the weights,
their gradients, the optimizer, the softmax of the output and the loss stay in
float32. Results differ from float32 in the last digits, so it is a choice,
not a default.
"""

from __future__ import annotations

import contextlib
from typing import Literal

import torch

Precision = Literal["fp32", "bf16"]


def autocast(
    device: torch.device, precision: Precision
) -> contextlib.AbstractContextManager:
    """The context that applies ``precision`` to the code run inside it."""
    if precision == "fp32":
        return contextlib.nullcontext()
    if precision != "bf16":
        raise ValueError(f"precision must be fp32 or bf16, got {precision!r}")
    return torch.autocast(device.type, dtype=torch.bfloat16)
