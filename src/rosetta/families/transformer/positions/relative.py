"""``relative``: no positions added; self-attention scores the distances
between tokens (Transformer-XL's, ``rosetta.nn.relative_attention``)."""

from __future__ import annotations

from rosetta.families.transformer.positions.base import PositionScheme


class Relative(PositionScheme):
    encoder_adds = decoder_adds = False
    relative = True
    ctranslate2_refusal = "CTranslate2 has no Transformer-XL attention"


SCHEME = Relative()
