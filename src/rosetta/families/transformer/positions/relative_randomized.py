"""``relative-randomized``: ``relative``, scoring in training the distances
of random sorted positions up to ``max_positions``."""

from __future__ import annotations

from rosetta.families.transformer.positions.draws import Drawn, draw_positions
from rosetta.families.transformer.positions.relative import Relative


class RelativeRandomized(Drawn, Relative):
    draw = staticmethod(draw_positions)


SCHEME = RelativeRandomized()
