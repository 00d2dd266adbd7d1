"""The non-autoregressive Transformer (``model.arch: nat``): fertilities,
then every target token at once."""

from __future__ import annotations

from rosetta.families.family import Family
from rosetta.families.nat.config import NATConfig
from rosetta.families.nat.model import build_nat
from rosetta.families.nat.task import nat_training, prepare_nat
from rosetta.families.nat.translator import NATTranslator
from rosetta.models.trained import Trained


def translator(trained: Trained, precision: str, packed: bool = True) -> NATTranslator:
    """One pass per sentence; ``packed`` changes nothing."""
    return NATTranslator(trained, precision)


FAMILY = Family(
    summary="the non-autoregressive Transformer with fertilities",
    config=NATConfig,
    build=build_nat,
    prepare=prepare_nat,
    training=nat_training,
    inference=translator,
)
