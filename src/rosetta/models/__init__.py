"""The interface every encoder-decoder implements (``rosetta.models.interface``);
the models themselves live in their families (``rosetta.families``)."""

from rosetta.models.interface import Decoder, DecoderState, Encoder, EncoderDecoder

__all__ = ["Decoder", "DecoderState", "Encoder", "EncoderDecoder"]
