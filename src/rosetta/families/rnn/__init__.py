"""Recurrent encoder-decoders (``model.arch: rnn``): GRU, LSTM or tanh RNN
layers, with or without additive attention."""

from __future__ import annotations

from rosetta.families.family import Family
from rosetta.families.rnn.config import RNNConfig
from rosetta.families.rnn.model import build_rnn_seq2seq
from rosetta.inference.translator import Translator
from rosetta.models.interface import EncoderDecoder, output_projection_moved
from rosetta.models.trained import Trained
from rosetta.train.prepare import prepare_data
from rosetta.train.translation_task import translation_training

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
    return build_rnn_seq2seq(
        src_vocab,
        tgt_vocab,
        **config.model_dump(include=SAME_NAMES),
        embedding_size=config.d_model,
        attention=config.attention == "bahdanau",
        impl=config.rnn_impl,
    )


def translator(trained: Trained, precision: str, packed: bool = True) -> Translator:
    """A recurrent model has no packed fast path: ``packed`` changes nothing."""
    return Translator(trained, precision)


FAMILY = Family(
    summary="recurrent encoder-decoders (GRU, LSTM, RNN; attention optional)",
    config=RNNConfig,
    build=build,
    prepare=prepare_data,
    training=translation_training,
    inference=translator,
    upgrade_weights=output_projection_moved,
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
