"""Attention with linear biases: positions as distance penalties.

No position vectors are added to the embeddings. Instead, every head ``h``
lowers the score of query ``i`` against key ``j`` in proportion to their
distance:

    score_h(i, j) = q_i · k_j / √d_k  −  m_h · |d(i, j)|

so a head with a large slope ``m_h`` looks at its nearest keys and one with
a slope near 0 at all of them, by content. The penalty is a straight line in
the distance: a key twice as far as any seen in training is penalised twice
as much, never by a value the model has not learned to read. The slopes
start at the geometric series ``2^(−8/H), 2^(−16/H), ..., 2^(−8)`` of ``H``
heads and are learned, one per head and layer. In the cross-attention each
half of the heads starts its own series at 1 (``1, 2^(−8/H'), ...`` for
``H'`` heads in the half): a head there must be able to single out one
source word, and a slope learned up from a fraction of 1 gets there too
slowly.

The distance depends on the attention:

- encoder self-attention: ``d = i − j``, both sides;
- decoder self-attention: ``d = i − j`` over the tokens produced so far;
- cross-attention: target position ``i`` against source position ``j``. The
  first half of the heads count source positions from the first word
  (``d = i − j``), the second half from the last word (``d = i − j'`` with
  ``j' = S − 2 − j`` for ``S`` source tokens, the closing ``<eos>`` being one
  past the last word). Target word ``i`` can so be placed at source word
  ``i`` from either end: the alignment of copying a sentence and that of
  reversing it are both at distance 0.

With positions drawn in training (``alibi-randomized``), token ``i`` sits at
``p_i`` instead of ``i`` and every distance is that of the positions:
``p_i − p_j`` (``placed_self_distances``); the cross-attention's second half
counts the source from its last word by giving word ``j`` the position of
word ``S − 2 − j`` (``placed_cross_distances``). With ``p_i = i`` both are
the distances above.

With positions inside numbers (``abacus-alibi``), the encoder's and the
cross-attention's distances are those of the digits' places in their
numbers (``place_distances``): a sum digit is near the two digits it adds
however long the numbers are, and a digit of a long number 60 places away
is penalised, not scored by a comparison training never made.
"""

from __future__ import annotations

import torch
from torch import nn


def geometric_slopes(heads: int, first: int = 1) -> torch.Tensor:
    """``2^(−8k/H)`` for ``k = first .. first + H − 1``: (heads,)."""
    return torch.pow(2.0, -8.0 * torch.arange(first, first + heads) / heads)


class LinearBiases(nn.Module):
    """Learned slopes of one kind of attention: one per head and layer;
    ``both_ends`` for the cross-attention, whose two halves of the heads
    count the source from either end (``cross_distances``).

    ``bias(layer, distance, allowed)`` turns distances (..., heads or 1, L, K)
    into the additive mask of that layer's attention: ``−m_h·|d|`` where
    ``allowed`` (bool, broadcastable) and ``−inf`` elsewhere."""

    def __init__(self, layers: int, heads: int, both_ends: bool = False):
        super().__init__()
        slopes = geometric_slopes(heads)
        if both_ends:  # each half of the heads gets the whole series, from 1
            backward = heads // 2
            slopes = torch.cat(
                [geometric_slopes(heads - backward, 0), geometric_slopes(backward, 0)]
            )
        # log-slopes: every update scales a slope, whatever its size
        self.log_slopes = nn.Parameter(slopes.log().repeat(layers, 1))

    def bias(
        self, layer: int, distance: torch.Tensor, allowed: torch.Tensor
    ) -> torch.Tensor:
        slopes = self.log_slopes[layer].exp()[:, None, None]  # (heads, 1, 1)
        penalty = -slopes * distance.abs().to(slopes.dtype)
        return torch.where(allowed, penalty, float("-inf"))


def self_distances(queries: int, keys: int, device: torch.device) -> torch.Tensor:
    """(queries, keys): ``i − j`` for the last ``queries`` of ``keys`` positions
    (the queries follow ``keys − queries`` cached ones)."""
    rows = torch.arange(keys - queries, keys, device=device)
    return rows[:, None] - torch.arange(keys, device=device)[None, :]


def cross_distances(
    first: int, queries: int, src_mask: torch.Tensor, heads: int
) -> torch.Tensor:
    """(m, heads, queries, S): target positions ``first ..`` against the
    source positions of ``src_mask`` (m, S), True for real tokens, counted
    from the first word by the first ``heads − heads//2`` heads and from the
    last word by the rest (module docstring)."""
    device = src_mask.device
    rows = torch.arange(first, first + queries, device=device)[None, :, None]
    columns = torch.arange(src_mask.size(-1), device=device)[None, None, :]
    lengths = src_mask.sum(-1)[:, None, None]  # (m, 1, 1), <eos> included
    from_start = (rows - columns).expand(src_mask.size(0), -1, -1)
    from_end = rows - (lengths - 2 - columns)
    backward = heads // 2
    return torch.cat(
        [
            from_start[:, None].expand(-1, heads - backward, -1, -1),
            from_end[:, None].expand(-1, backward, -1, -1),
        ],
        dim=1,
    )


def placed_self_distances(positions: torch.Tensor) -> torch.Tensor:
    """(n, L) positions -> (n, 1, L, L): ``p_i − p_j`` (module docstring)."""
    return (positions[:, :, None] - positions[:, None, :])[:, None]


def placed_cross_distances(
    target: torch.Tensor, source: torch.Tensor, src_mask: torch.Tensor, heads: int
) -> torch.Tensor:
    """(n, heads, T, S): target positions (n, T) against source positions
    (n, S) of ``src_mask`` (n, S), the first ``heads − heads//2`` heads from
    the first word, the rest from the last (word ``j`` at the position of
    word ``S − 2 − j``; past the first word, one apart)."""
    lengths = src_mask.sum(-1, keepdim=True)  # (n, 1), <eos> included
    mirror = lengths - 2 - torch.arange(source.size(1), device=source.device)
    mirrored = source.gather(1, mirror.clamp(min=0)) + mirror.clamp(max=0)
    from_start = target[:, :, None] - source[:, None, :]
    from_end = target[:, :, None] - mirrored[:, None, :]
    backward = heads // 2
    return torch.cat(
        [
            from_start[:, None].expand(-1, heads - backward, -1, -1),
            from_end[:, None].expand(-1, backward, -1, -1),
        ],
        dim=1,
    )


def place_distances(query: torch.Tensor, key: torch.Tensor) -> torch.Tensor:
    """(n, Lq) and (n, Lk) places inside numbers -> (n, 1, Lq, Lk): ``p_i − p_j``
    between two digits, 0 where either is not a digit (place 0), so that
    digits are penalised by how far apart their places are and any token
    may look at the signs and the end by content (``abacus-alibi``). One
    offset added to every digit's place leaves every distance as it was."""
    digits = (query > 0)[:, :, None] & (key > 0)[:, None, :]
    return ((query[:, :, None] - key[:, None, :]) * digits)[:, None]
