"""Sinusoidal positional encoding: each position gets a fixed vector of sines
and cosines of geometrically spaced frequencies, added to the embeddings."""

from __future__ import annotations

import torch


def positional_encoding(max_len: int, d_model: int) -> torch.Tensor:
    """The (max_len, d_model) sinusoid table added to the embeddings.

    ``PE[pos, 2i] = sin(pos / 10000^(2i/d))`` and
    ``PE[pos, 2i+1] = cos(pos / 10000^(2i/d))``.
    For d=4, position 1 is [0.841, 0.540, 0.010, 1.000].

    Shape:
        returns (max_len, d_model), float32.
    """
    return sinusoids(torch.arange(max_len), d_model)


def sinusoids(positions: torch.Tensor, d_model: int) -> torch.Tensor:
    """The sinusoid vectors of any ``positions`` (n,), negative ones included
    (relative attention encodes distances with them): (n, d_model), float32."""
    position = positions.to(torch.float64).unsqueeze(1)  # (n, 1)
    angle = position / scales(d_model)  # (n, ceil(d/2))
    table = torch.zeros(len(positions), d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return table.float()


def scales(d_model: int) -> torch.Tensor:
    """``10000^(2i/d)`` for ``i = 0 .. ⌈d/2⌉−1``, the position's divisor in
    sinusoid pair ``i`` (its frequency is one over it): (⌈d/2⌉,), float64."""
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    return torch.pow(10000.0, two_i / d_model)
