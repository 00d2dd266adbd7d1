"""``abacus``: sinusoids of a digit's place in its number as written
(1, 2, 3, ...), 0 for every other token (``numbers``)."""

from __future__ import annotations

from rosetta.families.transformer.positions.numbers import DigitPlaces


class Abacus(DigitPlaces):
    pass


SCHEME = Abacus()
