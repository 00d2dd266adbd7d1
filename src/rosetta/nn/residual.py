"""Residual connection with layer normalization around a sub-layer."""

from __future__ import annotations

import torch
from torch import nn

from rosetta.nn.dropout import Dropout


class ResidualNorm(nn.Module):
    """Post-norm ``LayerNorm(x + Dropout(Sublayer(x)))`` (default) or pre-norm
    ``x + Dropout(Sublayer(LayerNorm(x)))``.

    Used in two halves so the sub-layer may return extra values (a cache):

        y = sublayer(res.before(x))
        x = res.after(x, y)
    """

    def __init__(self, d_model: int, dropout: float = 0.0, norm_first: bool = False):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.dropout = Dropout(dropout)
        self.norm_first = norm_first

    def before(self, x: torch.Tensor) -> torch.Tensor:
        """The sub-layer's input."""
        return self.norm(x) if self.norm_first else x

    def after(self, x: torch.Tensor, sublayer_out: torch.Tensor) -> torch.Tensor:
        """Add the residual (and normalise, in post-norm)."""
        y = x + self.dropout(sublayer_out)
        return y if self.norm_first else self.norm(y)
