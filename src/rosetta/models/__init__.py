"""Models behind one Encoder/Decoder interface, ``build_model``, and the
segment-recurrent language model."""

from rosetta.models.build import build_model
from rosetta.models.interface import Decoder, DecoderState, Encoder, EncoderDecoder
from rosetta.models.language_model import MemoryTransformerLM
from rosetta.models.packed import pack_for_inference
from rosetta.models.rnn import (
    EncoderOutput,
    RecurrentDecoder,
    RecurrentDecoderState,
    RecurrentEncoder,
    build_rnn_seq2seq,
)
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
    "EncoderOutput",
    "MemoryTransformerLM",
    "RecurrentDecoder",
    "RecurrentDecoderState",
    "RecurrentEncoder",
    "TransformerDecoderLayer",
    "TransformerEncoderLayer",
    "TransformerState",
    "build_model",
    "build_rnn_seq2seq",
    "build_transformer",
    "pack_for_inference",
]
