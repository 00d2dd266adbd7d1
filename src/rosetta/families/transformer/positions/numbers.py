"""Positions inside numbers: what ``abacus``, ``coupled`` and ``abacus-alibi``
share (``model.positions``).

Sinusoidal positions count tokens from the start of the sequence, so the
tens digit of a number sits at a different position in every addition, and
a model that learnt to pair digits by position fails on longer numbers.
These schemes give a digit the sinusoid of its place in its *number*
instead, and every other token position 0:

- ``abacus``: a digit's place counted from its number's first digit as
  written, ``1, 2, 3, …``. With numbers written least significant digit
  first (``addition-lsb``) that is the significance plus one, the same in
  both operands and in the sum, so a sum digit's query meets the keys of
  the two digits it adds at its own position.
- ``coupled``: in the source, a digit's place counted from its number's
  last digit (``4 7 + 8 5`` → ``2 1 0 2 1``): the significance plus one
  when numbers are written most significant first. The output is numbered
  as written, so with the sum written least significant first
  (``addition-reversed``) every digit of one significance, in both
  operands and the sum, shares one position.

In training one offset ``k``, drawn per sentence pair from ``0 …
number_offset``, is added to every digit's position on both sides, so the
table's positions up to ``k`` + the longest training number are all
trained: a test number longer than any seen in training then meets
positions the model knows. Decoding adds none. The positions of a
sequence, and of each decoded token from the one before it, follow the same
rule (``number_positions``), so decoding step by step gives what teacher
forcing gives.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch
from torch import nn

from rosetta.families.transformer.positions.base import (
    DecoderPositions,
    EncoderPositions,
    PositionScheme,
)
from rosetta.families.transformer.state import TransformerState
from rosetta.interfaces.encoder_decoder import EncoderDecoder

if TYPE_CHECKING:
    from rosetta.families.transformer.config import TransformerConfig

DIGITS = frozenset("0123456789")


def digit_mask(pieces: Sequence[str]) -> torch.Tensor:
    """(V,) bool: which of a vocabulary's tokens are the digits 0-9."""
    return torch.tensor([piece in DIGITS for piece in pieces], dtype=torch.bool)


def number_positions(
    is_digit: torch.Tensor,
    start: torch.Tensor | None = None,
    from_end: bool = False,
) -> torch.Tensor:
    """(n, L) bool digits -> (n, L) positions: a digit's place in its run of
    digits (1, 2, …), 0 for any other token.

    Args:
        start: (n,) the position of the token before the first, whose run a
            leading digit continues (decoding step by step).
        from_end: count each run from its last digit (``coupled``).
    """
    if from_end:
        return number_positions(is_digit.flip(1)).flip(1)
    digits = is_digit.long()
    count = digits.cumsum(1)
    # the count at the latest non-digit so far: where the current run began
    began = (count * (1 - digits)).cummax(1).values
    positions = (count - began) * digits
    if start is not None:
        first_run = (1 - digits).cumsum(1) == 0
        positions = positions + start[:, None] * (first_run & is_digit)
    return positions


class NumberPositions(nn.Module):
    """The positions of one side's tokens (module docstring); ``is_digit``
    (V,) marks the vocabulary's digits, derived from it at every build
    (not a weight: it is not saved); ``largest_offset``: the largest shift
    training draws."""

    def __init__(
        self, is_digit: torch.Tensor, from_end: bool = False, largest_offset: int = 0
    ):
        super().__init__()
        self.register_buffer("is_digit", is_digit, persistent=False)
        self.from_end = from_end
        self.largest_offset = largest_offset

    def forward(
        self,
        tokens: torch.Tensor,
        start: torch.Tensor | None = None,
        real: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """(n, L) ids -> positions; ``real`` (n, L) marks the tokens that
        are not padding (padding is never a digit)."""
        is_digit = self.is_digit[tokens]
        if real is not None:
            is_digit = is_digit & real
        return number_positions(is_digit, start, self.from_end)


def shifted(positions: torch.Tensor, offset: torch.Tensor) -> torch.Tensor:
    """Digit positions (n, L) moved by each row's ``offset`` (n, 1); the
    other tokens stay at 0."""
    return positions + offset * (positions > 0)


class PlacedEncoder(EncoderPositions):
    """The encoder's part of ``abacus`` and ``coupled``: its tokens' places."""

    def __init__(self, places: NumberPositions):
        super().__init__()
        self.numbers = places

    def place(
        self, tokens: torch.Tensor, real: torch.Tensor, given: torch.Tensor | None
    ) -> torch.Tensor | None:
        return self.numbers(tokens, real=real) if given is None else given

    def kept(self, tokens: torch.Tensor, real: torch.Tensor) -> torch.Tensor | None:
        return self.numbers(tokens, real=real)


class PlacedDecoder(DecoderPositions):
    """The decoder's part: each token's place from the one before it
    (``state.carried``), so that decoding step by step gives what teacher
    forcing gives."""

    steps_by_count = False

    def __init__(self, places: NumberPositions):
        super().__init__()
        self.numbers = places

    def place(
        self, tokens: torch.Tensor, state: TransformerState, given: torch.Tensor | None
    ) -> torch.Tensor | None:
        return self.numbers(tokens, state.carried) if given is None else given

    def carried(self, positions: torch.Tensor | None) -> torch.Tensor | None:
        return positions[:, -1]  # type: ignore[index]


class DigitPlaces(PositionScheme):
    """What ``abacus``, ``coupled`` and ``abacus-alibi`` share: digits at
    their places (``from_end``: the source's counted from the number's end),
    one offset drawn per pair in training, a learned table of places with
    ``number_table: learned``."""

    needs_digits = True
    from_end = False
    ctranslate2_refusal = (
        "CTranslate2 counts positions from the start, not inside numbers"
    )

    def shared_table(self, section: TransformerConfig) -> nn.Parameter | None:
        """The scale of the token embeddings as added (std 1 per component)."""
        if section.number_table != "learned":
            return None
        return nn.Parameter(torch.randn(section.max_positions, section.d_model))

    def places(
        self, section: TransformerConfig, digits: torch.Tensor | None, source: bool
    ) -> NumberPositions:
        """One side's places; ``digits`` (V,) its digits (the builder checks
        that there are)."""
        assert digits is not None, "the builder gives the digits"
        return NumberPositions(digits, source and self.from_end, section.number_offset)

    def encoder_positions(
        self, section: TransformerConfig, digits: torch.Tensor | None
    ) -> EncoderPositions:
        return PlacedEncoder(self.places(section, digits, source=True))

    def decoder_positions(
        self, section: TransformerConfig, digits: torch.Tensor | None
    ) -> DecoderPositions:
        return PlacedDecoder(self.places(section, digits, source=False))

    def training_positions(
        self,
        model: EncoderDecoder,
        src: torch.Tensor,
        src_mask: torch.Tensor,
        tgt_in: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Every digit of a pair, source and target, moved by one offset
        drawn from ``0 .. number_offset``."""
        rows = (src.size(0), 1)
        places = model.encoder.positions.numbers
        offset = torch.randint(0, places.largest_offset + 1, rows, device=src.device)
        source = places(src, real=src_mask)
        target = model.decoder.positions.numbers(tgt_in)
        return shifted(source, offset), shifted(target, offset)
