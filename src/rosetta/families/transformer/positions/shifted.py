"""``shifted``: sinusoids, in training at consecutive positions from a
random start (``draws.draw_offsets``)."""

from __future__ import annotations

from rosetta.families.transformer.positions.draws import Drawn, draw_offsets


class Shifted(Drawn):
    draw = staticmethod(draw_offsets)
    exports = frozenset({"ctranslate2"})  # it decodes at 0, 1, 2, ...


SCHEME = Shifted()
