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

**Positions placed anywhere.** Where training places tokens at drawn
positions ``p_0 < p_1 < …`` (``relative-randomized``), the distance of query
``i`` to key ``j`` is ``p_i − p_j`` and no shift realigns a row. The position
term is then computed from the positions themselves: ``R_d`` holds
``sin(d·ω_k)`` and ``cos(d·ω_k)``, and with ``g_i = W_Rᵀ (q_i + v)``

    g_i · R_{p_i−p_j} = Σ_k g_i^sin,k sin(ω_k(p_i−p_j)) + g_i^cos,k cos(ω_k(p_i−p_j))
                      = a_i · [cos(ω p_j)] + b_i · [sin(ω p_j)]

with ``a_i = g^sin sin(ω p_i) + g^cos cos(ω p_i)`` and
``b_i = g^cos sin(ω p_i) − g^sin cos(ω p_i)`` (the angle-difference
identities): one product of (L, d) by (d, K), exact for any positions
(``placed_position_scores``).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from rosetta.nn.attention import HeadAttention
from rosetta.nn.positional import scales, sinusoids


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


def placed_position_scores(
    queries: torch.Tensor,
    r_weight: torch.Tensor,
    query_positions: torch.Tensor,
    key_positions: torch.Tensor,
) -> torch.Tensor:
    """``(q_i + v) · W_R R_{p_i − p_j}`` for every query and key (module
    docstring, "Positions placed anywhere").

    Args:
        queries: (n, h, L, d_k), the queries plus the position bias ``v``.
        r_weight: ``W_R``, (d, d), as ``nn.Linear`` stores it.
        query_positions: (n, L); key_positions: (n, K).

    Returns:
        (n, h, L, K) position scores.
    """
    heads, d_k = queries.shape[1], queries.shape[3]
    d_model = r_weight.size(1)
    g = torch.einsum(
        "nhld,hde->nhle", queries, r_weight.view(heads, d_k, d_model).to(queries)
    )
    g = F.pad(g, (0, d_model % 2))  # an odd width has one cosine fewer
    g_sin, g_cos = g[..., 0::2], g[..., 1::2]
    divisors = scales(d_model).to(query_positions.device)

    def sin_cos(positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        angle = positions.to(torch.float64)[:, None, :, None] / divisors
        return angle.sin().to(queries.dtype), angle.cos().to(queries.dtype)

    sin_q, cos_q = sin_cos(query_positions)  # (n, 1, L, ⌈d/2⌉)
    sin_k, cos_k = sin_cos(key_positions)  # (n, 1, K, ⌈d/2⌉)
    left = torch.cat([g_sin * sin_q + g_cos * cos_q, g_cos * sin_q - g_sin * cos_q], -1)
    right = torch.cat([cos_k, sin_k], -1)
    return left @ right.transpose(-2, -1)


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
        positions: torch.Tensor | None = None,
        distance: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Attention of projected queries (n, h, L, d_k), the last L of the
        projected keys and values (n, h, K, d_k), then concat and ``W^O``;
        ``positions`` (n, K): the keys' positions where they are not
        ``0 .. K−1`` (the queries hold the last L); or ``distance`` (K,),
        that of one query (L = 1) from each key, wherever it stands among
        them (a decoding step over a cache with room to spare)."""
        n, _, length, _ = q.shape
        content = (q + self.u[:, None, :]) @ k.transpose(-2, -1)  # (n, h, L, K)
        if distance is not None:
            if self.max_distance is not None:
                distance = distance.clamp(-self.max_distance, self.max_distance)
            position = self.distance_scores(q + self.v[:, None, :], distance)
        elif positions is None:
            position = self.position_scores(q + self.v[:, None, :], k.size(2))
        elif self.max_distance is not None:
            raise ValueError("max_distance clamps distances of positions 0, 1, 2, ...")
        else:
            position = placed_position_scores(
                q + self.v[:, None, :],
                self.r_proj.weight,
                positions[:, -length:],
                positions,
            )
        scores = (content + position) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        if self.training and self.dropout > 0.0:
            weights = F.dropout(weights, p=self.dropout)
        out = (weights.to(v.dtype) @ v).transpose(1, 2).reshape(n, length, self.d_model)
        return self.out_proj(out), weights if need_weights else None

    def position_scores(self, queries: torch.Tensor, keys: int) -> torch.Tensor:
        """(n, h, L, K) position terms of queries (plus ``v``) that are the last
        L of ``keys`` positions ``0 .. K−1``: by distance, then shifted."""
        length = queries.size(2)
        found = distances(length, keys - length, self.max_distance)
        return relative_shift(self.distance_scores(queries, found))

    def distance_scores(
        self, queries: torch.Tensor, distance: torch.Tensor
    ) -> torch.Tensor:
        """(n, h, L, P): each query (plus ``v``) against ``W_R R_d`` for each
        of the P distances ``distance``."""
        encoded = sinusoids(distance, self.d_model).to(queries.device, queries.dtype)
        r = self.r_proj(encoded).view(-1, self.heads, self.d_k).transpose(0, 1)
        return queries @ r.transpose(-2, -1)
