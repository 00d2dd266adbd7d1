"""The non-autoregressive Transformer (``model.arch: nat``): fertilities,
then every target token at once."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rosetta.families.family import Family, Later
from rosetta.families.nat.config import ALIGNMENTS_FILE, FERTILITY_DIR, NATConfig
from rosetta.families.transformer.config import TINY_ATTENTION

if TYPE_CHECKING:
    from rosetta.families.nat.translator import NATTranslator
    from rosetta.interfaces.trained import Trained


def translator(
    trained: Trained, precision: str, packed: bool = True, compiled: object = "auto"
) -> NATTranslator:
    """One pass per sentence; ``packed`` and ``compiled`` change nothing."""
    from rosetta.families.nat.translator import NATTranslator

    return NATTranslator(trained, precision)


FAMILY = Family(
    summary="the non-autoregressive Transformer with fertilities",
    config=NATConfig,
    build=Later("rosetta.families.nat.model", "build_nat"),
    prepare=Later("rosetta.families.nat.training", "prepare_nat"),
    training=Later("rosetta.families.nat.training", "nat_training"),
    inference=translator,
    run_files=(ALIGNMENTS_FILE, f"{FERTILITY_DIR}/"),
    upgrade_weights=Later(
        "rosetta.interfaces.encoder_decoder", "output_projection_moved"
    ),
    example={"arch": "nat", **TINY_ATTENTION, "max_fertility": 3},
)
