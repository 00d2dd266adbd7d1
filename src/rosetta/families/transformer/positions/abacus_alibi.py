"""``abacus-alibi``: ``abacus``'s sinusoids, and the encoder and the
cross-attention subtract a learned slope times the distance between two
digits' places (``rosetta.nn.linear_bias.place_distances``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from rosetta.families.transformer.positions.base import (
    DecoderPositions,
    EncoderPositions,
)
from rosetta.families.transformer.positions.numbers import DigitPlaces
from rosetta.families.transformer.positions.penalties import (
    penalised_decoder,
    penalised_encoder,
)

if TYPE_CHECKING:
    from rosetta.families.transformer.config import TransformerConfig


class AbacusAlibi(DigitPlaces):
    ctranslate2_refusal = "CTranslate2's encoder-decoder has no distance penalties"

    def encoder_positions(
        self, section: TransformerConfig, digits: torch.Tensor | None
    ) -> EncoderPositions:
        places = self.places(section, digits, source=True)
        return penalised_encoder(section.encoder_layers, section.heads, places)

    def decoder_positions(
        self, section: TransformerConfig, digits: torch.Tensor | None
    ) -> DecoderPositions:
        places = self.places(section, digits, source=False)
        return penalised_decoder(section.decoder_layers, section.heads, places)


SCHEME = AbacusAlibi()
