"""Build a model from its config: a plain if/elif, no registry."""

from __future__ import annotations

from typing import Any

from rosetta.config import (
    LanguageModelConfig,
    ModelConfig,
    NATConfig,
    RNNConfig,
    TransformerConfig,
)
from rosetta.models.interface import EncoderDecoder
from rosetta.models.language_model import MemoryTransformerLM
from rosetta.models.nat import NonAutoregressiveTransformer, build_nat
from rosetta.models.rnn import build_rnn_seq2seq
from rosetta.models.transformer import build_transformer


def attention_sizes(config: TransformerConfig | NATConfig) -> dict[str, Any]:
    """The keyword arguments the Transformer and the NAT builders share."""
    return dict(
        encoder_layers=config.encoder_layers,
        decoder_layers=config.decoder_layers,
        d_model=config.d_model,
        heads=config.heads,
        d_ff=config.d_ff,
        dropout=config.dropout,
        attention_dropout=config.attention_dropout,
        norm_first=config.norm == "pre",
        share_embeddings=config.share_embeddings,
        tie_output=config.tie_output,
        max_positions=config.max_positions,
    )


def build_model(
    config: ModelConfig, src_vocab: int, tgt_vocab: int
) -> EncoderDecoder | NonAutoregressiveTransformer:
    if isinstance(config, LanguageModelConfig):
        raise TypeError("a language model: build it with build_language_model")
    if isinstance(config, NATConfig):
        return build_nat(
            src_vocab,
            tgt_vocab,
            **attention_sizes(config),
            max_fertility=config.max_fertility,
            copy=config.decoder_input,
        )
    if isinstance(config, TransformerConfig):
        return build_transformer(
            src_vocab, tgt_vocab, **attention_sizes(config), positions=config.positions
        )
    if isinstance(config, RNNConfig):
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
    raise TypeError(f"not a model configuration: {config!r}")


def build_language_model(
    config: LanguageModelConfig, vocab: int
) -> MemoryTransformerLM:
    return MemoryTransformerLM(
        vocab,
        layers=config.layers,
        d_model=config.d_model,
        heads=config.heads,
        d_ff=config.d_ff,
        dropout=config.dropout,
        attention_dropout=config.attention_dropout,
        norm_first=config.norm == "pre",
        memory_length=config.memory_length,
    )
