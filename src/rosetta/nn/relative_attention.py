"""Multi-head attention with relative positions (Transformer-XL).

In ordinary attention a query's score against a key depends on their contents
and, through the positional encodings added to the embeddings, on their
absolute positions. Relative attention adds no positions to the embeddings.
Instead, the score of query ``i`` against key ``j`` depends on their contents
and on their *distance* ``i − j`` only:

    score(i, j) = (q_i + u) · k_j  +  (q_i + v) · (W_R R_{i−j})
                  \\_______________/     \\__________________________/
                   content: what j is     position: how far back j is

``q_i = x_i W_Q`` and ``k_j = m_j W_K``; ``R_d`` is the sinusoid vector of the
distance ``d`` (the absolute encoding's formula, evaluated at ``d``), mapped by
its own learned ``W_R``; ``u`` and ``v`` are learned per-head vectors that
replace the query's position term, which would otherwise depend on ``i``.
Scores are divided by ``√d_k`` and softmaxed over the keys, as usual.

**Memory.** The keys and values may begin with ``M`` vectors kept from an
earlier segment (segment-level recurrence): the ``L`` queries are then at
positions ``M .. M+L−1`` of the key sequence, so the distance of query ``i``
to key ``j`` is ``M + i − j``.

**The shift trick.** The position term needs ``(q_i + v) · W_R R_{M+i−j}`` for
every (query, key) pair: ``L·K`` products of which only ``L + K − 1`` distinct
distances occur. So it is computed once per distance, as the (L, P) matrix of
``(q_i + v) · W_R R_d`` for ``d = M+L−1`` down to ``−(L−1)`` (P = K + L − 1),
and realigned: query ``i``'s row is shifted left by ``L − 1 − i``, which puts
distance ``M + i − j`` in column ``j`` (``relative_shift``).

**Distances beyond training.** ``max_distance`` clamps ``|d|`` to that value:
keys further away than any distance seen in training are encoded as the
furthest seen.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from rosetta.nn.attention import HeadAttention
from rosetta.nn.positional import sinusoids


def relative_shift(scores: torch.Tensor) -> torch.Tensor:
    """(..., L, P) scores against distances ``d_max, d_max − 1, ...`` →
    (..., L, K) scores against keys, ``K = P − L + 1``: entry (i, j) is
    column ``j + L − 1 − i`` of row i.

    One zero column padded on the left and a reinterpretation of the memory
    as (P + 1, L) rows shift every row by one more than the row above."""
    *batch, length, distances = scores.shape
    padded = F.pad(scores, (1, 0)).view(*batch, distances + 1, length)
    shifted = padded[..., 1:, :].reshape(*batch, length, distances)
    return shifted[..., : distances - length + 1]


def distances(queries: int, memory: int, max_distance: int | None) -> torch.Tensor:
    """The distances ``M+L−1, ..., −(L−1)`` of ``relative_shift``'s columns,
    clamped to ``±max_distance``."""
    found = torch.arange(memory + queries - 1, -queries, -1)
    if max_distance is not None:
        found = found.clamp(-max_distance, max_distance)
    return found


class RelativeMultiHeadAttention(HeadAttention):
    """Attention of queries over keys scored by content and relative distance
    (the module docstring has the formula). The queries are the last ``L`` of
    the ``K`` key positions: the keys before them are memory, or the positions
    a decoder has already produced (its key/value cache).

    Called like ``MultiHeadAttention`` for self-attention:
    ``forward(query, key, value, mask)`` with ``key`` and ``value`` the whole
    sequence ``[memory; query]``, or ``project_query`` / ``project_key_value``
    / ``attend`` when the keys are cached.

    Shape:
        query (n, L, d); key, value (n, K, d), K ≥ L; mask broadcastable to
        (n, heads, L, K), True = may attend -> output (n, L, d) and, with
        ``need_weights``, weights (n, heads, L, K).
    """

    def __init__(
        self,
        d_model: int,
        heads: int,
        dropout: float = 0.0,
        max_distance: int | None = None,
    ):
        super().__init__(d_model, heads, dropout, bias=False)
        self.max_distance = max_distance
        self.r_proj = nn.Linear(d_model, d_model, bias=False)  # W_R
        self.out_proj = nn.Linear(d_model, d_model, bias=False)
        self.u = nn.Parameter(torch.zeros(heads, self.d_k))  # content bias
        self.v = nn.Parameter(torch.zeros(heads, self.d_k))  # position bias

    def attend(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        mask: torch.Tensor | None = None,
        need_weights: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Attention of projected queries (n, h, L, d_k), the last L of the
        projected keys and values (n, h, K, d_k), then concat and ``W^O``."""
        n, _, length, _ = q.shape
        remembered = k.size(2) - length
        found = distances(length, remembered, self.max_distance).to(q.device)
        encoded = sinusoids(found, self.d_model).to(q.device, q.dtype)
        r = self.r_proj(encoded).view(-1, self.heads, self.d_k).transpose(0, 1)
        content = (q + self.u[:, None, :]) @ k.transpose(-2, -1)  # (n, h, L, K)
        position = relative_shift((q + self.v[:, None, :]) @ r.transpose(-2, -1))
        scores = (content + position) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        if self.training and self.dropout > 0.0:
            weights = F.dropout(weights, p=self.dropout)
        out = (weights.to(v.dtype) @ v).transpose(1, 2).reshape(n, length, self.d_model)
        return self.out_proj(out), weights if need_weights else None
