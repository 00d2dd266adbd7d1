"""The sizes a Transformer layer is made from, named once, and the parts
they make: every family's layers take one ``LayerSizes``."""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from rosetta.nn.attention import MultiHeadAttention
from rosetta.nn.feedforward import Activation, PositionwiseFeedForward
from rosetta.nn.relative_attention import RelativeMultiHeadAttention
from rosetta.nn.residual import ResidualNorm


@dataclass(frozen=True)
class LayerSizes:
    """Width ``d_model``, ``heads`` per attention, the feed-forward width
    ``d_ff``, the dropout after each sub-layer and inside attention, and
    where the LayerNorm sits (``norm_first``: before each sub-layer, and
    once more after the last layer), and the feed-forward's ``activation``."""

    d_model: int
    heads: int
    d_ff: int
    dropout: float = 0.1
    attention_dropout: float = 0.0
    norm_first: bool = False
    activation: Activation = "relu"

    def attention(self) -> MultiHeadAttention:
        return MultiHeadAttention(self.d_model, self.heads, self.attention_dropout)

    def self_attention(
        self, relative: bool = False
    ) -> MultiHeadAttention | RelativeMultiHeadAttention:
        """Over absolute positions (added to the embeddings), or scored by
        relative distance."""
        if relative:
            return RelativeMultiHeadAttention(
                self.d_model, self.heads, self.attention_dropout
            )
        return self.attention()

    def feed_forward(self) -> PositionwiseFeedForward:
        return PositionwiseFeedForward(
            self.d_model, self.d_ff, self.dropout, self.activation
        )

    def residual(self) -> ResidualNorm:
        return ResidualNorm(self.d_model, self.dropout, self.norm_first)

    def final_norm(self) -> nn.Module:
        """What follows the last layer: a LayerNorm where each sub-layer's
        input is normalised (its output is not), else nothing."""
        return nn.LayerNorm(self.d_model) if self.norm_first else nn.Identity()
