"""The Transformer (``model.arch: transformer``): an encoder and a decoder of
attention layers, with a choice of position schemes (``positions``).

Three layers, read in this order:

1. The model: ``config`` (its section), ``layers`` (attention and
   feed-forward sublayers), ``positions`` and ``number_positions`` (one
   scheme per ``positions`` value), ``kv_cache`` and ``state`` (what
   decoding carries from step to step), ``model`` (the encoder and decoder
   stacks), ``build`` (the model assembled from its section).
2. ``fast``: the decoding fast path, a transform of a trained model
   (``pack_for_inference``) tested equal to the layers.
3. ``ctranslate2``: the other engine, an export and its translator.
4. ``marian``: MarianMT models (OPUS-MT) imported as runs.
"""

from __future__ import annotations

from rosetta.families.family import Family
from rosetta.families.transformer.build import build
from rosetta.families.transformer.config import TINY_ATTENTION, TransformerConfig
from rosetta.families.transformer.ctranslate2 import ENGINE as CTRANSLATE2
from rosetta.families.transformer.fast.packed import pack_for_inference
from rosetta.families.transformer.marian import EXPORT as MARIAN_EXPORT
from rosetta.families.transformer.marian import IMPORTER as MARIAN
from rosetta.inference.translator import Translator
from rosetta.models.interface import output_projection_moved
from rosetta.models.trained import Trained
from rosetta.train.prepare import prepare_data
from rosetta.train.translation_task import translation_training


def translator(trained: Trained, precision: str, packed: bool = True) -> Translator:
    """Decoding on the packed fast path (``pack_for_inference``) unless
    ``packed`` is False."""
    return Translator(trained, precision, pack_for_inference if packed else None)


FAMILY = Family(
    summary="the Transformer encoder-decoder",
    config=TransformerConfig,
    build=build,
    prepare=prepare_data,
    training=translation_training,
    inference=translator,
    engines=(CTRANSLATE2, MARIAN_EXPORT),
    importers=(MARIAN,),
    upgrade_weights=output_projection_moved,
    example={"arch": "transformer", **TINY_ATTENTION},
)
