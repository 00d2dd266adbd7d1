"""Positions drawn afresh for every sentence pair in training, so that every
position of the table is trained and a sentence longer than any seen in
training finds none new: ``randomized``, ``relative-randomized`` and
``alibi-randomized`` draw sorted positions anywhere in the table
(``draw_positions``), ``shifted`` consecutive ones from a random start
(``draw_offsets``). Outside training the tokens are at ``0, 1, 2, ...``.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from rosetta.families.transformer.positions.base import PositionScheme
from rosetta.interfaces.encoder_decoder import EncoderDecoder

# (rows, length, table size, device) -> (rows, length) positions
Draw = Callable[[int, int, int, torch.device], torch.Tensor]


def _check_fits(length: int, span: int) -> None:
    if length > span:
        raise ValueError(f"sequence of {length} tokens exceeds max_positions ({span})")


def draw_positions(
    rows: int, length: int, span: int, device: torch.device
) -> torch.Tensor:
    """(rows, length): for every row, ``length`` distinct positions drawn
    uniformly from ``0 .. span-1`` and sorted (randomized positions)."""
    _check_fits(length, span)
    chosen = torch.rand(rows, span, device=device).topk(length, dim=1).indices
    return chosen.sort(dim=1).values


def draw_offsets(
    rows: int, length: int, span: int, device: torch.device
) -> torch.Tensor:
    """(rows, length): for every row, ``k, k+1, ..., k+length-1`` with ``k``
    drawn uniformly from ``0 .. span-length`` (shifted positions)."""
    _check_fits(length, span)
    start = torch.randint(0, span - length + 1, (rows, 1), device=device)
    return start + torch.arange(length, device=device)


class Drawn(PositionScheme):
    """A scheme whose training draws its positions with ``draw``."""

    draw: Draw = staticmethod(draw_positions)

    def training_positions(
        self,
        model: EncoderDecoder,
        src: torch.Tensor,
        src_mask: torch.Tensor,
        tgt_in: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``max(S, T)`` positions, the source taking the first ``S`` and the
        target the first ``T``, so that source token ``i`` and target token
        ``i`` keep one position, as they do with ``0, 1, 2, ...``."""
        span = model.encoder.embedding.positions.size(0)
        longest = max(src.size(1), tgt_in.size(1))
        drawn = self.draw(src.size(0), longest, span, src.device)
        return drawn[:, : src.size(1)], drawn[:, : tgt_in.size(1)]
