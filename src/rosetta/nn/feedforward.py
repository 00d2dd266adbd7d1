"""Position-wise feed-forward network."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from rosetta.nn.dropout import Dropout

Activation = Literal["relu", "gelu", "swish"]

# swish is x * sigmoid(x) (SiLU), the activation of the OPUS-MT models;
# gelu the exact one (not the tanh approximation)
ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "relu": F.relu,
    "gelu": F.gelu,
    "swish": F.silu,
}


class PositionwiseFeedForward(nn.Module):
    """``FFN(x) = f(x W_1 + b_1) W_2 + b_2``, applied at every position, where
    ``f`` is ``activation``: ``max(0, x)`` (relu, the Transformer paper's),
    ``x Φ(x)`` (gelu) or ``x σ(x)`` (swish).

    Shape:
        (n, L, d_model) -> (n, L, d_model); the inner width d_ff is 4 d by default
        in the Transformer paper.
    """

    def __init__(
        self,
        d_model: int,
        d_ff: int,
        dropout: float = 0.0,
        activation: Activation = "relu",
    ):
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(
                f"activation {activation!r}: use one of {', '.join(ACTIVATIONS)}"
            )
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = Dropout(dropout)
        self.activation = activation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        inner = ACTIVATIONS[self.activation](self.linear1(x))
        return self.linear2(self.dropout(inner))
