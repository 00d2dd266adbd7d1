"""Glancing training: let the decoder see part of the reference, as much as
it still gets wrong.

A non-autoregressive decoder predicts every target token from the source
alone, which is hard early in training: the tokens depend on each other
and the decoder cannot see any of them. Glancing training makes it two
passes per batch:

1. **Predict.** The model decodes the batch as it would at test time (no
   gradient) and counts its mistakes ``d`` in each sentence: positions
   whose most likely token differs from the reference token at that
   position.
2. **Glance.** ``N = ⌊ρ · d⌋`` positions chosen uniformly at random take
   the reference token's embedding as their decoder input instead of the
   copied source (``Glance``); ``ρ`` is ``model.glance_ratio``, annealed
   towards ``glance_ratio_end``. The second pass learns to predict the
   other tokens given those, with the usual loss.

A sentence the model already gets right reveals nothing, so the task
becomes harder as the model improves, until it is the test-time one.

Which reference token a position stands for depends on the length model:
with fertilities the reference has exactly one token per decoder position;
with CTC it is the most likely alignment's symbol there, blanks included
(``rosetta.families.nat.ctc.best_alignment``). The fertility model's loss
counts only the positions not revealed; CTC's sums over alignments of the
whole target, so it counts every position.
"""

from __future__ import annotations

import torch

from rosetta.families.nat.model import Glance


def glance_counts(
    predicted: torch.Tensor, reference: torch.Tensor, mask: torch.Tensor, ratio: float
) -> torch.Tensor:
    """``⌊ratio · mistakes⌋`` per row (n,) of predicted and reference symbols
    (n, T) at the real positions ``mask`` (n, T)."""
    mistakes = ((predicted != reference) & mask).sum(1)
    return (mistakes.double() * ratio).floor().long()


def choose_positions(
    mask: torch.Tensor, counts: torch.Tensor, generator: torch.Generator | None = None
) -> torch.Tensor:
    """``counts[i]`` distinct real positions of each row, uniformly at random:
    (n, T) True where chosen. A count above a row's length takes all of it."""
    keys = torch.rand(mask.shape, generator=generator, device=mask.device)
    keys = keys.masked_fill(~mask, 2.0)  # padding sorts last, never chosen
    ranks = keys.argsort(1).argsort(1)  # each position's place in its row's order
    return (ranks < counts[:, None]) & mask


def glance(
    predicted: torch.Tensor,
    reference: torch.Tensor,
    mask: torch.Tensor,
    ratio: float,
    generator: torch.Generator | None = None,
) -> Glance:
    """What the second pass sees (module docstring): the revealed positions
    and the reference symbols to put there."""
    counts = glance_counts(predicted, reference, mask, ratio)
    return Glance(choose_positions(mask, counts, generator), reference)
