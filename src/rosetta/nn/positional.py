"""Sinusoidal positional encoding: each position gets a fixed vector of sines
and cosines of geometrically spaced frequencies, added to the embeddings."""

from __future__ import annotations

import math
from typing import Literal, get_args

import torch

SinusoidLayout = Literal["interleaved", "halves", "fairseq"]
LAYOUTS = get_args(SinusoidLayout)


def positional_encoding(
    max_len: int, d_model: int, layout: SinusoidLayout = "interleaved", start: int = 0
) -> torch.Tensor:
    """The (max_len, d_model) sinusoid table added to the embeddings.

    ``PE[pos, 2i] = sin(pos / 10000^(2i/d))`` and
    ``PE[pos, 2i+1] = cos(pos / 10000^(2i/d))``.
    For d=4, position 1 is [0.841, 0.540, 0.010, 1.000].

    ``layout="halves"`` puts the same numbers in another order, every sine
    first and every cosine after them: ``PE[pos, i] = sin(...)`` and
    ``PE[pos, ⌈d/2⌉ + i] = cos(...)`` (the MarianMT models' table); for
    d=4, position 1 is [0.841, 0.010, 0.540, 1.000].

    ``layout="fairseq"`` is the table of fairseq's models (M2M100, NLLB):
    every sine, then every cosine, at ``h = ⌊d/2⌋`` frequencies spaced from
    1 to 1/10000 over ``h − 1`` steps, ``ω_i = 10000^(−i/(h−1))``:
    ``PE[pos, i] = sin(pos·ω_i)``, ``PE[pos, h + i] = cos(pos·ω_i)`` (a last
    column of zeros when d is odd). ``start``: the number of the first row's
    position (fairseq counts a sequence's positions from the padding id + 1).

    Shape:
        returns (max_len, d_model), float32.
    """
    return sinusoids(torch.arange(start, start + max_len), d_model, layout)


def sinusoids(
    positions: torch.Tensor, d_model: int, layout: SinusoidLayout = "interleaved"
) -> torch.Tensor:
    """The sinusoid vectors of any ``positions`` (n,), negative ones included
    (relative attention encodes distances with them): (n, d_model), float32."""
    if layout not in LAYOUTS:
        raise ValueError(f"sinusoid layout {layout!r}: use one of {', '.join(LAYOUTS)}")
    position = positions.to(torch.float64).unsqueeze(1)  # (n, 1)
    if layout == "fairseq":
        return fairseq_sinusoids(position, d_model)
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


def fairseq_sinusoids(position: torch.Tensor, d_model: int) -> torch.Tensor:
    """``positional_encoding``'s ``fairseq`` layout for ``position`` (n, 1),
    float64: (n, d_model), float32."""
    half = d_model // 2
    if half < 2:
        raise ValueError(f"fairseq sinusoids need d_model of at least 4, not {d_model}")
    steps = torch.arange(half, dtype=torch.float64, device=position.device)
    angle = position * torch.exp(steps * -(math.log(10000.0) / (half - 1)))
    table = torch.cat([torch.sin(angle), torch.cos(angle)], dim=1)
    if d_model % 2:
        table = torch.cat([table, torch.zeros_like(table[:, :1])], dim=1)
    return table.float()
