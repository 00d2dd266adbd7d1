"""Sinusoidal positional encoding: each position gets a fixed vector of sines
and cosines of geometrically spaced frequencies, added to the embeddings."""

from __future__ import annotations

from typing import Literal

import torch

SinusoidLayout = Literal["interleaved", "halves"]


def positional_encoding(
    max_len: int, d_model: int, layout: SinusoidLayout = "interleaved"
) -> torch.Tensor:
    """The (max_len, d_model) sinusoid table added to the embeddings.

    ``PE[pos, 2i] = sin(pos / 10000^(2i/d))`` and
    ``PE[pos, 2i+1] = cos(pos / 10000^(2i/d))``.
    For d=4, position 1 is [0.841, 0.540, 0.010, 1.000].

    ``layout="halves"`` puts the same numbers in another order, every sine
    first and every cosine after them: ``PE[pos, i] = sin(...)`` and
    ``PE[pos, ⌈d/2⌉ + i] = cos(...)`` (the MarianMT models' table); for
    d=4, position 1 is [0.841, 0.010, 0.540, 1.000].

    Shape:
        returns (max_len, d_model), float32.
    """
    return sinusoids(torch.arange(max_len), d_model, layout)


def sinusoids(
    positions: torch.Tensor, d_model: int, layout: SinusoidLayout = "interleaved"
) -> torch.Tensor:
    """The sinusoid vectors of any ``positions`` (n,), negative ones included
    (relative attention encodes distances with them): (n, d_model), float32."""
    if layout not in ("interleaved", "halves"):
        raise ValueError(f"sinusoid layout {layout!r}: use interleaved or halves")
    position = positions.to(torch.float64).unsqueeze(1)  # (n, 1)
    angle = position / scales(d_model, positions.device)  # (n, ceil(d/2))
    sines, cosines = torch.sin(angle), torch.cos(angle[:, : d_model // 2])
    if layout == "halves":
        return torch.cat([sines, cosines], dim=1).float()
    table = torch.zeros(
        len(positions), d_model, dtype=torch.float64, device=positions.device
    )
    table[:, 0::2] = sines
    table[:, 1::2] = cosines
    return table.float()


def scales(d_model: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """``10000^(2i/d)`` for ``i = 0 .. ⌈d/2⌉−1``, the position's divisor in
    sinusoid pair ``i`` (its frequency is one over it): (⌈d/2⌉,), float64."""
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64, device=device)
    return torch.pow(10000.0, two_i / d_model)
