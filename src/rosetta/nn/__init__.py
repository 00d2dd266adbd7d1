"""Building blocks: positional encoding, attention (scaled dot-product,
multi-head, relative multi-head, additive), feed-forward, dropout, residual
norm, the sizes a Transformer layer is made from, recurrent cells and
layers."""

from rosetta.nn.additive_attention import AdditiveAttention
from rosetta.nn.attention import MultiHeadAttention, scaled_dot_product_attention
from rosetta.nn.cells import GRUCell, LSTMCell, RNNCell
from rosetta.nn.dropout import Dropout
from rosetta.nn.feedforward import PositionwiseFeedForward
from rosetta.nn.layer_sizes import LayerSizes
from rosetta.nn.positional import positional_encoding
from rosetta.nn.recurrent import RNN
from rosetta.nn.relative_attention import RelativeMultiHeadAttention
from rosetta.nn.residual import ResidualNorm

__all__ = [
    "RNN",
    "AdditiveAttention",
    "Dropout",
    "GRUCell",
    "LSTMCell",
    "LayerSizes",
    "MultiHeadAttention",
    "PositionwiseFeedForward",
    "RNNCell",
    "RelativeMultiHeadAttention",
    "ResidualNorm",
    "positional_encoding",
    "scaled_dot_product_attention",
]
