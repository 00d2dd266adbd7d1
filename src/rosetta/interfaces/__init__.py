"""What every model keeps, whichever family it is: the encoder-decoder
interface (``encoder_decoder``), the language-model interface
(``language_model``) and a trained model's record (``trained``). The models
themselves live in their families (``rosetta.families``)."""

from rosetta.interfaces.encoder_decoder import (
    Decoder,
    DecoderState,
    Encoder,
    EncoderDecoder,
)

__all__ = ["Decoder", "DecoderState", "Encoder", "EncoderDecoder"]
