"""A model family written outside Rosetta's source, from docs/families.md
alone: a bag-of-words encoder and a decoder that reads one token and attends
over the source (``model.arch: toy``). ``tests/families/test_new_family.py`` puts it
in the list of families and runs the commands on it."""

from __future__ import annotations

from rosetta.families.family import Family
from rosetta.inference.translator import Translator
from rosetta.interfaces.trained import Trained
from rosetta.train.prepare import prepare_data
from rosetta.train.translation_task import translation_training
from tests.toy_family.config import ToyConfig
from tests.toy_family.model import build


def translator(
    trained: Trained, precision: str, packed: bool = True, compiled: object = "auto"
) -> Translator:
    return Translator(trained, precision)  # no fast path, no compiled step


FAMILY = Family(
    summary="a toy encoder-decoder written outside Rosetta",
    config=ToyConfig,
    build=build,
    prepare=prepare_data,
    training=translation_training,
    inference=translator,
    example={"arch": "toy", "d_model": 32, "share_embeddings": False},
)
