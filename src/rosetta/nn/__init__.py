"""Building blocks: positional encoding, attention, feed-forward, residual norm."""

from rosetta.nn.attention import MultiHeadAttention, scaled_dot_product_attention
from rosetta.nn.feedforward import PositionwiseFeedForward
from rosetta.nn.positional import positional_encoding
from rosetta.nn.residual import ResidualNorm

__all__ = [
    "MultiHeadAttention",
    "PositionwiseFeedForward",
    "ResidualNorm",
    "positional_encoding",
    "scaled_dot_product_attention",
]
