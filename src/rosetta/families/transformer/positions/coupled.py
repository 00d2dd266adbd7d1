"""``coupled``: in the source, a digit's place counted from its number's
end; in the output, its place as written (``numbers``)."""

from __future__ import annotations

from rosetta.families.transformer.positions.numbers import DigitPlaces


class Coupled(DigitPlaces):
    from_end = True


SCHEME = Coupled()
