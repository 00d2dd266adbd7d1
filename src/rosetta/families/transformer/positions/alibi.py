"""``alibi``: no positions added; every attention subtracts a learned slope
times the distance, the cross-attention from both ends of the source
(``penalties``, ``rosetta.nn.linear_bias``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from rosetta.families.transformer.positions.base import (
    DecoderPositions,
    EncoderPositions,
    PositionScheme,
)
from rosetta.families.transformer.positions.penalties import (
    penalised_decoder,
    penalised_encoder,
)

if TYPE_CHECKING:
    from rosetta.families.transformer.config import TransformerConfig


class Alibi(PositionScheme):
    encoder_adds = decoder_adds = False
    ctranslate2_refusal = "CTranslate2's encoder-decoder has no distance penalties"

    def encoder_positions(
        self, section: TransformerConfig, digits: torch.Tensor | None
    ) -> EncoderPositions:
        return penalised_encoder(section.encoder_layers, section.heads)

    def decoder_positions(
        self, section: TransformerConfig, digits: torch.Tensor | None
    ) -> DecoderPositions:
        return penalised_decoder(section.decoder_layers, section.heads)


SCHEME = Alibi()
