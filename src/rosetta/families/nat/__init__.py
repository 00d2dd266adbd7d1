"""The non-autoregressive Transformer (``model.arch: nat``): fertilities,
then every target token at once."""

from __future__ import annotations

from rosetta.families.family import Family
from rosetta.families.nat.config import NATConfig
from rosetta.families.nat.model import NonAutoregressiveTransformer, build_nat
from rosetta.families.nat.task import nat_training
from rosetta.families.nat.translator import NATTranslator
from rosetta.models.trained import Trained
from rosetta.train.prepare import prepare_data


def build(
    config: NATConfig, src_vocab: int, tgt_vocab: int
) -> NonAutoregressiveTransformer:
    return build_nat(
        src_vocab,
        tgt_vocab,
        **config.layer_sizes(),
        max_fertility=config.max_fertility,
        copy=config.decoder_input,
    )


def translator(trained: Trained, precision: str, packed: bool = True) -> NATTranslator:
    """One pass per sentence; ``packed`` changes nothing."""
    return NATTranslator(trained, precision)


FAMILY = Family(
    arch="nat",
    summary="the non-autoregressive Transformer with fertilities",
    config=NATConfig,
    build=build,
    prepare=prepare_data,
    training=nat_training,
    inference=translator,
)
