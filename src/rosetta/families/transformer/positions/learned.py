"""``learned``: a trained vector per position, one table per side, added
to the embeddings (mBART's)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn

from rosetta.families.transformer.positions.base import PositionScheme

if TYPE_CHECKING:
    from rosetta.families.transformer.config import TransformerConfig


class Learned(PositionScheme):
    own_tables = True
    exports = frozenset({"mbart"})
    ctranslate2_refusal = "this export writes sinusoid tables, not learned ones"

    def own_table(self, section: TransformerConfig) -> nn.Parameter:
        """Initialised as mBART's."""
        table = nn.Parameter(torch.empty(section.max_positions, section.d_model))
        nn.init.normal_(table, std=0.02)
        return table


SCHEME = Learned()
