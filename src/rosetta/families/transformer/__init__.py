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

from typing import TYPE_CHECKING

from rosetta.families.family import Family, Later
from rosetta.families.transformer.config import TINY_ATTENTION, TransformerConfig
from rosetta.families.transformer.ctranslate2 import EXPORT as CTRANSLATE2
from rosetta.families.transformer.hf import EXPORT as HF_EXPORT
from rosetta.families.transformer.hf import IMPORTER as HF_IMPORT

if TYPE_CHECKING:
    from rosetta.inference.translator import Translator
    from rosetta.interfaces.trained import Trained


def translator(trained: Trained, precision: str, packed: bool = True) -> Translator:
    """Decoding on the packed fast path (``pack_for_inference``) unless
    ``packed`` is False."""
    from rosetta.families.transformer.fast.packed import pack_for_inference
    from rosetta.inference.translator import Translator

    return Translator(trained, precision, pack_for_inference if packed else None)


FAMILY = Family(
    summary="the Transformer encoder-decoder",
    config=TransformerConfig,
    build=Later("rosetta.families.transformer.build", "build"),
    prepare=Later("rosetta.train.prepare", "prepare_data"),
    training=Later("rosetta.train.translation_task", "translation_training"),
    inference=translator,
    exports=(CTRANSLATE2, HF_EXPORT),
    importers=(HF_IMPORT,),
    upgrade_weights=Later(
        "rosetta.interfaces.encoder_decoder", "output_projection_moved"
    ),
    example={"arch": "transformer", **TINY_ATTENTION},
)
