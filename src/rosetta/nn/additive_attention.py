"""Additive (Bahdanau) attention.

``e_ij = v^T tanh(W s_{i-1} + U h_j)``, ``α_ij = softmax_j(e_ij)`` over the real
source positions only, and the context ``c_i = Σ_j α_ij h_j``.

``U h_j`` does not depend on the decoder step, so ``project_keys`` computes it
once per sentence and decoding reuses it at every step.
"""

from __future__ import annotations

import torch
from torch import nn


class AdditiveAttention(nn.Module):
    """Args:
        query_size: width of the decoder state ``s``.
        key_size: width of the encoder states ``h``.
        hidden_size: width of the scoring layer (``W``, ``U``: -> hidden, ``v``).

    Shape:
        query (n, Q), keys (n, S, K) projected by ``project_keys`` to (n, S, A),
        values (n, S, K), mask (n, S) bool, True at real tokens
        -> context (n, K), weights (n, S).
    """

    def __init__(self, query_size: int, key_size: int, hidden_size: int):
        super().__init__()
        self.query_proj = nn.Linear(query_size, hidden_size, bias=False)  # W
        self.key_proj = nn.Linear(key_size, hidden_size, bias=False)  # U
        self.score = nn.Linear(hidden_size, 1, bias=False)  # v

    def project_keys(self, keys: torch.Tensor) -> torch.Tensor:
        """``U h_j`` for every source position: (n, S, K) -> (n, S, A)."""
        return self.key_proj(keys)

    def forward(
        self,
        query: torch.Tensor,
        projected_keys: torch.Tensor,
        values: torch.Tensor,
        mask: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        # e_ij = v^T tanh(W s_{i-1} + U h_j)
        energy = self.score(
            torch.tanh(self.query_proj(query).unsqueeze(1) + projected_keys)
        ).squeeze(-1)  # (n, S)
        energy = energy.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(energy, dim=-1)  # α_ij, zero at padding
        context = torch.bmm(weights.unsqueeze(1), values).squeeze(1)  # Σ_j α_ij h_j
        return context, weights
