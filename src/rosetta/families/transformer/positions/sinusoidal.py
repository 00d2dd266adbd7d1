"""``sinusoidal``: sinusoids of positions 0, 1, 2, ... added to both
embeddings (``TransformerEmbedding``, ``rosetta.nn.positional``)."""

from __future__ import annotations

from rosetta.families.transformer.positions.base import PositionScheme


class Sinusoidal(PositionScheme):
    exports = frozenset({"ctranslate2", "marian", "m2m100"})


SCHEME = Sinusoidal()
