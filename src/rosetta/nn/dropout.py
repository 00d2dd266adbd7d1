"""Dropout: in training, zero each element with probability p and
scale the survivors by 1 / (1 - p); at inference, the identity.

``torch.nn.Dropout`` draws one Bernoulli variable per element, which on a CPU
costs more than the matrix products around it. This module draws the same
decision from 16 random bits per element, four elements per 64-bit word of
torch's generator, and keeps an element when its bits are at least a
threshold; p is rounded to a multiple of 2^-16, so the drop rate is exact to
within 1.5e-5. Reseeding torch reproduces the masks. On other devices, and
inside a compiled graph (whose compiler fuses its own random draws into the
kernels around them), it calls ``torch.nn.functional.dropout``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

LEVELS = 1 << 16  # 16-bit draws


def dropout_mask(
    shape: torch.Size,
    p: float,
    dtype: torch.dtype,
    device: torch.device | None = None,
) -> torch.Tensor:
    """A tensor of ``0`` (probability p) and ``1 / (1 - p)`` (otherwise), on
    the CPU unless ``device`` says otherwise."""
    dropped = round(p * LEVELS)  # how many of the 2^16 bit patterns drop
    count = shape.numel()
    words = torch.empty((count + 3) // 4, dtype=torch.int64, device=device)
    words.random_(-(1 << 63), (1 << 63) - 1)  # all 64 bits random
    bits = words.view(torch.int16)[:count].view(shape)  # uniform over int16
    keep = bits >= dropped - LEVELS // 2
    return keep.to(dtype).mul_(LEVELS / (LEVELS - dropped))


def check_probability(p: float) -> None:
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout probability must be in [0, 1), got {p}")


def dropout(x: torch.Tensor, p: float, training: bool = True) -> torch.Tensor:
    if not training or p == 0.0:
        return x
    check_probability(p)
    if x.device.type != "cpu" or torch.compiler.is_compiling():
        return F.dropout(x, p, training=True)
    return x * dropout_mask(x.shape, p, x.dtype)


class Dropout(nn.Module):
    """Drop-in for ``torch.nn.Dropout(p)`` (same ``p`` attribute, no state)."""

    def __init__(self, p: float = 0.5):
        super().__init__()
        check_probability(p)
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"
