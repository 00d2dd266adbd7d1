"""The non-autoregressive Transformer (``model.arch: nat``): fertilities,
then every target token at once."""

from __future__ import annotations

from rosetta.families.family import Family
from rosetta.families.nat.config import NATConfig
from rosetta.families.nat.fertilities import ALIGNMENTS_FILE, FERTILITY_DIR
from rosetta.families.nat.model import build_nat
from rosetta.families.nat.task import nat_training, prepare_nat
from rosetta.families.nat.translator import NATTranslator
from rosetta.families.transformer.config import TINY_ATTENTION
from rosetta.models.interface import output_projection_moved
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
    run_files=(ALIGNMENTS_FILE, f"{FERTILITY_DIR}/"),
    upgrade_weights=output_projection_moved,
    example={"arch": "nat", **TINY_ATTENTION, "max_fertility": 3},
)
