"""``nope``: sinusoids in the encoder, none in the decoder, which learns
where it is from its causal self-attention alone."""

from __future__ import annotations

from rosetta.families.transformer.positions.base import PositionScheme


class NoPositions(PositionScheme):
    decoder_adds = False


SCHEME = NoPositions()
