"""The distribution every search scores with, computed independently of
``rosetta.search``: a softmax over every token but ``<bos>``, which never
comes next (its row may repeat another's in an imported model)."""

from __future__ import annotations

import torch

from rosetta.data.vocab import BOS_ID


def next_token_log_probs(logits: torch.Tensor) -> torch.Tensor:
    """Log-probabilities (..., V) of ``logits`` with ``<bos>`` left out of
    the softmax (its own entry -inf)."""
    logits = logits.clone()
    logits[..., BOS_ID] = float("-inf")
    return torch.log_softmax(logits, dim=-1)
