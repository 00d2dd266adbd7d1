"""``strided``: token ``i`` at position ``2i``, on both sides."""

from __future__ import annotations

import torch

from rosetta.families.transformer.positions.base import (
    DecoderPositions,
    EncoderPositions,
    PositionScheme,
)
from rosetta.families.transformer.state import TransformerState


class StridedEncoder(EncoderPositions):
    def place(
        self, tokens: torch.Tensor, real: torch.Tensor, given: torch.Tensor | None
    ) -> torch.Tensor:
        if given is not None:
            return given
        return (2 * torch.arange(tokens.size(1), device=tokens.device)).expand_as(
            tokens
        )


class StridedDecoder(DecoderPositions):
    steps_by_count = False  # the packed step would place a step at its count

    def place(
        self, tokens: torch.Tensor, state: TransformerState, given: torch.Tensor | None
    ) -> torch.Tensor:
        if given is not None:
            return given
        first = state.length
        count = torch.arange(first, first + tokens.size(1), device=tokens.device)
        return (2 * count).expand_as(tokens)


class Strided(PositionScheme):
    def encoder_positions(self, section, digits):
        return StridedEncoder()

    def decoder_positions(self, section, digits):
        return StridedDecoder()


SCHEME = Strided()
