"""The Transformer (``model.arch: transformer``): an encoder and a decoder of
attention layers, with a choice of position schemes (``positions``)."""

from __future__ import annotations

from rosetta.data.tokenizer import TokenizerPair
from rosetta.families.family import Family
from rosetta.families.transformer.build import build_transformer
from rosetta.families.transformer.config import TransformerConfig
from rosetta.families.transformer.number_positions import digit_mask
from rosetta.families.transformer.packed import pack_for_inference
from rosetta.inference.translator import Translator
from rosetta.models.interface import EncoderDecoder
from rosetta.models.trained import Trained
from rosetta.train.prepare import prepare_data
from rosetta.train.translation_task import translation_training


def build(
    config: TransformerConfig,
    src_vocab: int,
    tgt_vocab: int,
    tokenizers: TokenizerPair | None = None,
) -> EncoderDecoder:
    """``tokenizers`` say which tokens are digits (``abacus``, ``coupled``)."""
    digits = None
    if tokenizers is not None:
        digits = tuple(
            digit_mask(side.id_pieces(range(len(side))))
            for side in (tokenizers.src, tokenizers.tgt)
        )
    return build_transformer(
        src_vocab,
        tgt_vocab,
        **config.layer_sizes(),
        positions=config.positions,
        digits=digits,  # type: ignore[arg-type]
    )


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
)
