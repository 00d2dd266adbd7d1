"""Recurrent encoder-decoders (``model.arch: rnn``): GRU, LSTM or tanh RNN
layers, with or without additive attention."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rosetta.families.family import Family, Later
from rosetta.families.rnn.config import RNNConfig

if TYPE_CHECKING:
    from rosetta.inference.translator import Translator
    from rosetta.interfaces.encoder_decoder import EncoderDecoder
    from rosetta.interfaces.trained import Trained

# the config keys build_rnn_seq2seq takes under their own names
SAME_NAMES = {
    "cell",
    "hidden_size",
    "encoder_layers",
    "decoder_layers",
    "bidirectional",
    "dropout",
    "share_embeddings",
    "tie_output",
    "gru_variant",
}


def build(
    config: RNNConfig, src_vocab: int, tgt_vocab: int, tokenizers: object = None
) -> EncoderDecoder:
    """Sizes only; ``tokenizers`` change nothing."""
    from rosetta.families.rnn.model import build_rnn_seq2seq

    return build_rnn_seq2seq(
        src_vocab,
        tgt_vocab,
        **config.model_dump(include=SAME_NAMES),
        embedding_size=config.d_model,
        attention=config.attention == "bahdanau",
        impl=config.rnn_impl,
    )


def translator(
    trained: Trained, precision: str, packed: bool = True, compiled: object = "auto"
) -> Translator:
    """A recurrent model has no packed fast path and no compiled step (its
    cells are few large operations already): ``packed`` and ``compiled``
    change nothing."""
    from rosetta.inference.translator import Translator

    return Translator(trained, precision)


FAMILY = Family(
    summary="recurrent encoder-decoders (GRU, LSTM, RNN; attention optional)",
    config=RNNConfig,
    build=build,
    prepare=Later("rosetta.train.prepare", "prepare_data"),
    training=Later("rosetta.train.translation_task", "translation_training"),
    inference=translator,
    upgrade_weights=Later(
        "rosetta.interfaces.encoder_decoder", "output_projection_moved"
    ),
    example={
        "arch": "rnn",
        "cell": "gru",
        "encoder_layers": 1,
        "decoder_layers": 1,
        "d_model": 32,
        "hidden_size": 32,
        "bidirectional": True,
        "attention": "bahdanau",
        "share_embeddings": False,
    },
)
