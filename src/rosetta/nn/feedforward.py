"""Position-wise feed-forward network."""

from __future__ import annotations

import torch
from torch import nn

from rosetta.nn.dropout import Dropout


class PositionwiseFeedForward(nn.Module):
    """``FFN(x) = max(0, x W_1 + b_1) W_2 + b_2``, applied at every position.

    Shape:
        (n, L, d_model) -> (n, L, d_model); the inner width d_ff is 4 d by default
        in the Transformer paper.
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear2(self.dropout(torch.relu(self.linear1(x))))
