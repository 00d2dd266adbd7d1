"""Models behind one Encoder/Decoder interface, and ``build_model``."""

from rosetta.models.build import build_model
from rosetta.models.interface import Decoder, DecoderState, Encoder, EncoderDecoder
from rosetta.models.transformer import (
    TransformerDecoderLayer,
    TransformerEncoderLayer,
    TransformerState,
    build_transformer,
)

__all__ = [
    "Decoder",
    "DecoderState",
    "Encoder",
    "EncoderDecoder",
    "TransformerDecoderLayer",
    "TransformerEncoderLayer",
    "TransformerState",
    "build_model",
    "build_transformer",
]
