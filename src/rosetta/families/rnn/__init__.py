"""Recurrent encoder-decoders (``model.arch: rnn``): GRU, LSTM or tanh RNN
layers, with or without additive attention."""

from __future__ import annotations

from rosetta.families.family import Family
from rosetta.families.rnn.config import RNNConfig
from rosetta.families.rnn.model import build_rnn_seq2seq
from rosetta.inference.translator import Translator
from rosetta.models.interface import EncoderDecoder
from rosetta.models.trained import Trained
from rosetta.train.prepare import prepare_data
from rosetta.train.translation_task import translation_training


def build(config: RNNConfig, src_vocab: int, tgt_vocab: int) -> EncoderDecoder:
    return build_rnn_seq2seq(
        src_vocab,
        tgt_vocab,
        cell=config.cell,
        embedding_size=config.d_model,
        hidden_size=config.hidden_size,
        encoder_layers=config.encoder_layers,
        decoder_layers=config.decoder_layers,
        bidirectional=config.bidirectional,
        attention=config.attention == "bahdanau",
        dropout=config.dropout,
        share_embeddings=config.share_embeddings,
        tie_output=config.tie_output,
        impl=config.rnn_impl,
        gru_variant=config.gru_variant,
    )


def translator(trained: Trained, precision: str, packed: bool = True) -> Translator:
    """A recurrent model has no packed fast path: ``packed`` changes nothing."""
    return Translator(trained, precision)


FAMILY = Family(
    arch="rnn",
    summary="recurrent encoder-decoders (GRU, LSTM, RNN; attention optional)",
    config=RNNConfig,
    build=build,
    prepare=prepare_data,
    training=translation_training,
    inference=translator,
)
