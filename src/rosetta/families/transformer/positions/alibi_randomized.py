"""``alibi-randomized``: ``alibi`` at random sorted positions up to
``max_positions`` in training, so that distances beyond the training
lengths are learnt."""

from __future__ import annotations

from rosetta.families.transformer.positions.alibi import Alibi
from rosetta.families.transformer.positions.draws import Drawn, draw_positions


class AlibiRandomized(Drawn, Alibi):
    draw = staticmethod(draw_positions)


SCHEME = AlibiRandomized()
