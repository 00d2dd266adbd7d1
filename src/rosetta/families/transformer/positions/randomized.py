"""``randomized``: sinusoids, at random sorted positions up to
``max_positions`` in training (``draws.draw_positions``)."""

from __future__ import annotations

from rosetta.families.transformer.positions.draws import Drawn, draw_positions


class Randomized(Drawn):
    draw = staticmethod(draw_positions)
    exports = frozenset({"ctranslate2"})  # it decodes at 0, 1, 2, ...


SCHEME = Randomized()
